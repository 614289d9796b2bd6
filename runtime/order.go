package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// attemptRetry is how soon an attempt that waits for an earlier one of its
// question is handed back. The earlier one comes back by itself within
// consumerAckWait of the death of whoever held it.
const attemptRetry = 500 * time.Millisecond

// maxAttemptWaits bounds how often an attempt is handed back
// (Options.AttemptWaits): about 15 s, past consumerAckWait, by when an
// earlier attempt a dead replica held has been decided. An earlier one
// still undecided then is stuck for another reason (the ack floor held
// back by a message that keeps failing), and must not hold the question
// for ever: the attempt is decided.
const maxAttemptWaits = 30

// attemptOrder keeps the attempts of one question decided in the order the
// answers stream stored them ("the first acknowledged answer wins",
// docs/contract.md): an attempt waits while an earlier attempt of the same
// question lies past the consumer's ack floor and was not decided here,
// because another replica holds it or died holding it (docs/design.md,
// "Decisions in acknowledgement order").
type attemptOrder struct {
	mu sync.Mutex
	// floor is a stream sequence up to which every attempt is decided,
	// here or (the consumer's ack floor) anywhere.
	floor uint64
	// done holds the sequences above floor decided here.
	done map[uint64]struct{}
}

// firstUnknown returns the lowest sequence above the floor that is neither
// decided here nor in batch (sorted): every attempt before it is accounted
// for. It returns 0 when none below limit is unknown.
func (o *attemptOrder) firstUnknown(batch []uint64, limit uint64) uint64 {
	if limit > o.floor+1 && limit-o.floor-1 > uint64(len(o.done)+len(batch)) {
		// More sequences lie between than are accounted for (a runtime
		// just started): one is unknown, and the floor is to be read.
		return o.floor + 1
	}
	for s := o.floor + 1; s < limit; s++ {
		if _, ok := o.done[s]; ok {
			continue
		}
		if _, ok := slices.BinarySearch(batch, s); ok {
			continue
		}
		return s
	}
	return 0
}

// raise moves the floor to floor (the consumer's ack floor) and on over
// what was decided here.
func (o *attemptOrder) raise(floor uint64) {
	if floor > o.floor {
		o.floor = floor
	}
	for s := range o.done {
		if s <= o.floor {
			delete(o.done, s)
		}
	}
	for {
		if _, ok := o.done[o.floor+1]; !ok {
			return
		}
		delete(o.done, o.floor+1)
		o.floor++
	}
}

// decidedHere records the sequences of a committed batch.
func (o *attemptOrder) decidedHere(seqs []uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done == nil {
		o.done = map[uint64]struct{}{}
	}
	for _, s := range seqs {
		if s > o.floor {
			o.done[s] = struct{}{}
		}
	}
	o.raise(0)
}

// orderAttempts sorts a batch by stream sequence and returns the items
// that must wait for an earlier attempt of their question. On one runtime
// taking every attempt in turn it makes no request; only a gap (an
// attempt held elsewhere) costs a look at the consumer and the stream.
func (r *Runtime) orderAttempts(ctx context.Context, items []*attemptItem) (map[*attemptItem]bool, error) {
	slices.SortStableFunc(items, func(a, b *attemptItem) int { return cmp.Compare(a.seq, b.seq) })
	seqs := make([]uint64, 0, len(items))
	for _, it := range items {
		seqs = append(seqs, it.seq)
	}
	last := seqs[len(seqs)-1]
	o := &r.order
	o.mu.Lock()
	defer o.mu.Unlock()
	gap := o.firstUnknown(seqs, last)
	if gap == 0 {
		return nil, nil
	}
	cons, err := r.js.Consumer(ctx, bridge.StreamAnswers, r.durable(answersConsumer))
	if err != nil {
		return nil, fmt.Errorf("runtime: answers consumer: %w", err)
	}
	o.raise(cons.CachedInfo().AckFloor.Stream)
	if gap = o.firstUnknown(seqs, last); gap == 0 {
		return nil, nil
	}
	earlier, err := r.earlierAttempts(ctx, o, items, gap, seqs)
	if err != nil {
		return nil, err
	}
	waiting := map[*attemptItem]bool{}
	for _, it := range items {
		first, ok := earlier[questionOf(it.tenant, it.job, it.a.QuestionID)]
		if it.delivered > uint64(cmp.Or(r.o.AttemptWaits, maxAttemptWaits)) {
			continue
		}
		if (ok && first < it.seq) || waitingBefore(waiting, it) {
			waiting[it] = true
		}
	}
	return waiting, nil
}

// waitingBefore reports whether an attempt of it's question earlier in the
// batch waits: then it waits too.
func waitingBefore(waiting map[*attemptItem]bool, it *attemptItem) bool {
	for w := range waiting {
		if w.seq < it.seq && w.tenant == it.tenant && w.job == it.job && w.a.QuestionID == it.a.QuestionID {
			return true
		}
	}
	return false
}

// questionOf names a question across tenants and jobs.
func questionOf(tenant, job, question string) string {
	return tenant + "/" + job + "/" + question
}

// earlierAttempts reads, for each job of the items at or after gap, the
// attempts stored from gap on that are not accounted for here, and returns
// the lowest such sequence of each question they name.
func (r *Runtime) earlierAttempts(ctx context.Context, o *attemptOrder, items []*attemptItem, gap uint64, batch []uint64) (map[string]uint64, error) {
	until := map[string]uint64{} // job subject → the last item's sequence
	for _, it := range items {
		if it.seq > gap {
			until[bridge.AnswerSubject(it.tenant, it.job)] = it.seq
		}
	}
	earlier := map[string]uint64{}
	for subject, end := range until {
		for seq := gap; seq < end; {
			m, err := r.answers.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("runtime: look for earlier answers: %w", err)
			}
			if m.Sequence >= end {
				break
			}
			seq = m.Sequence + 1
			if _, ok := o.done[m.Sequence]; ok {
				continue
			}
			if _, ok := slices.BinarySearch(batch, m.Sequence); ok {
				continue
			}
			tenant, job, ok := subjectKey(m.Subject, bridge.PrefixAnswer)
			var a bridge.AnswerAttempt
			if err := bridge.DecodeAttempt(m.Data, &a); (err != nil && !bridge.IsPartial(err)) || !ok {
				continue // dropped unread wherever it is decided
			}
			q := questionOf(tenant, job, a.QuestionID)
			if _, seen := earlier[q]; !seen {
				earlier[q] = m.Sequence
			}
		}
	}
	return earlier, nil
}
