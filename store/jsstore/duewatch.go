package jsstore

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The ladder's timers are the record's own due keys: due.<tenant>.<job>.<id>
// holds a pending question's next step or timeout (putQuestion keeps it in
// the batch of every change to the question). Each replica watches due.>
// into an in-memory min-heap: NextDue is its earliest, DueSteps reads the
// questions of those due. Taking a step is a compare-and-set on the
// question's document, so when every replica's ladder races for one due
// step exactly one takes it and the others find it gone. A step that fell
// due while every replica was down is in the watch's initial values when
// one comes back.
//
// JetStream's scheduled messages (Nats-Schedule) would fire a message at a
// wall-clock time; they are not used because the product reads the steps
// back (JobSteps: the steps falling due within minutes, taken along with a
// round) and because the runtime's clock, injected in tests, decides when
// a step is due, not the server's.

// dueItem is one question's next due time in the heap.
type dueItem struct {
	due         time.Time
	question    int64
	tenant, job string
	at          int // index in the heap
}

// dueHeap orders the items by due time, then question id.
type dueHeap []*dueItem

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	return cmp.Or(h[i].due.Compare(h[j].due), cmp.Compare(h[i].question, h[j].question)) < 0
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].at = i; h[j].at = j }
func (h *dueHeap) Push(x any)   { it := x.(*dueItem); it.at = len(*h); *h = append(*h, it) }
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// dueWatch is a replica's view of due.>: every pending question's next due
// time, as of revision rev of the record.
type dueWatch struct {
	mu      sync.Mutex
	running bool
	heap    dueHeap
	by      map[int64]*dueItem
	rev     uint64
	// moved is closed (and replaced) whenever rev moves or the watch ends.
	moved chan struct{}
	// failed is why the watch ended on its own; the next read starts it
	// again.
	failed error
	// gen counts the watches started: a watch's entries and end count
	// only while it is the current one. stop ends the current one.
	gen  int
	stop func() error
}

// dueStall is how long the due watch may lag the record without moving
// before a read waiting on it starts a new one.
const dueStall = 2 * time.Second

// apiTimeout bounds a request the store makes to JetStream's API itself.
const apiTimeout = 5 * time.Second

// dueFilter is the key pattern of every due key.
const dueFilter = "due.>"

// watchDue starts the watch of due.> unless it runs. It stops with the
// store (Close).
func (s *Store) watchDue() error {
	dw := &s.due
	dw.mu.Lock()
	defer dw.mu.Unlock()
	if dw.running {
		return nil
	}
	if s.bg.Err() != nil {
		return fmt.Errorf("jsstore: the store is closed")
	}
	// The watch outlives the call that starts it: it is made with the
	// store's context.
	w, err := s.kv.WatchFiltered(s.bg, []string{dueFilter})
	if err != nil {
		return fmt.Errorf("jsstore: watch the due steps: %w", err)
	}
	dw.running, dw.failed = true, nil
	dw.heap, dw.by, dw.rev = nil, map[int64]*dueItem{}, 0
	if dw.moved == nil {
		dw.moved = make(chan struct{})
	}
	dw.gen++
	dw.stop = w.Stop
	go s.followDue(w, dw.gen)
	return nil
}

// followDue applies the watch's entries to the heap until the store closes
// or the watch ends.
func (s *Store) followDue(w jetstream.KeyWatcher, gen int) {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-s.bg.Done():
			s.due.end(gen, fmt.Errorf("jsstore: the store is closed"))
			return
		case e, open := <-w.Updates():
			if !open {
				s.due.end(gen, fmt.Errorf("jsstore: the watch of the due steps ended"))
				return
			}
			if e != nil {
				s.due.apply(gen, e, s.log.Warn)
			}
		}
	}
}

// end marks the watch stopped, so that the next read starts it again.
func (dw *dueWatch) end(gen int, err error) {
	dw.mu.Lock()
	defer dw.mu.Unlock()
	if gen != dw.gen || !dw.running {
		return // a watch stopped and replaced already
	}
	if dw.stop != nil {
		_ = dw.stop()
	}
	dw.running, dw.failed = false, err
	dw.heap, dw.by = nil, nil
	close(dw.moved)
	dw.moved = make(chan struct{})
}

// apply sets or clears one question's due time.
func (dw *dueWatch) apply(gen int, e jetstream.KeyValueEntry, warn func(string, ...any)) {
	dw.mu.Lock()
	defer dw.mu.Unlock()
	if gen != dw.gen || !dw.running {
		return
	}
	defer func() {
		dw.rev = max(dw.rev, e.Revision())
		close(dw.moved)
		dw.moved = make(chan struct{})
	}()
	tenant, job, q, ok := parseDueKey(e.Key())
	if !ok {
		warn("jsstore: a malformed due key is ignored", "key", e.Key())
		return
	}
	it := dw.by[q]
	if e.Operation() != jetstream.KeyValuePut {
		if it != nil {
			heap.Remove(&dw.heap, it.at)
			delete(dw.by, q)
		}
		return
	}
	var d dueDoc
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		warn("jsstore: a malformed due step is ignored", "key", e.Key(), "err", err)
		return
	}
	if it == nil {
		it = &dueItem{question: q, tenant: tenant, job: job, due: d.Due}
		dw.by[q] = it
		heap.Push(&dw.heap, it)
		return
	}
	it.due = d.Due
	heap.Fix(&dw.heap, it.at)
}

// parseDueKey reads due.<tenant>.<job>.<id>.
func parseDueKey(key string) (tenant, job string, q int64, ok bool) {
	parts := strings.Split(key, ".")
	if len(parts) != 4 || parts[0] != "due" {
		return "", "", 0, false
	}
	q, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return "", "", 0, false
	}
	return dec(parts[1]), dec(parts[2]), q, true
}

// dueView brings the watch up to date with every due key written before
// it was called (so a replica reads its own writes, and another's that
// committed before) and returns the heap for f, under the lock.
func (s *Store) dueView(ctx context.Context, f func(h dueHeap)) error {
	var progress struct {
		gen int
		rev uint64
		at  time.Time
	}
	for {
		if err := s.watchDue(); err != nil {
			return err
		}
		last, err := s.lastDueRev(ctx)
		if err != nil {
			return err
		}
		dw := &s.due
		dw.mu.Lock()
		if !dw.running {
			dw.mu.Unlock()
			continue // it ended meanwhile: start it again
		}
		if dw.rev >= last {
			f(dw.heap)
			dw.mu.Unlock()
			return nil
		}
		if dw.gen != progress.gen || dw.rev != progress.rev {
			progress.gen, progress.rev, progress.at = dw.gen, dw.rev, time.Now()
		} else if time.Since(progress.at) > dueStall {
			// The watch is behind and has not moved: its consumer is gone
			// with a server that went away, and the client would notice
			// only after missing its heartbeats. A new one reads the
			// due keys afresh.
			dw.mu.Unlock()
			s.due.end(progress.gen, fmt.Errorf("jsstore: the watch of the due steps stalled"))
			continue
		}
		moved := dw.moved
		dw.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("jsstore: wait for the due steps: %w", ctx.Err())
		case <-moved:
		case <-time.After(time.Second):
			// The last due key may have gone (an expired delete marker)
			// before the watch saw it: read which is last again.
		}
	}
}

// lastDueRev is the revision of the last write of any due key, 0 when
// there is none. One request to the stream's leader: the direct get API
// takes no wildcard subject.
func (s *Store) lastDueRev(ctx context.Context) (uint64, error) {
	req, _ := json.Marshal(map[string]string{"last_by_subj": subjectPrefix + dueFilter})
	// As the jetstream package's own requests, it gives up in time when
	// the stream has no leader; the ladder tries again shortly.
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	msg, err := s.nc.RequestWithContext(ctx, jetstream.DefaultAPIPrefix+"STREAM.MSG.GET."+streamName, req)
	if err != nil {
		return 0, fmt.Errorf("jsstore: read the last due step: %w", err)
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, fmt.Errorf("jsstore: read the last due step: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return 0, nil
	case resp.Error != nil:
		return 0, fmt.Errorf("jsstore: read the last due step: %w", resp.Error)
	case resp.Message == nil:
		return 0, fmt.Errorf("jsstore: read the last due step: an empty reply")
	}
	return resp.Message.Seq, nil
}

// dueBy returns the heap's items due at or before t, by due time then
// question. It walks only the heap's due part: an item's children are due
// no earlier than it.
func dueBy(h dueHeap, t time.Time) []dueItem {
	var out []dueItem
	var walk func(i int)
	walk = func(i int) {
		if i >= len(h) || h[i].due.After(t) {
			return
		}
		out = append(out, *h[i])
		walk(2*i + 1)
		walk(2*i + 2)
	}
	walk(0)
	sortDue(out)
	return out
}

func sortDue(items []dueItem) {
	slices.SortFunc(items, func(a, b dueItem) int {
		return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.question, b.question))
	})
}
