package jsstore

import (
	"context"
	"fmt"
	"testing"
)

// TestGetManyReadsAsGet: a multi read of more keys than one request takes
// gives each live key's value and revision as get does, and nothing for
// keys never written or deleted.
func TestGetManyReadsAsGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	const n = 1500
	var keys []string
	for lo := 0; lo < n; lo += 500 {
		tx := &txn{}
		for i := lo; i < lo+500; i++ {
			key := fmt.Sprint("t.k", i)
			keys = append(keys, key)
			tx.putBlind(key, fmt.Append(nil, "v", i), 0)
		}
		if err := s.commit(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	del := &txn{}
	for i := 0; i < n; i += 7 {
		del.delBlind(keys[i])
	}
	if err := s.commit(ctx, del); err != nil {
		t.Fatal(err)
	}
	asked := append(keys, "t.never", "t.never.either")
	got, err := s.getMany(ctx, append(asked, keys[:10]...)) // a key twice is read once
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, key := range asked {
		value, rev, ok, err := s.get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		e, found := got[key]
		if found != ok || (ok && (string(e.Value) != string(value) || e.Rev != rev || e.Key != key)) {
			t.Fatalf("%s: multi read %+v (found %v); get %q at %d (ok %v)", key, e, found, value, rev, ok)
		}
		if ok {
			live++
		}
	}
	if want := n - (n+6)/7; live != want || len(got) != want {
		t.Fatalf("%d keys read live, %d in the multi read; want %d", live, len(got), want)
	}
	if got, err := s.getMany(ctx, []string{"t.never"}); err != nil || len(got) != 0 {
		t.Fatalf("a multi read of nothing = %v, %v", got, err)
	}
}
