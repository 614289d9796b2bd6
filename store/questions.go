package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Key names one question at one task version. TaskVersion 0 in a lookup
// means the latest version of that question id.
type Key struct {
	Tenant      string
	JobID       string
	QuestionID  string
	TaskVersion int64
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s@%d", k.Tenant, k.JobID, k.QuestionID, k.TaskVersion)
}

// Record is a stored question and, once settled, how it ended.
type Record struct {
	ID int64
	Key
	Kind       string
	Body       []byte
	State      string
	AskedAt    time.Time
	Deadline   time.Time
	Action     string
	AnswerRaw  []byte
	Answer     []byte
	AnswerText string
	Comment    string
	By         string
	ByName     string
	Via        string
	Text       string
	SettledAt  time.Time
}

// Message is an outbox entry: published later on Subject with Nats-Msg-Id
// "ob-<row id>".
type Message struct {
	Subject string
	Data    []byte
}

// Step is a ladder step or the timeout, due at Due.
type Step struct {
	Index  int
	Target string
	Due    time.Time
}

// StepTimeout is the target of the last step: the question's timeout.
const StepTimeout = "timeout"

// NewQuestion is a question to record with its ladder and the messages that
// announce it.
type NewQuestion struct {
	Key
	Kind     string
	Body     []byte
	AskedAt  time.Time
	Deadline time.Time
	Steps    []Step
	Outbox   []Message
	// Supersede builds the messages announcing that an older pending
	// question of the job was superseded by this one's task version.
	Supersede func(old *Record) []Message
	// Proposal, on an approval, is recorded with it (proposals).
	Proposal *NewProposal
}

// AskStatus is what Ask did.
type AskStatus int

// Ask outcomes.
const (
	Asked     AskStatus = iota // recorded
	Duplicate                  // the same question and version was recorded before
	Stale                      // the job is already at a newer task version
	Refused                    // its proposal may not be asked for (AskResult.Problem)
)

// AskResult reports what Ask did.
type AskResult struct {
	Status     AskStatus
	JobVersion int64
	Record     *Record
	Superseded []Record
	// Problem says, on Refused, why, in the asker's words.
	Problem string
}

const recordColumns = `id, tenant, job_id, question_id, task_version, kind, body, state, asked_at, deadline,
	action, answer_raw, answer, answer_text, comment, by_id, by_name, via, text, settled_at`

type scanner interface{ Scan(...any) error }

// scanRecord reads recordColumns, then any extra columns into extra.
func scanRecord(row scanner, extra ...any) (*Record, error) {
	var r Record
	var body, raw, ans string
	var asked, deadline, settled int64
	// Sized for the extra columns too: appending them would copy it.
	dest := make([]any, 0, 20+len(extra))
	dest = append(dest, &r.ID, &r.Tenant, &r.JobID, &r.QuestionID, &r.TaskVersion, &r.Kind, &body, &r.State,
		&asked, &deadline, &r.Action, &raw, &ans, &r.AnswerText, &r.Comment, &r.By, &r.ByName, &r.Via, &r.Text, &settled)
	err := row.Scan(append(dest, extra...)...)
	if err != nil {
		return nil, err
	}
	r.Body = []byte(body)
	if raw != "" {
		r.AnswerRaw = []byte(raw)
	}
	if ans != "" {
		r.Answer = []byte(ans)
	}
	r.AskedAt, r.Deadline, r.SettledAt = fromMS(asked), fromMS(deadline), fromMS(settled)
	return &r, nil
}

// Ask records a new question before anything shows it: the question, its
// ladder, its audit entry and its outbox messages in one transaction. A
// newer task version supersedes the job's older pending questions in the
// same transaction.
func (s *Store) Ask(ctx context.Context, nq NewQuestion) (*AskResult, error) {
	res := &AskResult{}
	err := s.tx(ctx, func(tx *txn) error {
		*res = AskResult{}
		return askTx(ctx, tx, &nq, res)
	})
	if err != nil {
		return nil, fmt.Errorf("store: ask %s: %w", nq.Key, err)
	}
	return res, nil
}

// AskMany records many questions in one transaction (group commit), each
// as Ask would; the results are in the same order.
func (s *Store) AskMany(ctx context.Context, nqs []NewQuestion) ([]*AskResult, error) {
	results := make([]*AskResult, len(nqs))
	err := s.tx(ctx, func(tx *txn) error {
		for i := range nqs {
			results[i] = &AskResult{}
			if err := askTx(ctx, tx, &nqs[i], results[i]); err != nil {
				return fmt.Errorf("%s: %w", nqs[i].Key, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: ask %d questions: %w", len(nqs), err)
	}
	return results, nil
}

func askTx(ctx context.Context, tx *txn, nq *NewQuestion, res *AskResult) error {
	var current int64
	err := tx.queryRow(ctx, "SELECT task_version FROM jobs WHERE tenant = ? AND job_id = ?", nq.Tenant, nq.JobID).Scan(&current)
	known := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	res.JobVersion = current
	if known && nq.TaskVersion < current {
		var exists int
		err := tx.queryRow(ctx, "SELECT 1 FROM questions WHERE tenant = ? AND job_id = ? AND question_id = ? AND task_version = ?",
			nq.Tenant, nq.JobID, nq.QuestionID, nq.TaskVersion).Scan(&exists)
		if err == nil {
			res.Status = Duplicate
			return nil
		}
		res.Status = Stale
		return nil
	}
	if nq.Proposal != nil {
		if done, err := checkProposalTx(ctx, tx, nq, res); done || err != nil {
			return err
		}
	}
	at := ms(nq.AskedAt)
	result, err := tx.exec(ctx, `INSERT INTO questions (tenant, job_id, question_id, task_version, kind, body, state, asked_at, deadline)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		nq.Tenant, nq.JobID, nq.QuestionID, nq.TaskVersion, nq.Kind, string(nq.Body), bridge.StatePending, at, ms(nq.Deadline))
	if err != nil {
		return err
	}
	if n, _ := result.RowsAffected(); n == 0 {
		res.Status = Duplicate
		return nil
	}
	id, err := result.LastInsertId()
	if err != nil {
		return err
	}
	if !known || nq.TaskVersion > current {
		if _, err := tx.exec(ctx, `INSERT INTO jobs (tenant, job_id, task_version, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (tenant, job_id) DO UPDATE SET task_version = excluded.task_version, updated_at = excluded.updated_at`,
			nq.Tenant, nq.JobID, nq.TaskVersion, at); err != nil {
			return err
		}
		res.JobVersion = nq.TaskVersion
		var old []Record
		if known { // an unknown job has no questions yet
			if old, err = pendingOfJob(ctx, tx, nq.Tenant, nq.JobID, "task_version < ?", nq.TaskVersion); err != nil {
				return err
			}
		}
		for i := range old {
			var msgs []Message
			if nq.Supersede != nil {
				msgs = nq.Supersede(&old[i])
			}
			reason := SupersededText(nq.TaskVersion)
			if err := settleTx(ctx, tx, &old[i], bridge.StateSuperseded, nq.AskedAt, "", "", reason, msgs); err != nil {
				return err
			}
		}
		res.Superseded = old
	}
	if nq.Proposal != nil {
		if err := recordProposalTx(ctx, tx, nq, id); err != nil {
			return err
		}
	}
	for _, st := range nq.Steps {
		if _, err := tx.exec(ctx, "INSERT INTO steps (question, idx, target, due) VALUES (?, ?, ?, ?)", id, st.Index, st.Target, ms(st.Due)); err != nil {
			return err
		}
	}
	if err := auditTx(ctx, tx, id, "", bridge.StatePending, "", "", "asked", nq.AskedAt); err != nil {
		return err
	}
	if err := outboxTx(ctx, tx, nq.Outbox, nq.AskedAt); err != nil {
		return err
	}
	res.Status = Asked
	res.Record = &Record{ID: id, Key: nq.Key, Kind: nq.Kind, Body: nq.Body, State: bridge.StatePending, AskedAt: fromMS(at), Deadline: fromMS(ms(nq.Deadline))}
	return nil
}

func pendingOfJob(ctx context.Context, tx *txn, tenant, job, cond string, args ...any) ([]Record, error) {
	q := "SELECT " + recordColumns + " FROM questions WHERE tenant = ? AND job_id = ? AND state = 'pending'"
	if cond != "" {
		q += " AND " + cond
	}
	rows, err := tx.query(ctx, q+" ORDER BY id", append([]any{tenant, job}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// settleTx moves a pending question to state with a minimal settlement
// (cancel, supersede), clearing its ladder.
func settleTx(ctx context.Context, tx *txn, r *Record, state string, at time.Time, by, via, reason string, msgs []Message) error {
	res, err := tx.exec(ctx, "UPDATE questions SET state = ?, by_id = ?, via = ?, text = ?, settled_at = ? WHERE id = ? AND state = 'pending'",
		state, by, via, reason, ms(at), r.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotPending
	}
	if _, err := tx.exec(ctx, "DELETE FROM steps WHERE question = ?", r.ID); err != nil {
		return err
	}
	if err := auditTx(ctx, tx, r.ID, bridge.StatePending, state, by, via, reason, at); err != nil {
		return err
	}
	r.State, r.By, r.Via, r.Text, r.SettledAt = state, by, via, reason, fromMS(ms(at))
	return outboxTx(ctx, tx, msgs, at)
}

func auditTx(ctx context.Context, tx *txn, question int64, from, to, by, via, reason string, at time.Time) error {
	_, err := tx.exec(ctx, "INSERT INTO audit (question, from_state, to_state, by_id, via, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		question, from, to, by, via, reason, ms(at))
	return err
}

func outboxTx(ctx context.Context, tx *txn, msgs []Message, at time.Time) error {
	return insertOutbox(ctx, tx, outboxRows(make([]any, 0, 3*len(msgs)), msgs, at))
}

// outboxRows appends to args the outbox rows of msgs, written at at.
func outboxRows(args []any, msgs []Message, at time.Time) []any {
	for _, m := range msgs {
		args = append(args, m.Subject, m.Data, ms(at))
	}
	return args
}

// insertOutbox writes rows made by outboxRows in multi-row statements, in
// order, so the row ids keep it.
func insertOutbox(ctx context.Context, tx *txn, rows []any) error {
	return execRows(ctx, tx, "INSERT INTO outbox (subject, data, created_at) VALUES ", "(?, ?, ?)", "", 3, rows)
}

// Settlement is how a pending question ends by someone's answer or decline,
// or by its timeout.
type Settlement struct {
	Question   int64
	State      string
	Action     string
	AnswerRaw  []byte
	Answer     []byte
	AnswerText string
	Comment    string
	By         string
	ByName     string
	Via        string
	Text       string
	Reason     string
	At         time.Time
	// AttemptID, when set, is recorded so the same attempt is never decided twice.
	AttemptID string
	Outbox    []Message
	// Log is written to the job's trail with the settlement.
	Log []LogEntry
	// Proposal, on an approval, is what the settlement decides of it.
	Proposal *ProposalDecision
}

// Settle ends a pending question: compare-and-set on pending, the answer,
// the audit entry, the attempt's dedupe key and the outbox in one
// transaction. It returns ErrNotPending when someone settled it first and
// ErrDuplicate when the attempt was decided before.
func (s *Store) Settle(ctx context.Context, st Settlement) error {
	errs, err := s.Decide(ctx, []Decision{{Settle: &st}})
	if err != nil {
		return fmt.Errorf("store: settle question %d: %w", st.Question, err)
	}
	return errs[0]
}

// Refusal records a refused attempt with the messages telling the answerer.
type Refusal struct {
	AttemptID string
	Question  int64
	At        time.Time
	Outbox    []Message
	// Log is written to the job's trail with the refusal.
	Log []LogEntry
}

// Decision is one decided attempt: a settlement, a refusal, or one
// approval of several a proposal needs.
type Decision struct {
	Settle   *Settlement
	Refuse   *Refusal
	Approve  *ApprovalRecord
	Delegate *Delegation
	Snooze   *Snooze
}

// Enqueue writes messages to the outbox on their own.
func (s *Store) Enqueue(ctx context.Context, msgs []Message) error {
	if err := s.tx(ctx, func(tx *txn) error { return outboxTx(ctx, tx, msgs, time.Now()) }); err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	return nil
}

// SeenAttempt reports whether an attempt id was decided before.
func (s *Store) SeenAttempt(ctx context.Context, attemptID string) (bool, error) {
	var one int
	err := s.rs.queryRow(ctx, "SELECT 1 FROM attempts WHERE attempt_id = ?", attemptID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: attempt %s: %w", attemptID, err)
	}
	return true, nil
}

// JobCancel cancels a job's pending questions, or bumps its task version.
type JobCancel struct {
	Tenant     string
	JobID      string
	QuestionID string
	// NewVersion, when set, bumps the job to it (if it is not there yet)
	// and supersedes every pending question of an older version; without
	// it pending questions are cancelled.
	NewVersion int64
	Reason     string
	By         string
	Via        string
	At         time.Time
	// Key names the cancel message; a cancel whose key was applied before
	// changes nothing and returns ErrDuplicate. A redelivered version bump
	// would otherwise find its version current and cancel the questions
	// asked at it since.
	Key string
	// Outbox builds the messages announcing each question's new state.
	Outbox func(r *Record) []Message
}

// Cancel applies a JobCancel and returns the questions it ended.
func (s *Store) Cancel(ctx context.Context, c JobCancel) ([]Record, error) {
	var ended []Record
	err := s.tx(ctx, func(tx *txn) error {
		ended = nil
		if c.Key != "" {
			// Kept with the answer attempts' ids, and pruned with them.
			res, err := tx.exec(ctx, "INSERT INTO attempts (attempt_id, at) VALUES (?, ?) ON CONFLICT DO NOTHING", c.Key, ms(c.At))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return ErrDuplicate
			}
		}
		var current int64
		err := tx.queryRow(ctx, "SELECT task_version FROM jobs WHERE tenant = ? AND job_id = ?", c.Tenant, c.JobID).Scan(&current)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		known := err == nil
		state, reason := bridge.StateCancelled, c.Reason
		var list []Record
		if c.NewVersion > 0 {
			// A version bump. The job may be there already: a question of
			// the new version, published after the bump, can be stored
			// before it (they come through separate consumers). The bump
			// still ends only the questions below its version.
			if c.NewVersion > current || !known {
				if _, err := tx.exec(ctx, `INSERT INTO jobs (tenant, job_id, task_version, updated_at) VALUES (?, ?, ?, ?)
					ON CONFLICT (tenant, job_id) DO UPDATE SET task_version = excluded.task_version, updated_at = excluded.updated_at`,
					c.Tenant, c.JobID, c.NewVersion, ms(c.At)); err != nil {
					return err
				}
			}
			state = bridge.StateSuperseded
			reason = SupersededText(c.NewVersion)
			list, err = pendingOfJob(ctx, tx, c.Tenant, c.JobID, "task_version < ?", c.NewVersion)
		} else if c.QuestionID != "" {
			list, err = pendingOfJob(ctx, tx, c.Tenant, c.JobID, "question_id = ?", c.QuestionID)
		} else {
			list, err = pendingOfJob(ctx, tx, c.Tenant, c.JobID, "")
		}
		if err != nil {
			return err
		}
		for i := range list {
			list[i].State = state
			var msgs []Message
			if c.Outbox != nil {
				msgs = c.Outbox(&list[i])
			}
			list[i].State = bridge.StatePending
			if err := settleTx(ctx, tx, &list[i], state, c.At, c.By, c.Via, reason, msgs); err != nil {
				return err
			}
		}
		ended = list
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: cancel %s/%s: %w", c.Tenant, c.JobID, err)
	}
	return ended, nil
}

// Get reads a question by its row id.
func (s *Store) Get(ctx context.Context, id int64) (*Record, error) {
	r, err := scanRecord(s.rs.queryRow(ctx, "SELECT "+recordColumns+" FROM questions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get question %d: %w", id, err)
	}
	return r, nil
}

// Find reads a question by key; TaskVersion 0 finds the latest version.
func (s *Store) Find(ctx context.Context, k Key) (*Record, error) { return findIn(ctx, s.rs, k) }

// rowQuerier is a connection or a transaction that runs one-row queries.
type rowQuerier interface {
	queryRow(ctx context.Context, query string, args ...any) *sql.Row
}

func findIn(ctx context.Context, db rowQuerier, k Key) (*Record, error) {
	where, args := byKey(k)
	r, err := scanRecord(db.queryRow(ctx, "SELECT "+recordColumns+" FROM questions q"+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", k, err)
	}
	return r, nil
}

// byKey is the WHERE clause (and its arguments) that finds k in the
// questions table q: the latest version when k names none.
func byKey(k Key) (string, []any) {
	where := " WHERE q.tenant = ? AND q.job_id = ? AND q.question_id = ?"
	args := []any{k.Tenant, k.JobID, k.QuestionID}
	if k.TaskVersion != 0 {
		where += " AND q.task_version = ?"
		args = append(args, k.TaskVersion)
	}
	return where + " ORDER BY q.task_version DESC LIMIT 1", args
}

// Answerable is a question as deciding an answer needs it, read at once:
// the record, its job's current task version and the messages showing it.
type Answerable struct {
	*Record
	JobVersion int64
	Messages   []bridge.MessageRef
}

// FindAnswerable is Find, the job's version and the question's messages in
// one read; deciding an answer is the hot path.
func (s *Store) FindAnswerable(ctx context.Context, k Key) (*Answerable, error) {
	return findAnswerableIn(ctx, s.rs, k)
}

// answerableColumns follow recordColumns for an Answerable: the job's task
// version and the messages showing the question (q is the questions table).
const answerableColumns = `coalesce((SELECT j.task_version FROM jobs j WHERE j.tenant = q.tenant AND j.job_id = q.job_id), 0),
		coalesce((SELECT json_group_array(json_array(d.platform, d.channel, d.message_id, d.thread))
			FROM deliveries d WHERE d.question = q.id AND d.ok = 1 AND d.message_id != ''), '[]')`

// scanAnswerable reads recordColumns and answerableColumns.
func scanAnswerable(row scanner) (*Answerable, error) {
	var a Answerable
	var refs string
	r, err := scanRecord(row, &a.JobVersion, &refs)
	if err != nil {
		return nil, err
	}
	a.Record = r
	var rows [][4]string
	if err := json.Unmarshal([]byte(refs), &rows); err != nil {
		return nil, fmt.Errorf("messages of question %s: %w", r.Key, err)
	}
	for _, m := range rows {
		a.Messages = append(a.Messages, bridge.MessageRef{Platform: m[0], Channel: m[1], MessageID: m[2], Thread: m[3]})
	}
	return &a, nil
}

func findAnswerableIn(ctx context.Context, db rowQuerier, k Key) (*Answerable, error) {
	where, args := byKey(k)
	a, err := scanAnswerable(db.queryRow(ctx, "SELECT "+recordColumns+", "+answerableColumns+" FROM questions q"+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", k, err)
	}
	return a, nil
}

// ListFilter selects questions for a list page, ordered by row id.
type ListFilter struct {
	Tenant string
	JobID  string
	// State is one state, or empty for every state.
	State   string
	AfterID int64
	Limit   int
}

// List returns one page of questions. It reads through indexes only, so
// the first page of one tenant is quick with a million pending questions.
func (s *Store) List(ctx context.Context, f ListFilter) ([]Record, error) {
	var conds []string
	var args []any
	if f.State != "" {
		conds = append(conds, "state = ?")
		args = append(args, f.State)
	}
	if f.Tenant != "" {
		conds = append(conds, "tenant = ?")
		args = append(args, f.Tenant)
	}
	if f.JobID != "" {
		conds = append(conds, "job_id = ?")
		args = append(args, f.JobID)
	}
	if f.AfterID > 0 {
		conds = append(conds, "id > ?")
		args = append(args, f.AfterID)
	}
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	q := "SELECT " + recordColumns + " FROM questions"
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	rows, err := s.rs.query(ctx, q+" ORDER BY id LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// Audit returns a question's transitions, oldest first.
func (s *Store) Audit(ctx context.Context, question int64) ([]bridge.AuditEntry, error) {
	rows, err := s.rs.query(ctx, "SELECT from_state, to_state, by_id, via, reason, at FROM audit WHERE question = ? ORDER BY id", question)
	if err != nil {
		return nil, fmt.Errorf("store: audit %d: %w", question, err)
	}
	defer rows.Close()
	var out []bridge.AuditEntry
	for rows.Next() {
		var e bridge.AuditEntry
		var at int64
		if err := rows.Scan(&e.From, &e.To, &e.By, &e.Via, &e.Reason, &at); err != nil {
			return nil, fmt.Errorf("store: audit %d: %w", question, err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// CountByState counts questions in each state.
func (s *Store) CountByState(ctx context.Context) (map[string]int64, error) {
	rows, err := s.rs.query(ctx, "SELECT state, COUNT(*) FROM questions GROUP BY state")
	if err != nil {
		return nil, fmt.Errorf("store: count: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("store: count: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

// MaxQuestionIDJobs bounds the jobs FindQuestionIDs returns.
const MaxQuestionIDJobs = 50

// FindQuestionIDs finds the latest version of a question id in every job
// that has one (at most MaxQuestionIDJobs jobs); tenant and job narrow the
// search when given. The caller picks among them, say by what the asker
// may see.
func (s *Store) FindQuestionIDs(ctx context.Context, tenant, job, questionID string) ([]*Record, error) {
	q := "SELECT " + recordColumns + " FROM questions WHERE question_id = ?"
	args := []any{questionID}
	if tenant != "" {
		q += " AND tenant = ?"
		args = append(args, tenant)
	}
	if job != "" {
		q += " AND job_id = ?"
		args = append(args, job)
	}
	rows, err := s.rs.query(ctx, q+" ORDER BY task_version DESC, id DESC LIMIT 200", args...)
	if err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", questionID, err)
	}
	defer rows.Close()
	var out []*Record
	seen := map[[2]string]bool{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("store: find question %s: %w", questionID, err)
		}
		if k := [2]string{r.Tenant, r.JobID}; !seen[k] && len(out) < MaxQuestionIDJobs {
			seen[k] = true
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: find question %s: %w", questionID, err)
	}
	return out, nil
}
