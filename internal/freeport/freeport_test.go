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

// TestPickNeverGivesAPortTwice: a port picked is not picked again, by this
// process or by another while the first lives, though no server listens on
// it (its server is down between a kill and a restart).
func TestPickNeverGivesAPortTwice(t *testing.T) {
	if os.Getenv("FREEPORT_HOLD") != "" {
		holdPorts(t)
		return
	}
	a, b, c := low+101, low+202, low+303
	repeat(t, a, b, c)
	first, err := Pick()
	if err != nil || first != a {
		t.Fatalf("first pick %d, %v; want %d", first, err, a)
	}
	if again, err := Pick(); err != nil || again != b {
		t.Fatalf("second pick %d, %v; want %d, the next free port, not %d again", again, err, b, a)
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
	if got, want := strings.TrimSpace(line), fmt.Sprint("held ", c); got != want {
		t.Fatalf("the other process: %q, want %q (%d and %d are this process's)", got, want, a, b)
	}
	repeat(t, c, a, b)
	if p, err := Pick(); err == nil {
		t.Fatalf("picked %d, which this process or the other holds", p)
	}
}

// holdPorts is TestPickNeverGivesAPortTwice's other process: it picks one
// port from the same three, says which, and holds it until its stdin
// closes.
func holdPorts(t *testing.T) {
	repeat(t, low+101, low+202, low+303)
	p, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("held", p)
	_, _ = io.Copy(io.Discard, os.Stdin)
}
