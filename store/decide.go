package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// Decide applies many decisions in one transaction, so that one fsync
// carries a whole batch of answers (group commit). A decision that loses
// (ErrNotPending, ErrDuplicate) leaves nothing behind and does not disturb
// the others. The returned slice holds each decision's outcome; the error
// is for the transaction as a whole.
func (s *Store) Decide(ctx context.Context, ds []record.Decision) ([]error, error) {
	return s.DecideEach(ctx, len(ds), func(i int, _ record.Lookup) (record.Decision, error) { return ds[i], nil })
}

// DecideEach decides n attempts in one write transaction (group commit).
// decide reads what it needs through the Lookup, which sees every earlier
// decision of the batch, so a decision is made on the state it changes:
// no other writer can come between the read and the write. A decide error
// rolls the whole batch back. The returned slice holds each decision's
// outcome (nil, ErrNotPending or ErrDuplicate).
//
// The writes are gathered and run as a few multi-row statements (see
// decideBatch): one statement per row was most of the store's cost.
func (s *Store) DecideEach(ctx context.Context, n int, decide func(i int, l record.Lookup) (record.Decision, error)) ([]error, error) {
	errs := make([]error, n)
	err := s.tx(ctx, func(tx *txn) error {
		b := &decideBatch{tx: tx, errs: errs, questions: map[int64]bool{}, attempts: map[string]bool{}}
		for i := range n {
			d, err := decide(i, b)
			if err != nil {
				return err
			}
			if b.touches(d) {
				if err := b.flush(ctx); err != nil {
					return err
				}
			}
			b.add(i, d)
		}
		return b.flush(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("store: decide %d attempts: %w", n, err)
	}
	return errs, nil
}

// decideBatch holds a batch's decisions until they are written together.
// Decisions waiting in it never share a question or an attempt id: one
// that would is written after the others are (see touches), and a read of
// a question with a waiting settlement writes the waiting ones first, so
// every read and every decision sees the decisions before it.
type decideBatch struct {
	tx        *txn
	errs      []error
	waiting   []waitingDecision
	questions map[int64]bool  // questions settled by waiting decisions
	attempts  map[string]bool // attempt ids of waiting decisions

	prefetched map[record.Key]*record.Answerable // read by Prefetch and not written since
}

type waitingDecision struct {
	i int
	d record.Decision
}

func (b *decideBatch) Prefetch(ctx context.Context, keys []record.Key) error {
	var args []any
	for _, k := range keys {
		if k.TaskVersion != 0 {
			args = append(args, k.Tenant, k.JobID, k.QuestionID, k.TaskVersion)
		}
	}
	if b.prefetched == nil {
		b.prefetched = map[record.Key]*record.Answerable{}
	}
	return chunkRows(args, 4, func(rows int, args []any) error {
		q := multiRow("SELECT "+recordColumns+", "+answerableColumns+" FROM (VALUES ", "(?, ?, ?, ?)",
			") AS k JOIN questions q ON q.tenant = k.column1 AND q.job_id = k.column2 AND q.question_id = k.column3 AND q.task_version = k.column4", rows)
		return queryEach(ctx, b.tx, q, args, func(rows *sql.Rows) error {
			a, err := scanAnswerable(rows)
			if err != nil {
				return fmt.Errorf("store: prefetch questions: %w", err)
			}
			b.prefetched[a.Key] = a
			return nil
		})
	})
}

// dropPrefetched forgets what Prefetch read about the waiting decisions'
// questions, which they are about to change.
func (b *decideBatch) dropPrefetched() {
	for k, a := range b.prefetched {
		if b.questions[a.ID] {
			delete(b.prefetched, k)
		}
	}
}

func (b *decideBatch) FindAnswerable(ctx context.Context, k record.Key) (*record.Answerable, error) {
	if a, ok := b.prefetched[k]; ok && !b.questions[a.ID] {
		// A copy: the caller may keep or change it.
		c, r := *a, *a.Record
		c.Record = &r
		return &c, nil
	}
	a, err := findAnswerableIn(ctx, b.tx, k)
	if err == nil && b.questions[a.ID] {
		if err := b.flush(ctx); err != nil {
			return nil, err
		}
		return findAnswerableIn(ctx, b.tx, k)
	}
	return a, err
}

func (b *decideBatch) Find(ctx context.Context, k record.Key) (*record.Record, error) {
	r, err := findIn(ctx, b.tx, k)
	if err == nil && b.questions[r.ID] {
		if err := b.flush(ctx); err != nil {
			return nil, err
		}
		return findIn(ctx, b.tx, k)
	}
	return r, err
}

func (b *decideBatch) Proposal(ctx context.Context, tenant, id string) (*record.Proposal, error) {
	p, err := findProposalIn(ctx, b.tx, tenant, id)
	if err == nil && b.questions[p.Question] {
		if err := b.flush(ctx); err != nil {
			return nil, err
		}
		return findProposalIn(ctx, b.tx, tenant, id)
	}
	return p, err
}

// parts are d's common parts (none for a decision of no kind).
func parts(d record.Decision) record.DecisionParts {
	p, _ := d.Parts()
	return p
}

// touches reports whether d shares a question or an attempt id with a
// waiting decision.
func (b *decideBatch) touches(d record.Decision) bool {
	p := parts(d)
	id, question := p.AttemptID, p.Question
	if id != "" && b.attempts[id] {
		return true
	}
	return d.Refuse == nil && question != 0 && b.questions[question]
}

func (b *decideBatch) add(i int, d record.Decision) {
	p := parts(d)
	id, question := p.AttemptID, p.Question
	switch {
	case d.Settle != nil, d.Approve != nil, d.Delegate != nil, d.Snooze != nil:
		b.questions[question] = true
	case d.Refuse == nil:
		return
	}
	if id != "" {
		b.attempts[id] = true
	}
	b.waiting = append(b.waiting, waitingDecision{i, d})
}

// flush writes the waiting decisions: their attempts' dedupe rows (an
// attempt decided before loses with ErrDuplicate), the compare-and-set of
// the settled questions on pending (one no longer pending loses with
// ErrNotPending and takes its dedupe row back), their ladders removed,
// their audit rows, and every winner's outbox rows in decision order. A
// decision that loses writes nothing.
func (b *decideBatch) flush(ctx context.Context) error {
	if len(b.waiting) == 0 {
		return nil
	}
	w := b.waiting
	b.waiting = b.waiting[:0]
	b.dropPrefetched()
	clear(b.questions)
	clear(b.attempts)
	tx := b.tx

	// Attempts: a conflict means it was decided before.
	attemptRows := make([]any, 0, 3*len(w))
	for _, x := range w {
		if p := parts(x.d); p.AttemptID != "" {
			attemptRows = append(attemptRows, p.AttemptID, p.Question, ms(p.At))
		}
	}
	inserted, err := returned[string](ctx, tx, "INSERT INTO attempts (attempt_id, question, at) VALUES ", "(?, ?, ?)",
		" ON CONFLICT DO NOTHING RETURNING attempt_id", 3, attemptRows)
	if err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	live := w[:0:0]
	for _, x := range w {
		if id := parts(x.d).AttemptID; id != "" && !inserted[id] {
			b.errs[x.i] = record.ErrDuplicate
			continue
		}
		live = append(live, x)
	}

	// Settlements: compare-and-set on pending.
	settleRows := make([]any, 0, 12*len(live))
	for _, x := range live {
		if st := x.d.Settle; st != nil {
			settleRows = append(settleRows, st.Question, st.State, st.Action, string(st.AnswerRaw), string(st.Answer), st.AnswerText,
				st.Comment, st.By, st.ByName, st.Via, st.Text, ms(st.At))
		}
	}
	updated, err := returned[int64](ctx, tx, "UPDATE questions SET state = v.column2, action = v.column3, answer_raw = v.column4, "+
		"answer = v.column5, answer_text = v.column6, comment = v.column7, by_id = v.column8, by_name = v.column9, via = v.column10, "+
		"text = v.column11, settled_at = v.column12 FROM (VALUES ", "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		") AS v WHERE questions.id = v.column1 AND questions.state = 'pending' RETURNING questions.id", 12, settleRows)
	if err != nil {
		return fmt.Errorf("settle questions: %w", err)
	}
	won, takeBack, settled, audit, err := b.winners(ctx, live, updated)
	if err != nil {
		return err
	}
	n := 0
	for _, x := range won {
		n += len(parts(x.d).Outbox)
	}
	outbox := make([]any, 0, 3*n)
	var log []record.LogEntry
	for _, x := range won {
		p := parts(x.d)
		outbox = outboxRows(outbox, p.Outbox, p.At)
		log = append(log, p.Log...)
	}
	if err := execRows(ctx, tx, "DELETE FROM attempts WHERE attempt_id IN (", "?", ")", 1, takeBack); err != nil {
		return fmt.Errorf("take back attempts: %w", err)
	}
	if err := execRows(ctx, tx, "DELETE FROM steps WHERE question IN (", "?", ")", 1, settled); err != nil {
		return fmt.Errorf("remove ladders: %w", err)
	}
	if err := execRows(ctx, tx, "INSERT INTO audit (question, from_state, to_state, by_id, via, reason, at) VALUES ",
		"(?, ?, ?, ?, ?, ?, ?)", "", 7, audit); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := insertOutbox(ctx, tx, outbox); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if err := insertLog(ctx, tx, log); err != nil {
		return fmt.Errorf("job log: %w", err)
	}
	return nil
}

// winners sorts the live decisions into those that won (a settlement whose
// compare-and-set on pending took, with its proposal decided; an approval,
// a delegation or a snooze recorded on a question still pending; a
// refusal) and those that lost
// (ErrNotPending, their attempt ids to take back), and gathers the rows the
// settlements remove from the ladder and add to the audit.
func (b *decideBatch) winners(ctx context.Context, live []waitingDecision, updated map[int64]bool) (won []waitingDecision, takeBack, settled, audit []any, err error) {
	settled, audit = make([]any, 0, len(live)), make([]any, 0, 7*len(live))
	for _, x := range live {
		lost := false
		switch {
		case x.d.Settle != nil:
			st := x.d.Settle
			if lost = !updated[st.Question]; lost {
				break
			}
			reason := st.Reason
			if reason == "" {
				reason = st.Text
			}
			settled = append(settled, st.Question)
			audit = append(audit, st.Question, bridge.StatePending, st.State, st.By, st.Via, reason, ms(st.At))
			if st.Proposal != nil {
				if err := decideProposalTx(ctx, b.tx, st.Question, st.Proposal, st.At); err != nil {
					return nil, nil, nil, nil, err
				}
			}
		case x.d.Approve != nil:
			ok, err := recordApprovalTx(ctx, b.tx, x.d.Approve)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			lost = !ok
		case x.d.Delegate != nil:
			ok, err := delegateTx(ctx, b.tx, x.d.Delegate)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			lost = !ok
		case x.d.Snooze != nil:
			ok, err := snoozeTx(ctx, b.tx, x.d.Snooze)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			lost = !ok
		}
		if lost {
			b.errs[x.i] = record.ErrNotPending
			if id := parts(x.d).AttemptID; id != "" {
				takeBack = append(takeBack, id)
			}
			continue
		}
		won = append(won, x)
	}
	return won, takeBack, settled, audit, nil
}

// maxRowsPerStatement bounds a multi-row statement. Rows go in chunks of
// powers of two up to it, so a handful of prepared statements per kind
// serve every batch size.
const maxRowsPerStatement = 64

// chunkRows calls f for consecutive chunks of args, each holding a power of
// two (at most maxRowsPerStatement) of rows of width columns.
func chunkRows(args []any, width int, f func(rows int, args []any) error) error {
	for n := len(args) / width; n > 0; {
		c := maxRowsPerStatement
		for c > n {
			c /= 2
		}
		if err := f(c, args[:c*width]); err != nil {
			return err
		}
		args, n = args[c*width:], n-c
	}
	return nil
}

type multiRowKey struct {
	head, row, tail string
	rows            int
}

var multiRowSQL sync.Map // multiRowKey → string

// multiRow is head, rows copies of row joined by commas, then tail.
func multiRow(head, row, tail string, rows int) string {
	k := multiRowKey{head, row, tail, rows}
	if q, ok := multiRowSQL.Load(k); ok {
		return q.(string)
	}
	var sb strings.Builder
	sb.WriteString(head)
	for i := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(row)
	}
	sb.WriteString(tail)
	q, _ := multiRowSQL.LoadOrStore(k, sb.String())
	return q.(string)
}

func execRows(ctx context.Context, tx *txn, head, row, tail string, width int, args []any) error {
	return chunkRows(args, width, func(rows int, args []any) error {
		_, err := tx.exec(ctx, multiRow(head, row, tail, rows), args...)
		return err
	})
}

// returned runs a multi-row statement with a one-column RETURNING clause
// and collects what it returned.
func returned[T comparable](ctx context.Context, tx *txn, head, row, tail string, width int, args []any) (map[T]bool, error) {
	got := map[T]bool{}
	err := chunkRows(args, width, func(rows int, args []any) error {
		return queryEach(ctx, tx, multiRow(head, row, tail, rows), args, func(r *sql.Rows) error {
			var v T
			if err := r.Scan(&v); err != nil {
				return err
			}
			got[v] = true
			return nil
		})
	})
	return got, err
}

// queryEach runs q and calls each for every row it returns.
func queryEach(ctx context.Context, tx *txn, q string, args []any, each func(*sql.Rows) error) error {
	rows, err := tx.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
