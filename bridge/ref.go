package bridge

import "strconv"

// Ref names one question at one task version: what a card shows.
type Ref struct {
	Tenant     string
	JobID      string
	QuestionID string
	Version    int64
}

// RefOf is the question an event is about.
func RefOf(ev *Event) Ref {
	return Ref{Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID, Version: ev.TaskVersion}
}

// String is the compact text form, e.g. "acme.job-1.q-1.3" (tokens cannot
// hold dots): a key in maps, and the reference in Slack's ids.
func (r Ref) String() string {
	return r.Tenant + "." + r.JobID + "." + r.QuestionID + "." + strconv.FormatInt(r.Version, 10)
}

// MessageOn is the message on platform the event says shows its question,
// nil when it names none.
func MessageOn(ev *Event, platform string) *MessageRef {
	for i, m := range ev.Messages {
		if m.Platform == platform && m.MessageID != "" {
			return &ev.Messages[i]
		}
	}
	return nil
}
