package slack

import (
	"testing"
)

func TestChoiceCacheKeepsRecentAndBoundsSize(t *testing.T) {
	t.Parallel()
	c := newChoiceCache(2)
	c.put("a", []string{"A"})
	c.put("b", []string{"B"})
	c.put("c", []string{"C"}) // a and b move to the previous generation
	if v, ok := c.get("a"); !ok || v[0] != "A" {
		t.Fatalf("a = %v, %v", v, ok)
	}
	c.put("d", []string{"D"}) // a was used again, so it survives; b is dropped
	c.put("e", []string{"E"})
	for key, want := range map[string]bool{"a": true, "b": false, "d": true, "e": true} {
		if _, ok := c.get(key); ok != want {
			t.Errorf("%s cached = %v, want %v", key, ok, want)
		}
	}
	if n := len(c.cur) + len(c.prev); n > 4 {
		t.Fatalf("%d entries kept, want at most 2 generations of 2", n)
	}
	// A question without choices is remembered as such.
	c.put("free", nil)
	if v, ok := c.get("free"); !ok || v != nil {
		t.Fatalf("free = %v, %v", v, ok)
	}
}
