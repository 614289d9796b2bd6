// Package freeport picks loopback ports for servers that are killed and
// started again on the same ports (the cluster and torture runs). It picks
// them below the kernel's ephemeral range: a port the kernel hands out
// (a listen on port 0, or the local end of any outgoing connection) could
// be taken by another process while its server is down, and the restart
// would then find it in use. A port picked is also reserved for the rest
// of the process (reserve), so that no other Pick, in this process or
// another, hands it out while its server is down.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// low is the lowest port picked: above the well-known and most registered
// servers' ports.
const low = 20000

// candidate is the next port to try in [lo, hi); tests make it repeat.
var candidate = func(lo, hi int) int { return lo + rand.IntN(hi-lo) }

// mu serialises picks, so that two picks of one process never reserve one
// port twice.
var mu sync.Mutex

// Pick returns a loopback TCP port below the ephemeral range that no one
// listens on now and no other pick has reserved.
func Pick() (int, error) {
	high := ephemeralStart()
	if high <= low {
		return 0, fmt.Errorf("freeport: the ephemeral range starts at %d, leaving no ports from %d", high, low)
	}
	mu.Lock()
	defer mu.Unlock()
	var err error
	for range 100 {
		port := candidate(low, high)
		if !reserve(port) {
			err = fmt.Errorf("port %d is reserved by another pick", port)
			continue
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			ln.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("freeport: no free port in 100 tries: %w", err)
}

// ephemeralStart is the first port of the kernel's ephemeral range, or
// Linux's default when it cannot be read.
func ephemeralStart() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			if n, err := strconv.Atoi(fields[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}
