// Package freeport picks loopback ports for servers that are killed and
// started again on the same ports (the cluster and torture runs). It picks
// them below the kernel's ephemeral range: a port the kernel hands out
// (a listen on port 0, or the local end of any outgoing connection) could
// be taken by another process while its server is down, and the restart
// would then find it in use.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// low is the lowest port picked: above the well-known and most registered
// servers' ports.
const low = 20000

// Pick returns a loopback TCP port below the ephemeral range that no one
// listens on now.
func Pick() (int, error) {
	high := ephemeralStart()
	if high <= low {
		return 0, fmt.Errorf("freeport: the ephemeral range starts at %d, leaving no ports from %d", high, low)
	}
	var err error
	for range 100 {
		port := low + rand.IntN(high-low)
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
