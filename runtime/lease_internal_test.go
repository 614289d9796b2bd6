package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// TestStopLetsGoOfALeaseRenewedAsItStopped checks a stop that cut a
// renewal short after JetStream stored it: the lease is at a revision the
// runtime never heard of, and the stop still deletes it, so the next
// runtime need not wait for it to lapse. A lease another database's
// runtime holds by then is left alone.
func TestStopLetsGoOfALeaseRenewedAsItStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{StoreDir: filepath.Join(t.TempDir(), "nats"), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	kv, err := bridge.EnsureKV(ctx, n.JS, leaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rev uint64, database string) uint64 {
		t.Helper()
		data, _ := json.Marshal(lease{Database: database})
		next, err := kv.Write(ctx, "lease", rev, data, 0)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	r := &Runtime{instance: "db-a"}

	heard := write(0, "db-a")
	write(heard, "db-a") // the renewal the stop cut short, stored all the same
	r.releaseLease(kv, heard)
	if e, err := kv.Get(ctx, "lease"); err == nil {
		t.Fatalf("after the stop the lease is %s; want it gone", e.Value())
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("reading the lease after the stop: %v", err)
	}

	heard = write(0, "db-a")
	write(heard, "db-b") // lapsed, and taken by another database's runtime
	r.releaseLease(kv, heard)
	e, err := kv.Get(ctx, "lease")
	if err != nil {
		t.Fatalf("the other runtime's lease: %v; want it kept", err)
	}
	var held lease
	if err := json.Unmarshal(e.Value(), &held); err != nil || held.Database != "db-b" {
		t.Fatalf("the lease names %q (%v); want db-b's kept", held.Database, err)
	}
}
