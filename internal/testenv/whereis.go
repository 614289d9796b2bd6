package testenv

import (
	"context"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// WhereIs says where q stands, for the message of a wait that gave up:
// its state in the record, the last resume published for its job, and
// how many messages each stream holds.
func (e *Env) WhereIs(q *bridge.Question) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var reply bridge.ShowReply
	state := "unknown to the runtime"
	if err := bridge.Request(ctx, e.NATS.Conn, bridge.APIShow, bridge.ShowRequest{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID}, &reply); err != nil {
		state = "show: " + err.Error()
	} else if reply.Question != nil {
		state = reply.Question.State
	}
	out := "the record: " + state + "; the job's last resume: "
	if s, err := e.NATS.JS.Stream(ctx, bridge.StreamResumes); err != nil {
		out += err.Error()
	} else if m, err := s.GetLastMsgForSubject(ctx, bridge.ResumeSubject(q.Tenant, q.JobID)); err != nil {
		out += err.Error()
	} else {
		out += fmt.Sprintf("seq %d at %s %s", m.Sequence, m.Time.Format(time.RFC3339Nano), bridge.Truncate(string(m.Data), 200))
	}
	out += "; streams:"
	for _, name := range bridge.StreamNames() {
		s, err := e.NATS.JS.Stream(ctx, name)
		if err != nil {
			out += fmt.Sprintf(" %s %v;", name, err)
			continue
		}
		info, err := s.Info(ctx)
		if err != nil {
			out += fmt.Sprintf(" %s %v;", name, err)
			continue
		}
		out += fmt.Sprintf(" %s %d msgs (last seq %d);", name, info.State.Msgs, info.State.LastSeq)
	}
	return out
}
