package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The job log's bodies, as their writers record them (docs/design.md
// "The trace").
type (
	gateLogBody struct {
		Tool        string `json:"tool"`
		Code        string `json:"code"`
		TaskVersion int64  `json:"task_version"`
		ProposalID  string `json:"proposal_id"`
		Execute     bool   `json:"execute"`
		QuestionID  string `json:"question_id"`
		Reason      string `json:"reason"`
	}
	refusedLogBody struct {
		By          string `json:"by"`
		Action      string `json:"action"`
		Reason      string `json:"reason"`
		Text        string `json:"text"`
		AttemptID   string `json:"attempt_id"`
		TaskVersion int64  `json:"task_version"`
	}
	approvalLogBody struct {
		ProposalID string `json:"proposal_id"`
		By         string `json:"by"`
		ByName     string `json:"by_name"`
		Via        string `json:"via"`
		Count      int    `json:"count"`
		Required   int    `json:"required"`
		Denied     bool   `json:"denied"`
		Comment    string `json:"comment"`
	}
	executedLogBody struct {
		ProposalID string `json:"proposal_id"`
		Result     string `json:"result"`
		Detail     string `json:"detail"`
	}
)

// auditKinds names the trace entry of a question's transition to a state.
var auditKinds = map[string]string{
	bridge.StateAnswered:   bridge.TraceAnswered,
	bridge.StateDeclined:   bridge.TraceDeclined,
	bridge.StateCancelled:  bridge.TraceCancelled,
	bridge.StateTimedOut:   bridge.TraceTimedOut,
	bridge.StateSuperseded: bridge.TraceSuperseded,
	bridge.StateFailed:     bridge.TraceFailed,
}

// auditEntry is the trace entry of a question's transition; ladder steps
// (pending to pending) are not part of the trace.
func auditEntry(a record.JobAuditEntry, rec *record.Record) (bridge.TraceEntry, bool) {
	e := bridge.TraceEntry{At: a.At, QuestionID: a.QuestionID, TaskVersion: a.TaskVersion}
	if a.From == "" && a.To == bridge.StatePending {
		e.Kind = bridge.TraceAsked
		if rec != nil {
			q := decodeBody(rec)
			e.Text = askedText(q)
			e.BlockedTools, e.AllowedTools = q.BlockedTools, q.AllowedTools
			if q.Proposal != nil {
				e.ProposalID = q.Proposal.ID
			}
		}
		if e.Text == "" {
			e.Text = hiddenText(e.Kind)
		}
		return e, true
	}
	kind, ok := auditKinds[a.To]
	if !ok {
		return e, false
	}
	// A question ends once: its record's text is the one its job read
	// ("Nobody answered within 4:00:00."), the audit's reason a shorter one.
	e.Kind, e.By, e.Text = kind, a.By, a.Reason
	if rec != nil && rec.Text != "" {
		e.Text = rec.Text
	}
	if e.Text == "" {
		e.Text = hiddenText(kind)
	}
	return e, true
}

// askedText is what a question asks, in one line: its words, and an
// approval's proposal.
func askedText(q *bridge.Question) string {
	text := q.Question
	if q.IsApproval() && q.Proposal != nil {
		p := "proposal " + q.Proposal.ID
		if len(q.Proposal.Summary) > 0 {
			p += ": " + strings.Join(q.Proposal.Summary, " / ")
		}
		if text == "" {
			return p
		}
		text += " (" + p + ")"
	}
	return text
}

// logEntry is the trace entry of a job log entry. A body its kind's
// reader cannot read still shows that something was recorded.
func (r *Runtime) logEntry(l record.LogEntry) bridge.TraceEntry {
	e := bridge.TraceEntry{At: l.At, Kind: l.Kind, QuestionID: l.QuestionID}
	var err error
	switch l.Kind {
	case record.LogGate:
		var b gateLogBody
		if err = json.Unmarshal(l.Body, &b); err == nil {
			gateEntry(&e, b)
		}
	case record.LogRefused:
		var b refusedLogBody
		if err = json.Unmarshal(l.Body, &b); err == nil {
			e.By, e.Code, e.Text, e.TaskVersion = b.By, b.Reason, b.Text, b.TaskVersion
		}
	case record.LogApproval:
		var b approvalLogBody
		if err = json.Unmarshal(l.Body, &b); err == nil {
			approvalEntry(&e, b)
		}
	case record.LogExecuted:
		var b executedLogBody
		if err = json.Unmarshal(l.Body, &b); err == nil {
			e.ProposalID, e.Result = b.ProposalID, b.Result
			e.Text = b.ProposalID + " " + b.Result
			if b.Detail != "" {
				e.Text += ": " + b.Detail
			}
		}
	case record.LogDelegated:
		var b delegatedLogBody
		if err = json.Unmarshal(l.Body, &b); err == nil {
			e.By, e.TaskVersion = b.By, b.TaskVersion
			e.Text = bridge.DelegatedText(b.By, b.ByName, b.To)
		}
	case record.LogSnoozed:
		var b snoozedLogBody
		if err = json.Unmarshal(l.Body, &b); err == nil {
			e.By, e.TaskVersion = b.By, b.TaskVersion
			e.Text = b.By + " snoozed their reminders until " + b.Until.UTC().Format(time.RFC3339) + " (" + b.Snooze + ")."
		}
	case record.LogNotice:
		var n bridge.Notice
		if err = json.Unmarshal(l.Body, &n); err == nil {
			e.Notice, e.Code = &n, n.Code
			e.Text = noticeText(&n)
		}
	}
	if err != nil {
		r.log.Warn("a job log entry the trace cannot read", "tenant", l.Tenant, "job", l.JobID, "kind", l.Kind, "id", l.ID, "err", err)
	}
	if e.Text == "" {
		e.Text = hiddenText(e.Kind)
	}
	return e
}

func gateEntry(e *bridge.TraceEntry, b gateLogBody) {
	e.Tool, e.Code, e.TaskVersion, e.ProposalID = b.Tool, b.Code, b.TaskVersion, b.ProposalID
	if e.QuestionID == "" {
		e.QuestionID = b.QuestionID
	}
	e.Text = b.Tool + ": " + b.Code
	if b.Execute {
		e.Text += " (execute " + b.ProposalID + ")"
	}
	if b.Reason != "" && b.Code != bridge.GateAllowed {
		e.Text += " — " + b.Reason
	}
}

func approvalEntry(e *bridge.TraceEntry, b approvalLogBody) {
	e.ProposalID, e.By = b.ProposalID, b.By
	who := b.By
	if b.ByName != "" {
		who = b.ByName + " (" + b.By + ")"
	}
	if b.Denied {
		e.Text = b.ProposalID + " denied by " + who
		if b.Comment != "" {
			e.Text += ": " + b.Comment
		}
		return
	}
	e.Approvals, e.Required = b.Count, b.Required
	e.Text = b.ProposalID + " approved by " + who
	if b.Required > 0 {
		e.Text += fmt.Sprintf(" (%d of %d)", b.Count, b.Required)
	}
}

// noticeText is a notice in one line: its code and what the operator is
// told. Its texts are masked when it is recorded.
func noticeText(n *bridge.Notice) string {
	text := n.Code
	if n.Operation != "" {
		text += " in " + n.Operation
	}
	if n.OperatorMessage != "" {
		text += ": " + n.OperatorMessage
	}
	return text
}

// hiddenEntry is e as a reader who may not see its question's content sees
// it: that it happened, when, to which question, and a gate decision's
// tool and code.
func hiddenEntry(e bridge.TraceEntry) bridge.TraceEntry {
	h := bridge.TraceEntry{At: e.At, Kind: e.Kind, QuestionID: e.QuestionID, TaskVersion: e.TaskVersion, Hidden: true}
	if e.Kind == bridge.TraceGate {
		h.Tool, h.Code = e.Tool, e.Code
	}
	h.Text = hiddenText(e.Kind)
	if h.Tool != "" {
		h.Text = h.Tool + ": " + h.Code
	}
	return h
}

// hiddenText says that something of a kind happened, and nothing of it.
func hiddenText(kind string) string {
	switch kind {
	case bridge.TraceAsked:
		return "A question was asked."
	case bridge.TraceAnswered:
		return "It was answered."
	case bridge.TraceDeclined:
		return "It was declined."
	case bridge.TraceCancelled:
		return "It was cancelled."
	case bridge.TraceTimedOut:
		return "It timed out."
	case bridge.TraceSuperseded:
		return "It was superseded by a newer task version."
	case bridge.TraceFailed:
		return "It failed."
	case bridge.TraceRefused:
		return "An answer was refused."
	case bridge.TraceApproval:
		return "An approval was recorded."
	case bridge.TraceExecuted:
		return "An execution was reported."
	case bridge.TraceNotice:
		return "A notice was reported."
	case bridge.TraceGate:
		return "A gate decision was recorded."
	case bridge.TraceDelegated:
		return "Someone else was asked to answer."
	case bridge.TraceSnoozed:
		return "Someone snoozed their reminders."
	}
	return "Something was recorded (" + kind + ")."
}
