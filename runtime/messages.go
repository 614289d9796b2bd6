package runtime

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// decodeBody reads a stored question body; bodies were validated on the way in.
func decodeBody(rec *record.Record) *bridge.Question {
	var q bridge.Question
	if err := json.Unmarshal(rec.Body, &q); err != nil {
		// Not reachable for rows this runtime wrote; keep the key at least.
		return &bridge.Question{Tenant: rec.Tenant, JobID: rec.JobID, QuestionID: rec.QuestionID, TaskVersion: rec.TaskVersion, Kind: rec.Kind}
	}
	return &q
}

// eventFor is the event of typ about rec. It carries the whole question,
// so a front-end draws the card of any event without a record of its own
// (docs/contract.md, events).
func eventFor(rec *record.Record, typ string, at time.Time) bridge.Event {
	return eventOf(rec, decodeBody(rec), typ, at)
}

// eventOf is eventFor with the question at hand, not decoded from rec.
func eventOf(rec *record.Record, q *bridge.Question, typ string, at time.Time) bridge.Event {
	return bridge.Event{
		Question:    q,
		Type:        typ,
		EventID:     eventID(rec, typ),
		Tenant:      rec.Tenant,
		JobID:       rec.JobID,
		QuestionID:  rec.QuestionID,
		TaskVersion: rec.TaskVersion,
		AskedAt:     rec.AskedAt,
		Deadline:    rec.Deadline,
		At:          at.UTC(),
	}
}

// eventID names a question's event of type typ: one of each type a
// version, so a relay's second publish of it is dropped as a duplicate.
func eventID(rec *record.Record, typ string) string {
	return fmt.Sprintf("%s.%s.%s.%d.%s", rec.Tenant, rec.JobID, rec.QuestionID, rec.TaskVersion, typ)
}

func resumeFor(rec *record.Record, outcome, text string, at time.Time) bridge.Resume {
	return bridge.Resume{
		Tenant:      rec.Tenant,
		JobID:       rec.JobID,
		QuestionID:  rec.QuestionID,
		TaskVersion: rec.TaskVersion,
		Outcome:     outcome,
		Text:        text,
		At:          at.UTC(),
	}
}

func eventMsg(ev bridge.Event) record.Message {
	data, _ := json.Marshal(ev)
	return record.Message{Subject: bridge.EventSubject(ev.Tenant, ev.JobID), Data: data}
}

func resumeMsg(res bridge.Resume) record.Message {
	data, _ := json.Marshal(res)
	return record.Message{Subject: bridge.ResumeSubject(res.Tenant, res.JobID), Data: data}
}

// endedMessages announces a question ended without an answer (cancelled,
// superseded): the event for the front-ends and the resume for the agent.
// status is the cancel's status (bridge.CancelRetired, ...), or "".
func endedMessages(rec *record.Record, state, status, text string, refs []bridge.MessageRef, at time.Time) []record.Message {
	typ := bridge.EventCancelled
	if state == bridge.StateSuperseded {
		typ = bridge.EventSuperseded
	}
	ev := eventFor(rec, typ, at)
	ev.State = state
	ev.Status = status
	ev.Text = text
	ev.Messages = refs
	res := resumeFor(rec, bridge.OutcomeCanceled, text, at)
	res.Status = status
	return []record.Message{eventMsg(ev), resumeMsg(res)}
}
