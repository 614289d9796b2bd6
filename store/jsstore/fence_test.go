package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv/cluster"
	"github.com/askbridge/askbridge/internal/testenv/poll"
	"github.com/askbridge/askbridge/store/storetest"
)

// TestGateReadsPastAReplicaBehind: on a bucket with three replicas, a
// direct get may be answered by a follower that has not applied the
// latest commits. Every node of the cluster maps a share of the bucket's
// direct gets to a subject of the test's (a weighted subject mapping),
// which answers its first few as a replica behind would: with nothing
// (it has not applied the job), with a reading taken before the second
// question was recorded, or in part; and then passes them on to the
// servers. Every GateJob still sees both pending questions, and every
// list of the job's pending index (what a ladder round and a queue read)
// both keys.
func TestGateReadsPastAReplicaBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mapping := filepath.Join(t.TempDir(), "mapping.conf")
	conf := fmt.Sprintf("mappings = { %q: [ { destination: %q, weight: 40%% } ] }\n", directGet, behindSubject)
	if err := os.WriteFile(mapping, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	c := cluster.StartT(t, cluster.Options{Include: mapping})
	url := c.Node(0).URL()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := Open(ctx, nc, Options{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !s.replicated {
		t.Fatal("a bucket of 3 replicas is not taken as replicated")
	}
	var answer atomic.Pointer[func(reply string) []*nats.Msg]
	behind := replicaBehind(t, url, func(reply string) []*nats.Msg { return (*answer.Load())(reply) })

	storetest.Ask(t, s, storetest.NewQuestion("job-1", "q-1", 1))
	before := rawMultiLast(t, nc, keyJob(storetest.Tenant, "job-1"), stateFilter(storetest.Tenant, bridge.StatePending, "job-1"))
	storetest.Ask(t, s, storetest.NewQuestion("job-1", "q-2", 1))
	wantBoth := func(when string) {
		t.Helper()
		j, err := s.GateJob(ctx, storetest.Tenant, "job-1")
		var ids []string
		for _, p := range j.Pending {
			ids = append(ids, p.QuestionID)
		}
		if err != nil || !j.Known || j.Version != 1 || !slices.Equal(ids, []string{"q-1", "q-2"}) {
			t.Fatalf("%s: GateJob = known %v, version %d, pending %v, %v; want job-1 at version 1 with q-1 and q-2 pending",
				when, j.Known, j.Version, ids, err)
		}
	}
	pending := stateFilter(storetest.Tenant, bridge.StatePending, "job-1")
	wantBothKeys := func(when string) {
		t.Helper()
		entries, err := s.list(ctx, pending)
		var keys []string
		for _, e := range entries {
			keys = append(keys, e.Key)
		}
		if err != nil || len(keys) != 2 {
			t.Fatalf("%s: list %s = %v, %v; want the keys of q-1 and q-2", when, pending, keys, err)
		}
	}
	wantBoth("every reading passed on")
	wantBothKeys("every reading passed on")

	for _, stale := range []struct {
		name   string
		answer func(reply string) []*nats.Msg
	}{
		{"a replica that has not applied the job", func(reply string) []*nats.Msg {
			return []*nats.Msg{statusMsg(reply, "404", "No Results")}
		}},
		{"a replica with a reading from before the second question", func(reply string) []*nats.Msg {
			out := make([]*nats.Msg, len(before))
			for i, m := range before {
				out[i] = &nats.Msg{Subject: reply, Header: m.Header, Data: m.Data}
			}
			return out
		}},
		{"a replica that answers in part", func(reply string) []*nats.Msg {
			return []*nats.Msg{statusMsg(reply, "413", "Too Many Results")}
		}},
	} {
		answer.Store(&stale.answer)
		behind.lag(staleReadings)
		poll.CheckFor(t, poll.Patience, time.Millisecond, func() error {
			wantBoth(stale.name)
			wantBothKeys(stale.name)
			if n := behind.lagging(); n > 0 {
				return fmt.Errorf("%s has %d stale readings of %d still to give", stale.name, n, staleReadings)
			}
			return nil
		})
	}
}

// directGet is the subject of the bucket's direct gets.
const directGet = "$JS.API.DIRECT.GET." + streamName

// behindSubject is where the test's mapping sends a share of them.
const behindSubject = "test.behind." + streamName

// staleReadings is how many readings a replica behind answers stale in
// each case before it has caught up.
const staleReadings = 3

// behindReplica answers the direct gets mapped to behindSubject.
type behindReplica struct{ stale atomic.Int32 }

// lag makes the next n readings stale.
func (b *behindReplica) lag(n int) { b.stale.Store(int32(n)) }

// takeStale reports whether the reading in hand is one to give stale.
func (b *behindReplica) takeStale() bool {
	for {
		n := b.stale.Load()
		if n <= 0 {
			return false
		}
		if b.stale.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// lagging is how many stale readings are still to give.
func (b *behindReplica) lagging() int { return int(b.stale.Load()) }

// replicaBehind serves behindSubject on the server at url: a reading it
// is to give stale it answers with answer; any other it passes on to the
// servers, whose answer goes to the reader.
func replicaBehind(t *testing.T, url string, answer func(reply string) []*nats.Msg) *behindReplica {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b := &behindReplica{}
	_, err = nc.Subscribe(behindSubject, func(m *nats.Msg) {
		if !b.takeStale() {
			_ = nc.PublishRequest(directGet, m.Reply, m.Data)
			return
		}
		for _, out := range answer(m.Reply) {
			_ = nc.PublishMsg(out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return b
}

// statusMsg is a direct get's answer of a status alone.
func statusMsg(reply, code, description string) *nats.Msg {
	m := nats.NewMsg(reply)
	m.Header.Set("Status", code)
	m.Header.Set("Description", description)
	return m
}

// rawMultiLast is the messages a server answers a direct get of keys'
// last values with, the end of the batch included.
func rawMultiLast(t *testing.T, nc *nats.Conn, keys ...string) []*nats.Msg {
	t.Helper()
	subjects := make([]string, len(keys))
	for i, k := range keys {
		subjects[i] = subjectPrefix + k
	}
	req, _ := json.Marshal(map[string]any{"multi_last": subjects})
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+streamName, inbox, req); err != nil {
		t.Fatal(err)
	}
	var out []*nats.Msg
	for {
		m, err := sub.NextMsg(poll.Patience)
		if err != nil {
			t.Fatalf("reading %v: %v", keys, err)
		}
		out = append(out, m)
		if m.Header.Get("Status") != "" {
			if m.Header.Get("Status") != "204" {
				t.Fatalf("reading %v: status %s", keys, m.Header.Get("Status"))
			}
			return out
		}
	}
}

// TestFencedGivesUpOnReplicasThatStayBehind: readings that stay behind
// are taken again fenceTries times at most, and the error says why; a
// fresh one ends the reading at once.
func TestFencedGivesUpOnReplicasThatStayBehind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		freshAt   int // the reading that is fresh; 0 for none
		wantTries int
		wantErr   error
	}{
		{"fresh at once", 1, 1, nil},
		{"fresh at the third", 3, 3, nil},
		{"never fresh", 0, fenceTries, errBehind},
	} {
		tries := 0
		got, err := fenced(context.Background(), 0, func() (int, error) {
			tries++
			if tries == c.freshAt {
				return tries, nil
			}
			return 0, fence(10).check(9)
		})
		if tries != c.wantTries || !errors.Is(err, c.wantErr) || (err == nil && got != c.freshAt) {
			t.Errorf("%s: %d readings, %v (value %d); want %d readings, %v", c.name, tries, err, got, c.wantTries, c.wantErr)
		}
	}
}
