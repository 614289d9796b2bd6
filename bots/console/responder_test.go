package console

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// startNATS starts a real embedded NATS server with JetStream in a temp dir.
func startNATS(t *testing.T) *bridge.NATS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := bridge.ConnectNATS(ctx, bridge.NATSOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Name: "console-test"})
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	t.Cleanup(n.Close)
	return n
}

// responder is a small loopback stand-in for the runtime on a real NATS:
// it answers ask.v1.api.show and .list, and decides answer attempts with
// bridge.CheckAnswer, publishing events and resumes as the runtime does.
// Permissions: the question's answerers and owner see and act;
// console:operator does too, but of a restricted question sees only that
// it waits and may decline it; console:reader sees that it waits; anyone
// else sees nothing.
type responder struct {
	t    *testing.T
	n    *bridge.NATS
	mu   sync.Mutex
	qs   []*fakeQuestion
	seen map[string]bool
	// attempts lists every attempt id decided, in order.
	attempts []string
	// silent makes the responder ignore attempts (the runtime is slow).
	silent bool
	// notices are the notices of each job ("tenant/job"), as the trace
	// shows them.
	notices map[string][]bridge.Notice
	closed  bool
	busy    sync.WaitGroup
}

type fakeQuestion struct {
	q     bridge.Question
	view  bridge.QuestionView
	audit []bridge.AuditEntry
}

func startResponder(t *testing.T, n *bridge.NATS) *responder {
	t.Helper()
	r := &responder{t: t, n: n, seen: map[string]bool{}}
	subs := []*nats.Subscription{}
	for subj, h := range map[string]nats.MsgHandler{
		bridge.APIShow:               r.onShow,
		bridge.APIList:               r.onList,
		bridge.APITrace:              r.onTrace,
		bridge.PrefixAnswer + ".>":   r.onAttempt,
		bridge.PrefixQuestion + ".>": r.onQuestion,
	} {
		s, err := n.Conn.Subscribe(subj, h)
		if err != nil {
			t.Fatalf("subscribe %s: %v", subj, err)
		}
		subs = append(subs, s)
	}
	if err := n.Conn.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	t.Cleanup(func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.busy.Wait() // let decisions in flight publish before NATS closes
	})
	return r
}

// add stores a question as the runtime would after "asked".
func (r *responder) add(q bridge.Question) {
	r.t.Helper()
	if err := bridge.ValidateQuestion(&q); err != nil {
		r.t.Fatalf("test question invalid: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	kind := q.Kind
	if kind == "" {
		kind = bridge.KindQuestion
	}
	r.qs = append(r.qs, &fakeQuestion{
		q: q,
		view: bridge.QuestionView{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion,
			Kind: kind, State: bridge.StatePending, AskedAt: now, Deadline: now.Add(q.TimeoutDuration())},
		audit: []bridge.AuditEntry{{From: "", To: bridge.StatePending, By: q.Agent, At: now}},
	})
}

func (r *responder) onQuestion(m *nats.Msg) {
	q, err := bridge.DecodeQuestion(m.Data)
	if err != nil {
		return
	}
	r.add(*q)
}

func (r *responder) find(tenant, job, id string) *fakeQuestion {
	for _, fq := range r.qs {
		if fq.q.Tenant == tenant && (job == "" || fq.q.JobID == job) && fq.q.QuestionID == id {
			return fq
		}
	}
	return nil
}

// access is what identity may do with fq: see content, answer, decline;
// ok false when it may not even know the question exists. As the
// runtime: operators answer unless the question is restricted.
func access(fq *fakeQuestion, identity string) (content, answer, decline, ok bool) {
	if slices.Contains(fq.q.Answerers, identity) || fq.q.Owner == identity {
		return true, true, true, true
	}
	switch identity {
	case "console:operator":
		if !fq.q.Restricted() {
			return true, true, true, true
		}
		return false, false, true, true
	case "console:reader":
		return false, false, false, true
	}
	return false, false, false, false
}

func (r *responder) viewFor(fq *fakeQuestion, identity string) (bridge.QuestionView, bool) {
	content, answer, decline, ok := access(fq, identity)
	if !ok {
		return bridge.QuestionView{}, false
	}
	v := fq.view
	pending := v.State == bridge.StatePending
	v.CanAnswer = answer && pending
	v.CanDecline = decline && pending
	v.Restricted = fq.q.Restricted()
	if content {
		q := fq.q
		v.Question = &q
	} else {
		v.Hidden = true
		if v.Restricted {
			v.WaitsFor = fq.q.WaitsFor()
		}
		v.Answer, v.AnswerText, v.Comment, v.Text = nil, "", "", ""
	}
	return v, true
}

func (r *responder) reply(m *nats.Msg, v any) {
	data, _ := json.Marshal(v)
	_ = m.Respond(data)
}

func (r *responder) onShow(m *nats.Msg) {
	var req bridge.ShowRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		r.reply(m, bridge.ShowReply{Error: "bad request"})
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fq := r.find(req.Tenant, req.JobID, req.QuestionID)
	if fq == nil {
		r.reply(m, bridge.ShowReply{Error: "unknown question"})
		return
	}
	v, ok := r.viewFor(fq, req.As)
	if !ok {
		r.reply(m, bridge.ShowReply{Error: "unknown question"})
		return
	}
	rep := bridge.ShowReply{Question: &v}
	if !v.Hidden {
		rep.Audit = slices.Clone(fq.audit)
	}
	r.reply(m, rep)
}

func (r *responder) onList(m *nats.Msg) {
	var req bridge.ListRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		r.reply(m, bridge.ListReply{Error: "bad request"})
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := bridge.ListReply{Questions: []bridge.QuestionView{}}
	for _, fq := range r.qs {
		if req.Tenant != "" && fq.q.Tenant != req.Tenant || req.JobID != "" && fq.q.JobID != req.JobID {
			continue
		}
		state := req.State
		if state == "" {
			state = bridge.StatePending
		}
		if state != "all" && fq.view.State != state {
			continue
		}
		if v, ok := r.viewFor(fq, req.As); ok {
			rep.Questions = append(rep.Questions, v)
		}
	}
	r.reply(m, rep)
}

func (r *responder) publish(subject, id string, v any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := bridge.Publish(ctx, r.n.JS, subject, id, v); err != nil {
		r.t.Errorf("responder publish %s: %v", subject, err)
	}
}

func (r *responder) onAttempt(m *nats.Msg) {
	var a bridge.AnswerAttempt
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return
	}
	r.mu.Lock()
	if r.closed || r.silent || r.seen[a.AttemptID] {
		r.mu.Unlock()
		return
	}
	r.busy.Add(1)
	defer r.busy.Done()
	r.seen[a.AttemptID] = true
	r.attempts = append(r.attempts, a.AttemptID)
	ev, resume := r.decide(a)
	r.mu.Unlock()
	r.publish(bridge.EventSubject(a.Tenant, a.JobID), "ev-"+a.AttemptID, ev)
	if resume != nil {
		r.publish(bridge.ResumeSubject(a.Tenant, a.JobID), "rs-"+a.AttemptID, resume)
	}
}

// decide runs under r.mu.
func (r *responder) decide(a bridge.AnswerAttempt) (*bridge.Event, *bridge.Resume) {
	now := time.Now().UTC()
	refuse := func(reason, text string, fields map[string]string) (*bridge.Event, *bridge.Resume) {
		return &bridge.Event{Type: bridge.EventRefused, EventID: "ev-" + a.AttemptID, Tenant: a.Tenant, JobID: a.JobID,
			QuestionID: a.QuestionID, TaskVersion: a.TaskVersion, To: a.By, Reason: reason, Text: text,
			FieldErrors: fields, AttemptID: a.AttemptID, ReplyTo: a.ReplyTo, At: now}, nil
	}
	fq := r.find(a.Tenant, a.JobID, a.QuestionID)
	if fq == nil {
		return refuse(bridge.RefusedUnknown, "askbridge knows no such question.", nil)
	}
	if fq.view.State != bridge.StatePending {
		return refuse(bridge.RefusedNotPending, "This question is no longer waiting for an answer.", nil)
	}
	if a.TaskVersion != 0 && a.TaskVersion != fq.q.TaskVersion {
		return refuse(bridge.RefusedStale, fmt.Sprintf("This question was for task version %d; the job is now at version %d.", a.TaskVersion, fq.q.TaskVersion), nil)
	}
	_, answer, decline, _ := access(fq, a.By)
	if a.Action == bridge.ActionDecline && !decline || a.Action != bridge.ActionDecline && !answer {
		return refuse(bridge.RefusedForbidden, "You can't answer this question: "+a.By+" is not one of its answerers.", nil)
	}
	checked, aerr := bridge.CheckAnswer(&fq.q, a.Action, a.Answer, a.Comment)
	if aerr != nil {
		return refuse(aerr.Reason, aerr.Text, aerr.Fields)
	}
	v := &fq.view
	v.By, v.ByName, v.Via, v.Comment, v.SettledAt = a.By, a.ByName, a.Via, a.Comment, now
	ev := &bridge.Event{EventID: "ev-" + a.AttemptID, Tenant: a.Tenant, JobID: a.JobID, QuestionID: a.QuestionID,
		TaskVersion: fq.q.TaskVersion, By: a.By, ByName: a.ByName, Via: a.Via, Comment: a.Comment, At: now}
	res := &bridge.Resume{Tenant: a.Tenant, JobID: a.JobID, QuestionID: a.QuestionID, TaskVersion: fq.q.TaskVersion,
		By: a.By, ByName: a.ByName, Via: a.Via, Comment: a.Comment, At: now}
	if checked.Action == bridge.ActionDecline {
		v.State = bridge.StateDeclined
		v.Text = bridge.DeclinedText(a.By, a.ByName, a.Comment)
		ev.Type, res.Outcome = bridge.EventDeclined, bridge.OutcomeDeclined
	} else {
		v.State = bridge.StateAnswered
		v.Answer, v.AnswerText = checked.Value, checked.Display
		v.Text = bridge.AnsweredText(checked.Value)
		ev.Type, res.Outcome = bridge.EventAnswered, bridge.OutcomeAnswered
		ev.Answer, ev.AnswerText, res.Answer = checked.Value, checked.Display, checked.Value
	}
	ev.Text, res.Text = v.Text, v.Text
	fq.audit = append(fq.audit, bridge.AuditEntry{From: bridge.StatePending, To: v.State, By: a.By, Via: a.Via, Reason: a.Comment, At: now})
	return ev, res
}

func (r *responder) state(tenant, job, id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fq := r.find(tenant, job, id); fq != nil {
		return fq.view.State
	}
	return ""
}

func (r *responder) attemptCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.attempts)
}

// addNotice records a notice as the runtime would, for the trace.
func (r *responder) addNotice(n bridge.Notice) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.notices == nil {
		r.notices = map[string][]bridge.Notice{}
	}
	r.notices[n.Tenant+"/"+n.JobID] = append(r.notices[n.Tenant+"/"+n.JobID], n)
}

// onTrace answers ask.v1.api.trace with the job's notices, to anyone who
// may see one of its questions (as the runtime's trace shows its job log).
func (r *responder) onTrace(m *nats.Msg) {
	var req bridge.TraceRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		r.reply(m, bridge.TraceReply{Error: "bad request"})
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := bridge.TraceReply{Entries: []bridge.TraceEntry{}}
	for _, n := range r.notices[req.Tenant+"/"+req.JobID] {
		e := bridge.TraceEntry{At: n.At, Kind: bridge.TraceNotice, Code: n.Code, Text: n.Code}
		if req.As == "console:reader" {
			e.Hidden = true
		} else {
			e.Notice = &n
		}
		rep.Entries = append(rep.Entries, e)
	}
	if len(rep.Entries) == 0 {
		rep.Error = "There is no job " + req.JobID + " in tenant " + req.Tenant + " that you can see."
	}
	r.reply(m, rep)
}
