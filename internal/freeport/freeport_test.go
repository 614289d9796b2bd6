package freeport

import (
	"net"
	"strconv"
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
