package record

import (
	"context"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Backend is the durable record a runtime is given: the one interface a
// store implements. The SQLite store (package store) and the JetStream
// store (store/jsstore) implement it, and the conformance suite
// (store/storetest) runs every test against both. Each transition is one
// atomic write: a write that returns nil is durable, and one that fails
// left nothing behind. Errors callers decide on are ErrNotFound,
// ErrNotPending, ErrDuplicate and ErrStepGone.
//
// A backend may also implement Shareable, DueWatcher and RelayLeaser.
type Backend interface {
	// Questions.

	// AskMany records questions in one transaction, each with its
	// supersede, proposal and outbox rows; results in the same order.
	AskMany(ctx context.Context, nqs []NewQuestion) ([]*AskResult, error)
	// Find reads a question by key; TaskVersion 0 finds the latest.
	Find(ctx context.Context, k Key) (*Record, error)
	// Get reads a question by its row id.
	Get(ctx context.Context, id int64) (*Record, error)
	// FindQuestionIDs finds the latest version of a question id in every
	// job that has one (at most MaxQuestionIDJobs); tenant and job narrow.
	FindQuestionIDs(ctx context.Context, tenant, job, questionID string) ([]*Record, error)
	// List returns one page of questions.
	List(ctx context.Context, f ListFilter) ([]Record, error)
	// CountByState counts questions in each state.
	CountByState(ctx context.Context) (map[string]int64, error)
	// Settle ends a pending question (compare-and-set on pending) with its
	// audit entry, attempt key and outbox rows.
	Settle(ctx context.Context, st Settlement) error
	// Cancel applies a JobCancel and returns the questions it ended.
	Cancel(ctx context.Context, c JobCancel) ([]Record, error)
	// DecideEach reads, decides and commits n decisions in few
	// transactions; decide may be called again on a conflict. Each
	// outcome is nil, ErrNotPending or ErrDuplicate.
	DecideEach(ctx context.Context, n int, decide func(i int, l Lookup) (Decision, error)) ([]error, error)
	// Audit returns a question's transitions, oldest first.
	Audit(ctx context.Context, question int64) ([]bridge.AuditEntry, error)

	// Chat messages and deliveries.

	// Messages lists the chat messages showing a question.
	Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error)
	// JobThreads returns the threads a job's questions were shown in.
	JobThreads(ctx context.Context, tenant, job string) ([]bridge.MessageRef, error)
	// RecordDelivery stores a platform's report (the latest per platform
	// wins) and returns every report for the question.
	RecordDelivery(ctx context.Context, question int64, d bridge.Delivery, at time.Time) ([]DeliveryRow, error)
	// RecordDeliveries stores reports in one transaction, in order.
	RecordDeliveries(ctx context.Context, reports []ReportedDelivery, at time.Time) error
	// Reask pages through the pending questions not shown on platforms
	// and writes, for each page, the messages build makes.
	Reask(ctx context.Context, platforms []string, askedBy time.Time, cur ReaskCursor, limit int,
		build func(r *Record, shownOn []string) (Message, bool, error)) (ReaskCursor, int, bool, error)

	// The outbox.

	// Enqueue writes messages to the outbox on their own.
	Enqueue(ctx context.Context, msgs []Message) error
	// Unsent returns up to limit unsent rows after row afterID, oldest
	// first, with OldAt set on those written before oldBefore.
	Unsent(ctx context.Context, afterID int64, limit int, oldBefore time.Time) ([]OutboxRow, error)
	// MarkSentThrough marks every unsent row up to and including row
	// through published: the relay publishes the rows in order and marks
	// a run of them once JetStream acknowledged the last with all before
	// it, so one mark covers the run.
	MarkSentThrough(ctx context.Context, through int64, at time.Time) error
	// OutboxBacklogAfter counts unsent rows after row id after.
	OutboxBacklogAfter(ctx context.Context, after int64) (int64, error)

	// Ladders and queues.

	// NextDue is the earliest due time of any step.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// DueSteps returns up to limit steps due at or before now, earliest
	// first.
	DueSteps(ctx context.Context, now time.Time, limit int) ([]DueStep, error)
	// JobSteps are the steps of one kind (target) of a job's pending
	// questions due at or before before, earliest first.
	JobSteps(ctx context.Context, tenant, job, target string, before time.Time) ([]DueStep, error)
	// JobQueue reads a job's pending questions, oldest first.
	JobQueue(ctx context.Context, tenant, job string) ([]Queued, error)
	// FireRound removes, audits and re-arms a round's steps and writes
	// msgs in one transaction; ErrStepGone, and nothing done, when a step
	// fired already.
	FireRound(ctx context.Context, steps []RoundStep, at time.Time, msgs []Message) error
	// Snoozes are the snoozes on a question still to end at now.
	Snoozes(ctx context.Context, question int64, now time.Time) (map[string]time.Time, error)
	// SnoozeOf is the snooze a snooze step ends; ErrNotFound for none.
	SnoozeOf(ctx context.Context, question int64, step int) (string, time.Time, error)

	// Proposals and the gate.

	// ProposalOf reads the proposal a question asks for now; ErrNotFound
	// when it asks for none.
	ProposalOf(ctx context.Context, question int64) (*Proposal, error)
	// FindProposal reads a proposal by its tenant and id.
	FindProposal(ctx context.Context, tenant, id string) (*Proposal, error)
	// RecordExecution records a proposal's execution report, its log entry
	// and messages in one transaction, and returns the proposal.
	RecordExecution(ctx context.Context, e ExecutionReport) (*Proposal, error)
	// GateJob reads what the gate needs of a job.
	GateJob(ctx context.Context, tenant, job string) (GateJob, error)
	// GateCommit writes a batch of the gate's decisions in one transaction.
	GateCommit(ctx context.Context, batch []GateWrite) error
	// GateDecisions counts the gate's refusals in [since, until).
	GateDecisions(ctx context.Context, tenant string, since, until time.Time) ([]GateDecision, error)

	// Jobs' trails.

	// RecordNotice writes a notice to its job's trail and the messages
	// announcing it to the outbox, in one transaction.
	RecordNotice(ctx context.Context, e LogEntry, noticeID string, msgs []Message) error
	// JobQuestions returns every question of a job, every task version,
	// in the order they were asked.
	JobQuestions(ctx context.Context, tenant, job string) ([]Record, error)
	// JobAudit returns the transitions of a job's questions in the order
	// they were written.
	JobAudit(ctx context.Context, tenant, job string) ([]JobAuditEntry, error)
	// JobLog returns a job's trail in the order it was written.
	JobLog(ctx context.Context, tenant, job string) ([]LogEntry, error)
	// ClarifyQuestions returns the questions of every job that had one
	// asked since since (of tenant, when given).
	ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]ClarifyQuestion, error)

	// Pruning.

	// PruneSent deletes outbox rows sent before the cutoff.
	PruneSent(ctx context.Context, before time.Time) (int64, error)
	// PruneAttempts forgets attempt ids decided before the cutoff.
	PruneAttempts(ctx context.Context, before time.Time) (int64, error)
	// PruneGateLog deletes the gate's plain decisions logged before the
	// cutoff.
	PruneGateLog(ctx context.Context, before time.Time) (int64, error)

	// The runtime's own state.

	// Meta reads a value the runtime keeps about itself; "" for none.
	Meta(ctx context.Context, key string) (string, error)
	// SetMeta writes a value the runtime keeps about itself.
	SetMeta(ctx context.Context, key, value string) error
	// Instance names the database, whose runtime holds the lease.
	Instance() string
}

// Shareable is a Backend that says whether other runtimes share it. One
// that reports true is shared by any number of runtimes (replicas), each
// transition a compare-and-set, so the runtime takes no lease. One that
// does not implement it, or reports false, is one runtime's alone.
type Shareable interface {
	Shared() bool
}

// DueWatcher is a shared Backend that tells when the next due ladder step
// may have changed, whichever replica changed it: the ladder then reads
// NextDue again instead of sleeping until its next look.
type DueWatcher interface {
	DueChanged() <-chan struct{}
}

// RelayLeaser is a shared Backend whose replicas take turns at the outbox
// relay: the one holding the lease publishes the rows, so that each row is
// published once however many replicas there are.
type RelayLeaser interface {
	// HoldRelay claims the relay for holder, or renews its claim, for ttl,
	// and reports whether holder holds it; an error leaves that unknown.
	HoldRelay(ctx context.Context, holder string, ttl time.Duration) (bool, error)
	// ReleaseRelay gives holder's claim up, so that another replica takes
	// over without waiting out the ttl.
	ReleaseRelay(ctx context.Context, holder string) error
	// OutboxChanged is signalled when rows were written to the outbox,
	// whichever replica wrote them.
	OutboxChanged() <-chan struct{}
}
