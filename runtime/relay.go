package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/store/record"
)

// relayStore is the outbox as the relay sees it: rows to publish, marked
// sent once JetStream has them.
type relayStore interface {
	Unsent(ctx context.Context, afterID int64, limit int, oldBefore time.Time) ([]record.OutboxRow, error)
	MarkSentThrough(ctx context.Context, through int64, at time.Time) error
	OutboxBacklogAfter(ctx context.Context, after int64) (int64, error)
}

// relayBatch is outbox rows published together, awaiting JetStream's
// acknowledgements: done of them have come back, sent are the rows
// acknowledged before the first failure.
type relayBatch struct {
	rows    []record.OutboxRow
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

// codeDuplicateInProcess is JetStream's answer to a publish whose message
// id another publish is storing at that moment: with several replicas,
// their relays publish the same row.
const codeDuplicateInProcess = 10158

// duplicateInProcessWait is how long the relay gives another replica's
// publish of the same row before it publishes the row again.
const duplicateInProcessWait = 20 * time.Millisecond

// isDuplicateInProcess reports whether err is JetStream's "duplicate
// message id is in process".
func isDuplicateInProcess(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == codeDuplicateInProcess
}

// maxRelayInflight bounds the batches published and not yet acknowledged.
const maxRelayInflight = 8

// publishedRow is a row published at a time, waiting to be marked sent.
type publishedRow struct {
	id int64
	at time.Time
}

// Outbox rows are marked sent in batches: at most one commit for it every
// markSentEvery, unless maxMarkBatch rows are waiting; a try takes
// markWithin at most.
const (
	markSentEvery = 250 * time.Millisecond
	maxMarkBatch  = 4096
	markWithin    = time.Second
	// scanWithin bounds a read of the rows to publish.
	scanWithin = 2 * time.Second
)

// relay publishes the outbox, in order, and marks the rows JetStream has
// (see run). Its state is the relay goroutine's alone, until Run has
// returned and MarkPublished and CollectAcks read it.
type relay struct {
	st  relayStore
	js  jetstream.JetStream
	log *slog.Logger
	// published counts the rows JetStream acknowledged (a metric).
	published prometheus.Counter
	// beforePublish, afterPublish and markSentAfter: see Options.
	beforePublish, afterPublish func(record.OutboxRow) error
	markSentAfter               time.Duration
	wake                        chan struct{}
	// turn is this replica's claim on the relay of a shared record.
	turn *relayTurn

	// high is the last row JetStream acknowledged with all before it.
	high int64
	// acked is high for readers outside the relay: every row up to it is
	// in JetStream, whether or not it is marked sent yet.
	acked atomic.Int64
	// lastPublished is the last row published; inflight the batches whose
	// acknowledgements are awaited; pending the rows acknowledged but not
	// yet marked sent, last marked at lastMark.
	lastPublished int64
	inflight      []*relayBatch
	pending       []publishedRow
	lastMark      time.Time
}

// newRelay makes the relay of o's store; its metric is set with the
// runtime's others.
func newRelay(o Options, log *slog.Logger) *relay {
	return &relay{
		st: o.Store, js: o.NATS.JS, log: log,
		beforePublish: o.BeforePublish, afterPublish: o.AfterPublish, markSentAfter: o.MarkSentAfter,
		wake: make(chan struct{}, 1), turn: newRelayTurn(o.Store, log),
	}
}

// wakeRelay makes the relay look for new outbox rows at once.
func (r *Runtime) wakeRelay() {
	select {
	case r.outbox.wake <- struct{}{}:
	default:
	}
}

// run publishes outbox rows in order, each with Nats-Msg-Id = its row id,
// and marks them sent after JetStream acknowledged them. It publishes new
// rows while earlier ones wait for their acknowledgements, so subscribers
// get each decision as soon as it committed, even while a stream is busy
// writing to disk.
func (rl *relay) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		progressed, err := rl.once(ctx, rl.turn.mine(ctx, time.Now()))
		if isDuplicateInProcess(err) && ctx.Err() == nil {
			// Another replica's relay is storing the same row right now:
			// publishing it again in a moment finds it stored (a
			// duplicate, acknowledged), with no need to wait a tick.
			rl.log.Debug("outbox relay: a row is being published by another replica", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(duplicateInProcessWait):
			}
			continue
		}
		if err != nil && ctx.Err() == nil {
			rl.log.Warn("outbox relay", "err", err)
		}
		if progressed && err == nil {
			continue
		}
		var ok <-chan *jetstream.PubAck
		var failed <-chan error
		var head *relayBatch
		if err == nil && len(rl.inflight) > 0 {
			head = rl.inflight[0]
			ok, failed = head.futures[head.done].Ok(), head.futures[head.done].Err()
		}
		select {
		case <-ctx.Done():
			rl.markOnExit()
			rl.turn.release()
			return
		case <-rl.wake:
		case <-rl.turn.changed():
		case <-rl.timed(time.Now()):
		case <-tick.C:
		case <-ok:
			head.record(nil)
		case err := <-failed:
			head.record(err)
		}
	}
}

// once publishes the next rows, if publish (it is this replica's turn)
// and the window allow, and finishes the batches whose acknowledgements
// have all come back. It reports whether it did anything.
func (rl *relay) once(ctx context.Context, publish bool) (bool, error) {
	// Marking is bookkeeping: the rows to mark stay pending when it
	// fails, and publishing goes on. A try is bounded, so that a store
	// whose leader is being elected (JetStream) holds new events back a
	// second at most, not its request timeout.
	mctx, cancel := context.WithTimeout(ctx, markWithin)
	markErr := rl.markDue(mctx, time.Now())
	cancel()
	if markErr != nil && ctx.Err() == nil {
		rl.log.Warn("outbox relay: rows published but not marked sent yet", "err", markErr)
	}
	progressed := false
	if publish && len(rl.inflight) < maxRelayInflight {
		b, err := rl.publishNext(ctx)
		if err != nil {
			return false, err
		}
		if b != nil {
			rl.inflight = append(rl.inflight, b)
			rl.lastPublished = b.rows[len(b.rows)-1].ID
			progressed = true
		}
	}
	for len(rl.inflight) > 0 {
		b := rl.inflight[0]
		b.poll()
		if b.done < len(b.futures) {
			break
		}
		rl.inflight = rl.inflight[1:]
		progressed = true
		if err := rl.finishBatch(ctx, b); err != nil {
			// Publish again from the first row not acknowledged; rows that
			// did reach the stream are dropped there as duplicates.
			rl.inflight = nil
			rl.lastPublished = rl.high
			return progressed, err
		}
	}
	return progressed, nil
}

// publishNext publishes the rows after the last one published; nil when
// there are none.
func (rl *relay) publishNext(ctx context.Context) (*relayBatch, error) {
	// A read of the outbox that cannot be answered (the JetStream store's
	// watch, while the cluster elects its meta leader) is tried again at
	// the next round rather than waited out.
	sctx, cancel := context.WithTimeout(ctx, scanWithin)
	rows, err := rl.st.Unsent(sctx, rl.lastPublished, 256, time.Now().Add(-staleAfter))
	cancel()
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	if rl.beforePublish != nil {
		for i, row := range rows {
			if err := rl.beforePublish(row); err != nil {
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
		f, err := rl.publishRow(ctx, row, &seen)
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
func (rl *relay) finishBatch(ctx context.Context, b *relayBatch) error {
	sent, failed := b.sent, b.failed
	if rl.afterPublish != nil {
		for i := range sent {
			if err := rl.afterPublish(b.rows[i]); err != nil {
				sent = sent[:i]
				failed = err
				break
			}
		}
	}
	now := time.Now()
	for _, id := range sent {
		rl.pending = append(rl.pending, publishedRow{id: id, at: now})
	}
	if len(sent) > 0 {
		rl.high = sent[len(sent)-1]
		rl.acked.Store(rl.high)
	}
	rl.published.Add(float64(len(sent)))
	return failed
}

// backlog counts the outbox rows not yet in JetStream; rows published
// and only waiting to be marked sent do not count.
func (r *Runtime) backlog(ctx context.Context) (int64, error) { return r.outbox.backlog(ctx) }

func (rl *relay) backlog(ctx context.Context) (int64, error) {
	after := rl.acked.Load()
	if rl.turn != nil {
		// On a record replicas share, one knows only the rows its own
		// relay had acknowledged: each counts the rows not yet marked
		// sent, which the relay publishing marks within markSentEvery,
		// so that every replica gives the same count.
		after = 0
	}
	return rl.st.OutboxBacklogAfter(ctx, after)
}

// MarkPublished marks sent every row JetStream acknowledged that still
// waits out MarkSentAfter. Call it only after Run has returned and the
// messages are known to be on disk (the embedded server stopped and its
// files synced): a restart then publishes none of them again, which past
// JetStream's duplicate window would show the job a second resume.
func (r *Runtime) MarkPublished(ctx context.Context) error { return r.outbox.markPublished(ctx) }

func (rl *relay) markPublished(ctx context.Context) error {
	var through int64
	if n := len(rl.pending); n > 0 {
		through = rl.pending[n-1].id
	}
	// And the batches whose acknowledgements came back after the relay
	// stopped reading them (see CollectAcks), up to the first row that
	// failed or was not acknowledged: a restart publishes from there, and
	// rows after it marked sent would reach the stream before it.
	for _, b := range rl.inflight {
		b.poll()
		if len(b.sent) > 0 {
			through = b.sent[len(b.sent)-1]
		}
		if b.failed != nil || b.done < len(b.futures) {
			break
		}
	}
	if through == 0 {
		return nil
	}
	if err := rl.st.MarkSentThrough(ctx, through, time.Now()); err != nil {
		return fmt.Errorf("runtime: mark published rows sent: %w", err)
	}
	rl.pending = rl.pending[:0]
	return nil
}

// CollectAcks waits, until ctx ends, for JetStream's acknowledgements of
// the rows the relay published and was still waiting on when it stopped,
// so MarkPublished can mark them. Call it after Run has returned and
// before the NATS connection closes.
func (r *Runtime) CollectAcks(ctx context.Context) { r.outbox.collectAcks(ctx) }

func (rl *relay) collectAcks(ctx context.Context) {
	for _, b := range rl.inflight {
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
func (rl *relay) markOnExit() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for len(rl.pending) > 0 {
		before := len(rl.pending)
		rl.lastMark = time.Time{}
		if err := rl.markDue(ctx, time.Now()); err != nil {
			rl.log.Warn("outbox relay: mark published rows sent at exit", "err", err)
			return
		}
		if len(rl.pending) == before {
			return // the rest are not due yet
		}
	}
}

// timed fires at the relay's next timed work: the first published row
// waiting to be marked may be marked (markDue), so rows are marked within
// markSentEvery of their acknowledgement, not at the next tick; or the
// relay lease is to be claimed or renewed. Nil when neither waits.
func (rl *relay) timed(now time.Time) <-chan time.Time {
	at, ok := rl.turn.claimAt()
	if len(rl.pending) > 0 {
		mark := rl.pending[0].at.Add(rl.markSentAfter)
		if next := rl.lastMark.Add(markSentEvery); next.After(mark) {
			mark = next
		}
		if !ok || mark.Before(at) {
			at, ok = mark, true
		}
	}
	if !ok {
		return nil
	}
	return time.After(max(at.Sub(now), 0))
}

// markDue marks sent the published rows whose delay has passed. Each mark
// is a commit, and so an fsync that the answer path's commits queue behind:
// marks are gathered for markSentEvery (or maxMarkBatch rows) into one. A
// row marked late is at worst published again after a crash, under the same
// message id.
func (rl *relay) markDue(ctx context.Context, now time.Time) error {
	n := 0
	for n < len(rl.pending) && n < maxMarkBatch && now.Sub(rl.pending[n].at) >= rl.markSentAfter {
		n++
	}
	if n == 0 || n < maxMarkBatch && now.Sub(rl.lastMark) < markSentEvery {
		return nil
	}
	rl.lastMark = now
	if err := rl.st.MarkSentThrough(ctx, rl.pending[n-1].id, now); err != nil {
		return err
	}
	rl.pending = append(rl.pending[:0], rl.pending[n:]...)
	return nil
}
