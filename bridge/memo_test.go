package bridge

import (
	"strconv"
	"testing"
)

func TestMemoKeepsTwoGenerations(t *testing.T) {
	t.Parallel()
	m := NewMemo[int](2)
	m.Put("a", 1)
	m.Put("b", 2)
	m.Put("c", 3) // a, b become the previous generation
	if v, ok := m.Get("a"); !ok || v != 1 {
		t.Fatalf("a = %d, %v; want 1 from the previous generation", v, ok)
	}
	// Reading a brought it into the current one (c, a); d starts a new one.
	m.Put("d", 4)
	if _, ok := m.Get("b"); ok {
		t.Fatal("b is two generations old and still kept")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := m.Get(k); !ok {
			t.Fatalf("%s is gone; it was read or written within two generations", k)
		}
	}
	m.Delete("a")
	if _, ok := m.Get("a"); ok {
		t.Fatal("a deleted but still there")
	}
}

func TestMemoBoundsItsSize(t *testing.T) {
	t.Parallel()
	m := NewMemo[int](100)
	for i := range 10000 {
		m.Put(strconv.Itoa(i), i)
	}
	if n := len(m.cur) + len(m.prev); n > 200 {
		t.Fatalf("memo holds %d keys; want at most 200", n)
	}
	if v, ok := m.Get("9999"); !ok || v != 9999 {
		t.Fatalf("the last key written is gone: %d, %v", v, ok)
	}
}
