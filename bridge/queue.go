package bridge

import (
	"encoding/json"
	"time"
)

// Priorities order a job's pending questions (docs/contract.md, "The
// queue"): blocking first, then high, medium and low; a question that
// names none is blocking.
const (
	PriorityBlocking = "blocking"
	PriorityHigh     = "high"
	PriorityMedium   = "medium"
	PriorityLow      = "low"
)

var priorities = []string{PriorityBlocking, PriorityHigh, PriorityMedium, PriorityLow}

// PriorityRank is p's place in the queue, 0 for blocking (and for none),
// 3 for low; -1 for a value that is not a priority.
func PriorityRank(p string) int {
	if p == "" {
		return 0
	}
	for i, v := range priorities {
		if v == p {
			return i
		}
	}
	return -1
}

// PriorityOf is q's priority, blocking when it names none.
func (q *Question) PriorityOf() string {
	if q == nil || q.Priority == "" {
		return PriorityBlocking
	}
	return q.Priority
}

// Urgent reports whether a nudge re-surfaces a question of priority p in
// its thread: blocking and high questions are; medium and low ones wait
// in the queue and in reminders.
func Urgent(p string) bool { return p == "" || p == PriorityBlocking || p == PriorityHigh }

// APIQueue answers a job's pending questions in queue order.
const APIQueue = PrefixAPI + ".queue"

// QueueRequest asks ask.v1.api.queue for one job's queue as an identity
// may see it.
type QueueRequest struct {
	Tenant string   `json:"tenant"`
	JobID  string   `json:"job_id"`
	As     string   `json:"as"`
	Roles  []string `json:"roles,omitempty"`
}

// QueueItem is one pending question of a job's queue. A question the
// asker may know of but not read is Hidden: no blocked tools are named.
type QueueItem struct {
	QuestionID  string `json:"question_id"`
	TaskVersion int64  `json:"task_version"`
	Priority    string `json:"priority"`
	// Staleness is how many ladder rounds passed without an answer.
	Staleness    int       `json:"staleness"`
	AskedAt      time.Time `json:"asked_at"`
	Deadline     time.Time `json:"deadline,omitzero"`
	BlockedTools []string  `json:"blocked_tools"`
	// Text is what the question asks (an addition), for a reader who may
	// read it; empty when Hidden.
	Text       string `json:"text,omitempty"`
	Hidden     bool   `json:"hidden,omitempty"`
	Restricted bool   `json:"restricted,omitempty"`
}

// QueueReply answers QueueRequest: the questions in queue order.
type QueueReply struct {
	// Tenant is the job's tenant, found when the request named none.
	Tenant    string      `json:"tenant,omitempty"`
	Questions []QueueItem `json:"questions"`
	Error     string      `json:"error,omitempty"`
}

// MarshalJSON writes a refused request as {"error": "..."} alone.
func (r QueueReply) MarshalJSON() ([]byte, error) {
	if r.Error != "" && r.Questions == nil {
		return json.Marshal(errorOnly{r.Error})
	}
	type plain QueueReply
	return json.Marshal(plain(r))
}

// Nudge, on a reminded or escalated event, is one ladder round of a job:
// the event's own question is the top of the job's queue, and Questions
// are all the job's pending questions in queue order, the top first, each
// with whom this round reminds of it (docs/contract.md, "Nudges").
type Nudge struct {
	// Resurface says the job's thread shows the top question again: it is
	// blocking or high, and this is the round's first event for the job.
	Resurface bool            `json:"resurface,omitempty"`
	Questions []NudgeQuestion `json:"questions"`
}

// NudgeQuestion is one pending question of a nudged job.
type NudgeQuestion struct {
	QueueItem
	Question *Question `json:"question,omitempty"`
	// Step and Targets are the ladder step this round fired for the
	// question and whom it reminds; empty when none of its steps fired.
	Step    string   `json:"step,omitempty"`
	Targets []string `json:"targets,omitempty"`
}

// More is how many of the job's questions wait besides the top one.
func (n *Nudge) More() int {
	if n == nil || len(n.Questions) == 0 {
		return 0
	}
	return len(n.Questions) - 1
}

// For is the questions of the round that remind target, in queue order.
func (n *Nudge) For(target string) []NudgeQuestion {
	if n == nil {
		return nil
	}
	var out []NudgeQuestion
	for _, q := range n.Questions {
		for _, t := range q.Targets {
			if t == target {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

// WithoutTop is ev as it stands once its top question ended before the
// round reached a front-end: nothing to re-surface, and the reminders of
// the job's other questions still due. nil when the round is only about
// that question.
func WithoutTop(ev *Event) *Event {
	if ev.Nudge == nil {
		return nil
	}
	n := &Nudge{}
	for _, q := range ev.Nudge.Questions {
		if q.QuestionID != ev.QuestionID || q.TaskVersion != ev.TaskVersion {
			n.Questions = append(n.Questions, q)
		}
	}
	reminds := false
	for _, q := range n.Questions {
		reminds = reminds || len(q.Targets) > 0
	}
	if !reminds {
		return nil
	}
	out := *ev
	out.Nudge = n
	return &out
}
