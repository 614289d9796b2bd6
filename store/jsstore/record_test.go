package jsstore

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startNATS starts an in-process JetStream server for one test.
func startNATS(t testing.TB) *nats.Conn {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10e9) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// openTest opens a store on a new in-process server.
func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), startNATS(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCommitIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	first := &txn{}
	first.put("a", 0, []byte("a1"))
	first.put("b", 0, []byte("b1"))
	if err := s.commit(ctx, first); err != nil {
		t.Fatalf("first commit: %v", err)
	}
	_, revA, _, _ := s.get(ctx, "a")
	_, revB, _, _ := s.get(ctx, "b")

	// b is stale in this one: neither key may change.
	stale := &txn{}
	stale.put("a", revA, []byte("a2"))
	stale.put("b", revB-1, []byte("b2"))
	if err := s.commit(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale commit = %v, want ErrConflict", err)
	}
	for key, want := range map[string]string{"a": "a1", "b": "b1"} {
		if v, _, _, _ := s.get(ctx, key); string(v) != want {
			t.Errorf("%s = %q after a lost commit, want %q", key, v, want)
		}
	}

	del := &txn{}
	del.del("a", revA)
	del.put("b", revB, []byte("b3"))
	if err := s.commit(ctx, del); err != nil {
		t.Fatalf("delete commit: %v", err)
	}
	v, rev, ok, err := s.get(ctx, "a")
	if err != nil || ok || rev == 0 || v != nil {
		t.Fatalf("deleted a: value %q rev %d ok %v err %v; want no value and the marker's revision", v, rev, ok, err)
	}
	again := &txn{}
	again.put("a", rev, []byte("a4"))
	if err := s.commit(ctx, again); err != nil {
		t.Fatalf("re-create a over its delete marker: %v", err)
	}
	if got, err := s.list(ctx, ">"); err != nil || len(got) != 3 {
		t.Fatalf("list > = %d entries (%v), want a, b and meta.instance", len(got), err)
	}
}

func TestConcurrentIncrementsEachCountOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	var wg sync.WaitGroup
	firsts := make(chan int64, 40)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, err := s.nextIDs(ctx, "q", 2)
			if err != nil {
				t.Error(err)
				return
			}
			firsts <- first
		}()
	}
	wg.Wait()
	close(firsts)
	seen := map[int64]bool{}
	for f := range firsts {
		if seen[f] || seen[f+1] {
			t.Fatalf("id %d handed out twice", f)
		}
		seen[f], seen[f+1] = true, true
	}
	if len(seen) != 40 {
		t.Fatalf("%d ids handed out, want 40", len(seen))
	}
}
