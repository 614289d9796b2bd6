package runtime

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store"
)

// TestNewConsumersAreTold checks which adapters' consumers the runtime
// takes for new (to ask their platform's pending questions again): one it
// made, and one made again by anyone since; not one it noted, across a
// restart of NATS and the adapter's update of it, nor one that existed
// before the store kept a note of it.
func TestNewConsumersAreTold(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	connect := func() *bridge.NATS {
		t.Helper()
		n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{StoreDir: filepath.Join(dir, "nats"), Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		return n
	}
	open := func(name string) *store.Store {
		t.Helper()
		st, err := store.Open(ctx, filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	slack := bridge.Platform{Name: bridge.PlatformSlack, On: true, Consumer: bridge.EventConsumer(bridge.PlatformSlack)}
	off := bridge.Platform{Name: bridge.PlatformDiscord, Consumer: bridge.EventConsumer(bridge.PlatformDiscord)}
	look := func(n *bridge.NATS, st *store.Store, want int) {
		t.Helper()
		r, err := New(Options{NATS: n, Store: st, Platforms: []bridge.Platform{slack, off}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := r.ensureEventConsumers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(fresh) != want {
			t.Fatalf("%d consumers taken for new, want %d", len(fresh), want)
		}
		r.reaskAll(ctx, fresh)
	}
	n, st := connect(), open("a.db")
	look(n, st, 1) // made now
	look(n, st, 0)
	if _, err := n.JS.Consumer(ctx, bridge.StreamEvents, bridge.PlatformDiscord); err == nil {
		t.Error("the runtime made the consumer of a platform that is off")
	}

	n.Close()
	n = connect()
	if _, err := n.JS.CreateOrUpdateConsumer(ctx, bridge.StreamEvents, slack.Consumer); err != nil {
		t.Fatal(err) // as the adapter does at its start
	}
	look(n, st, 0)

	if err := n.JS.DeleteConsumer(ctx, bridge.StreamEvents, bridge.PlatformSlack); err != nil {
		t.Fatal(err)
	}
	if _, err := n.JS.CreateOrUpdateConsumer(ctx, bridge.StreamEvents, slack.Consumer); err != nil {
		t.Fatal(err) // made again by the adapter's heal
	}
	look(n, st, 1)
	look(n, st, 0)

	look(n, open("b.db"), 0) // a store that never noted it: taken as it is
}
