package jsstore

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
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
// time.
type dueWatch struct {
	keyView
	heap dueHeap
	by   map[int64]*dueItem
}

// dueFilter is the key pattern of every due key.
const dueFilter = "due.>"

// init makes dw a view of the due keys; warn reports a malformed one.
func (dw *dueWatch) init(warn func(string, ...any)) {
	dw.filter, dw.what = dueFilter, "the due steps"
	dw.reset = func() { dw.heap, dw.by = nil, map[int64]*dueItem{} }
	dw.apply = func(e jetstream.KeyValueEntry, _ bool) { dw.set(e, warn) }
}

// set sets or clears one question's due time.
func (dw *dueWatch) set(e jetstream.KeyValueEntry, warn func(string, ...any)) {
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
// it was called and returns the heap for f, under the lock.
func (s *Store) dueView(ctx context.Context, f func(h dueHeap)) error {
	return s.read(ctx, &s.due.keyView, func() { f(s.due.heap) })
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
