package record

import (
	"time"
)

// StepSnooze is the target of a snooze's step: it reminds one person, the
// one who snoozed, when the snooze ends (snoozes.step).
const StepSnooze = "snooze"

// Delegation makes another person an answerer of a pending question
// ("Ask someone else"): Body is the question with them added to its
// answerers and delegations, written over the old one.
type Delegation struct {
	AttemptID string
	Question  int64
	Body      []byte
	By        string
	Via       string
	Reason    string
	At        time.Time
	Outbox    []Message
	Log       []LogEntry
}

// Snooze moves Identity's next reminder of a pending question to Until
// ("Remind me later"); a later snooze of theirs replaces it.
type Snooze struct {
	AttemptID string
	Question  int64
	Identity  string
	Until     time.Time
	Via       string
	Reason    string
	At        time.Time
	Outbox    []Message
	Log       []LogEntry
}

// snoozeFirstStep numbers a question's snooze steps apart from its
// ladder's.
const snoozeFirstStep = 1000

// SnoozeStep is the step that ends a person's first snooze of a question
// whose steps' highest index is last (has false: it has none): one no
// step of the question holds, numbered apart from the ladder's. A later
// snooze of theirs moves the same step.
func SnoozeStep(last int, has bool) int {
	if !has {
		return snoozeFirstStep
	}
	return max(snoozeFirstStep, last+1)
}
