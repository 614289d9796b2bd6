package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/store"
)

// relayStore is the outbox as the relay sees it: rows to publish, marked
// sent once JetStream has them.
type relayStore interface {
	Unsent(ctx context.Context, afterID int64, limit int, oldBefore time.Time) ([]store.OutboxRow, error)
	MarkSent(ctx context.Context, ids []int64, at time.Time) error
	OutboxBacklogAfter(ctx context.Context, after int64) (int64, error)
}

// relayBatch is outbox rows published together, awaiting JetStream's
// acknowledgements: done of them have come back, sent are the rows
// acknowledged before the first failure.
type relayBatch struct {
	rows    []store.OutboxRow
	futures []jetstream.PubAckFuture
	done    int
	sent    []int64
	failed  error
}

// record notes the next acknowledgement (err nil) or failure.
func (b *relayBatch) record(err error) {
	switch {
	case err != nil && b.failed == nil:
		b.failed = fmt.Errorf("publish %s: %w", b.rows[b.done].MsgID(), err)
	case err == nil && b.failed == nil:
		b.sent = append(b.sent, b.rows[b.done].ID)
	}
	b.done++
}

// poll records, without waiting, the acknowledgements that have come back.
func (b *relayBatch) poll() {
	for b.done < len(b.futures) {
		f := b.futures[b.done]
		select {
		case <-f.Ok():
			b.record(nil)
		case err := <-f.Err():
			b.record(err)
		default:
			return
		}
	}
}

// maxRelayInflight bounds the batches published and not yet acknowledged.
const maxRelayInflight = 8

// publishedRow is a row published at a time, waiting to be marked sent.
type publishedRow struct {
	id int64
	at time.Time
}

// Outbox rows are marked sent in batches: at most one commit for it every
// markSentEvery, unless maxMarkBatch rows are waiting.
const (
	markSentEvery = 250 * time.Millisecond
	maxMarkBatch  = 4096
)

func (r *Runtime) wakeRelay() {
	select {
	case r.relayWake <- struct{}{}:
	default:
	}
}

// relay publishes outbox rows in order, each with Nats-Msg-Id = its row id,
// and marks them sent after JetStream acknowledged them. It publishes new
// rows while earlier ones wait for their acknowledgements, so subscribers
// get each decision as soon as it committed, even while a stream is busy
// writing to disk.
func (r *Runtime) relay(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		progressed, err := r.relayOnce(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("outbox relay", "err", err)
		}
		if progressed && err == nil {
			continue
		}
		var ok <-chan *jetstream.PubAck
		var failed <-chan error
		var head *relayBatch
		if err == nil && len(r.relayInflight) > 0 {
			head = r.relayInflight[0]
			ok, failed = head.futures[head.done].Ok(), head.futures[head.done].Err()
		}
		select {
		case <-ctx.Done():
			r.markOnExit()
			return
		case <-r.relayWake:
		case <-tick.C:
		case <-ok:
			head.record(nil)
		case err := <-failed:
			head.record(err)
		}
	}
}

// relayOnce publishes the next rows, if the window allows, and finishes
// the batches whose acknowledgements have all come back. It reports
// whether it did anything.
func (r *Runtime) relayOnce(ctx context.Context) (bool, error) {
	if err := r.markDue(ctx, time.Now()); err != nil {
		return false, err
	}
	progressed := false
	if len(r.relayInflight) < maxRelayInflight {
		b, err := r.publishNext(ctx)
		if err != nil {
			return false, err
		}
		if b != nil {
			r.relayInflight = append(r.relayInflight, b)
			r.relayPublished = b.rows[len(b.rows)-1].ID
			progressed = true
		}
	}
	for len(r.relayInflight) > 0 {
		b := r.relayInflight[0]
		b.poll()
		if b.done < len(b.futures) {
			break
		}
		r.relayInflight = r.relayInflight[1:]
		progressed = true
		if err := r.finishBatch(ctx, b); err != nil {
			// Publish again from the first row not acknowledged; rows that
			// did reach the stream are dropped there as duplicates.
			r.relayInflight = nil
			r.relayPublished = r.relayHigh
			return progressed, err
		}
	}
	return progressed, nil
}

// publishNext publishes the rows after the last one published; nil when
// there are none.
func (r *Runtime) publishNext(ctx context.Context) (*relayBatch, error) {
	rows, err := r.outbox.Unsent(ctx, r.relayPublished, 256, time.Now().Add(-staleAfter))
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	if r.o.BeforePublish != nil {
		for i, row := range rows {
			if err := r.o.BeforePublish(row); err != nil {
				rows = rows[:i]
				break
			}
		}
		if len(rows) == 0 {
			return nil, nil
		}
	}
	b := &relayBatch{rows: rows, futures: make([]jetstream.PubAckFuture, 0, len(rows))}
	var seen earlierPublishes
	for _, row := range rows {
		f, err := r.publishRow(ctx, row, &seen)
		if err != nil {
			if len(b.futures) == 0 {
				return nil, err
			}
			b.rows = b.rows[:len(b.futures)] // the rest go in a later batch
			break
		}
		b.futures = append(b.futures, f)
	}
	return b, nil
}

// finishBatch queues a fully acknowledged batch's rows to be marked sent
// (see markDue). It returns the batch's first failure.
func (r *Runtime) finishBatch(ctx context.Context, b *relayBatch) error {
	sent, failed := b.sent, b.failed
	if r.o.AfterPublish != nil {
		for i := range sent {
			if err := r.o.AfterPublish(b.rows[i]); err != nil {
				sent = sent[:i]
				failed = err
				break
			}
		}
	}
	now := time.Now()
	for _, id := range sent {
		r.relayPending = append(r.relayPending, publishedRow{id: id, at: now})
	}
	if len(sent) > 0 {
		r.relayHigh = sent[len(sent)-1]
		r.acked.Store(r.relayHigh)
	}
	r.metrics.published.Add(float64(len(sent)))
	return failed
}

// backlog counts the outbox rows not yet in JetStream; rows published
// and only waiting to be marked sent do not count.
func (r *Runtime) backlog(ctx context.Context) (int64, error) {
	return r.outbox.OutboxBacklogAfter(ctx, r.acked.Load())
}

// MarkPublished marks sent every row JetStream acknowledged that still
// waits out MarkSentAfter. Call it only after Run has returned and the
// messages are known to be on disk (the embedded server stopped and its
// files synced): a restart then publishes none of them again, which past
// JetStream's duplicate window would show the job a second resume.
func (r *Runtime) MarkPublished(ctx context.Context) error {
	ids := make([]int64, 0, len(r.relayPending))
	for _, p := range r.relayPending {
		ids = append(ids, p.id)
	}
	// And the batches whose acknowledgements came back after the relay
	// stopped reading them (see CollectAcks), up to the first row that
	// failed or was not acknowledged: a restart publishes from there, and
	// rows after it marked sent would reach the stream before it.
	for _, b := range r.relayInflight {
		b.poll()
		ids = append(ids, b.sent...)
		if b.failed != nil || b.done < len(b.futures) {
			break
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := r.outbox.MarkSent(ctx, ids, time.Now()); err != nil {
		return fmt.Errorf("runtime: mark published rows sent: %w", err)
	}
	r.relayPending = r.relayPending[:0]
	return nil
}

// CollectAcks waits, until ctx ends, for JetStream's acknowledgements of
// the rows the relay published and was still waiting on when it stopped,
// so MarkPublished can mark them. Call it after Run has returned and
// before the NATS connection closes.
func (r *Runtime) CollectAcks(ctx context.Context) {
	for _, b := range r.relayInflight {
		for b.done < len(b.futures) {
			f := b.futures[b.done]
			select {
			case <-f.Ok():
				b.record(nil)
			case err := <-f.Err():
				b.record(err)
			case <-ctx.Done():
				return
			}
		}
	}
}

// markOnExit writes the marks that are due but still gathered, so a
// clean restart publishes fewer rows again.
func (r *Runtime) markOnExit() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for len(r.relayPending) > 0 {
		before := len(r.relayPending)
		r.relayLastMark = time.Time{}
		if err := r.markDue(ctx, time.Now()); err != nil {
			r.log.Warn("outbox relay: mark published rows sent at exit", "err", err)
			return
		}
		if len(r.relayPending) == before {
			return // the rest are not due yet
		}
	}
}

// markDue marks sent the published rows whose delay has passed. Each mark
// is a commit, and so an fsync that the answer path's commits queue behind:
// marks are gathered for markSentEvery (or maxMarkBatch rows) into one. A
// row marked late is at worst published again after a crash, under the same
// message id.
func (r *Runtime) markDue(ctx context.Context, now time.Time) error {
	n := 0
	for n < len(r.relayPending) && n < maxMarkBatch && now.Sub(r.relayPending[n].at) >= r.o.MarkSentAfter {
		n++
	}
	if n == 0 || n < maxMarkBatch && now.Sub(r.relayLastMark) < markSentEvery {
		return nil
	}
	r.relayLastMark = now
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = r.relayPending[i].id
	}
	if err := r.outbox.MarkSent(ctx, ids, now); err != nil {
		return err
	}
	r.relayPending = append(r.relayPending[:0], r.relayPending[n:]...)
	return nil
}
