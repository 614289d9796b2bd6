package freeport

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPickIsFreeAndOutsideTheEphemeralRange checks a picked port can be
// listened on, and is one the kernel never hands out by itself.
func TestPickIsFreeAndOutsideTheEphemeralRange(t *testing.T) {
	high := ephemeralStart()
	for range 20 {
		port, err := Pick()
		if err != nil {
			t.Fatal(err)
		}
		if port < low || port >= high {
			t.Fatalf("picked %d, want one in [%d, %d)", port, low, high)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("picked %d, which cannot be listened on: %v", port, err)
		}
		ln.Close()
	}
}

// repeat makes every pick try ports in the order given, again and again.
func repeat(t *testing.T, ports ...int) {
	i := 0
	t.Cleanup(func(old func(int, int) int) func() { return func() { candidate = old } }(candidate))
	candidate = func(int, int) int {
		p := ports[i%len(ports)]
		i++
		return p
	}
}

// firstThen makes the next pick try port first, then ports at random as
// usual; it returns how many it tried so far.
func firstThen(t *testing.T, port int) func() int {
	old, tried := candidate, 0
	t.Cleanup(func() { candidate = old })
	candidate = func(lo, hi int) int {
		tried++
		if tried == 1 {
			return port
		}
		return old(lo, hi)
	}
	return func() int { return tried }
}

// TestPickNeverGivesAPortTwice: a port picked is not picked again, by this
// process or by another while the first lives, though no server listens on
// it (its server is down between a kill and a restart). The ports are
// picked at random, as in use: fixed ones would be taken by the test's
// earlier runs in the same process (-count), or by other processes.
func TestPickNeverGivesAPortTwice(t *testing.T) {
	if os.Getenv("FREEPORT_HOLD") != "" {
		holdPorts(t)
		return
	}
	a, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	tried := firstThen(t, a)
	b, err := Pick()
	if err != nil || b == a {
		t.Fatalf("second pick %d, %v; want a port other than %d, picked before", b, err, a)
	}
	if tried() < 2 {
		t.Fatalf("the second pick tried %d port(s): it never met %d again", tried(), a)
	}

	// Another process picks from the same ports and holds what it picked.
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPickNeverGivesAPortTwice$")
	cmd.Env = append(os.Environ(), "FREEPORT_HOLD=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the other process said nothing: %v", err)
	}
	var c int
	if _, err := fmt.Sscanf(line, "held %d", &c); err != nil || c == a || c == b {
		t.Fatalf("the other process: %q, want it to hold a port other than %d and %d, this process's", strings.TrimSpace(line), a, b)
	}
	repeat(t, c, a, b)
	if p, err := Pick(); err == nil {
		t.Fatalf("picked %d, which this process or the other holds", p)
	}
}

// holdPorts is TestPickNeverGivesAPortTwice's other process: it picks one
// port, says which, and holds it until its stdin closes.
func holdPorts(t *testing.T) {
	p, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("held", p)
	_, _ = io.Copy(io.Discard, os.Stdin)
}
