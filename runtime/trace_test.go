package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/store/record"
)

func trace(t *testing.T, env *testenv.Env, req bridge.TraceRequest) bridge.TraceReply {
	t.Helper()
	data, _ := json.Marshal(req)
	msg, err := env.NATS.Conn.Request(bridge.APITrace, data, 5*time.Second)
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	var reply bridge.TraceReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		t.Fatalf("trace reply %s: %v", msg.Data, err)
	}
	return reply
}

// appendLog writes a job log entry as the gate, the proposals' intake and
// the notices' consumer write theirs.
func appendLog(t *testing.T, env *testenv.Env, job, kind, questionID, body string, at time.Time) {
	t.Helper()
	e := record.LogEntry{Tenant: "acme", JobID: job, Kind: kind, QuestionID: questionID, Body: json.RawMessage(body), At: at}
	if err := env.Store.AppendLog(context.Background(), []record.LogEntry{e}); err != nil {
		t.Fatal(err)
	}
}

// kinds is each entry as "kind question".
func kinds(entries []bridge.TraceEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSpace(e.Kind+" "+e.QuestionID))
	}
	return out
}

func entryOf(t *testing.T, entries []bridge.TraceEntry, kind, questionID string) bridge.TraceEntry {
	t.Helper()
	for _, e := range entries {
		if e.Kind == kind && e.QuestionID == questionID {
			return e
		}
	}
	t.Fatalf("no %s entry of %q in %v", kind, questionID, kinds(entries))
	return bridge.TraceEntry{}
}

// TestTraceMergesTheJobsRecordInOrder runs a job through every kind of
// entry, the refusal through the real answer path, and reads its trace
// from the trusted bus.
func TestTraceMergesTheJobsRecordInOrder(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	const job = "job-tr"
	step := func() time.Time { clock.Advance(time.Second); return clock.Now() }
	ctx := context.Background()

	q1 := choiceQuestion(job)
	q1.BlockedTools = []string{"send_report"}
	ask(t, env, q1)
	appendLog(t, env, job, record.LogGate, "q-1", `{"tool":"send_report","code":"blocked_by_question","task_version":1,"question_id":"q-1","reason":"question q-1 is waiting and blocks send_report"}`, step())
	step()
	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-1", AttemptID: "a-green", By: "slack:UOP", Answer: json.RawMessage(`"green"`)})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		log, err := env.Store.JobLog(ctx, "acme", job)
		if err != nil || len(log) < 2 {
			return fmt.Errorf("the refusal is not in the job log: %v %v", log, err)
		}
		return nil
	})
	step()
	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-1", AttemptID: "a-blue", By: "slack:UOP", ByName: "olga", Answer: json.RawMessage(`"blue"`)})
	waitState(t, env, q1, bridge.StateAnswered)
	appendLog(t, env, job, record.LogApproval, "q-1", `{"proposal_id":"pr_1","by":"slack:UADMIN","by_name":"ada","via":"slack","count":1,"required":2}`, step())
	appendLog(t, env, job, record.LogApproval, "q-1", `{"proposal_id":"pr_1","by":"slack:UOWNER","denied":true,"comment":"too much"}`, step())
	appendLog(t, env, job, record.LogExecuted, "", `{"proposal_id":"pr_0","result":"succeeded","detail":"Refunded $240"}`, step())
	appendLog(t, env, job, record.LogNotice, "", `{"tenant":"acme","job_id":"job-tr","code":"ACCESS_DENIED","dependency":"crm","operation":"read account","operator_message":"Grant crm.read."}`, step())

	// q-2 times out, q-6 fails on its timeout, a second later.
	step()
	q2, q6 := choiceQuestion(job), choiceQuestion(job)
	q2.QuestionID, q2.Timeout = "q-2", "4s"
	q6.QuestionID, q6.Timeout, q6.OnTimeout = "q-6", "5s", bridge.OnTimeoutFail
	ask(t, env, q2)
	step()
	ask(t, env, q6)
	clock.AdvanceUntil(t, 100*time.Millisecond, testenv.Patience, func() error {
		if s := show(t, env, "slack:UADMIN", job, "q-6").Question.State; s != bridge.StateFailed {
			return fmt.Errorf("q-6 is %s", s)
		}
		return nil
	})
	step()
	q3 := choiceQuestion(job)
	q3.QuestionID = "q-3"
	ask(t, env, q3)
	step()
	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-3", AttemptID: "a-decline", Action: bridge.ActionDecline, By: "slack:UOP", Comment: "ask Ana"})
	waitState(t, env, q3, bridge.StateDeclined)
	step()
	q4 := choiceQuestion(job)
	q4.QuestionID = "q-4"
	ask(t, env, q4)
	step()
	q5 := choiceQuestion(job)
	q5.QuestionID, q5.TaskVersion = "q-5", 2
	q5.AllowedTools = []string{"lookup"}
	ask(t, env, q5)
	step()
	if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject("acme", job), "cancel-q5", bridge.Cancel{Tenant: "acme", JobID: job, QuestionID: "q-5", Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	waitState(t, env, q5, bridge.StateCancelled)

	reply := trace(t, env, bridge.TraceRequest{Tenant: "acme", JobID: job})
	if reply.Error != "" || reply.Next != "" {
		t.Fatalf("trace: %+v", reply)
	}
	got := reply.Entries
	want := []string{"asked q-1", "gate q-1", "refused q-1", "answered q-1", "approval q-1", "approval q-1", "executed", "notice",
		"asked q-2", "asked q-6", "timed_out q-2", "failed q-6", "asked q-3", "declined q-3", "asked q-4", "superseded q-4", "asked q-5", "cancelled q-5"}
	if !slices.Equal(kinds(got), want) {
		t.Fatalf("trace kinds:\n got %v\nwant %v", kinds(got), want)
	}
	for i := 1; i < len(got); i++ {
		if got[i].At.Before(got[i-1].At) {
			t.Errorf("entry %d (%s) is before entry %d", i, got[i].Kind, i-1)
		}
		if got[i].Hidden {
			t.Errorf("the trusted bus got a hidden entry: %+v", got[i])
		}
	}
	check := func(what string, ok bool, e bridge.TraceEntry) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %+v", what, e)
		}
	}
	e := got[0]
	check("asked", e.Text == "Which colour should the report use?" && slices.Equal(e.BlockedTools, []string{"send_report"}) && e.TaskVersion == 1, e)
	e = got[1]
	check("gate", e.Tool == "send_report" && e.Code == bridge.GateBlockedByQuestion &&
		e.Text == "send_report: blocked_by_question — question q-1 is waiting and blocks send_report", e)
	e = got[2]
	check("refused", e.By == "slack:UOP" && e.Code == bridge.RefusedInvalid && e.Text == "answer: must be one of: red, blue" && e.TaskVersion == 1, e)
	e = got[3]
	check("answered", e.By == "slack:UOP" && e.Text == "The answer: blue", e)
	e = got[4]
	check("approval", e.ProposalID == "pr_1" && e.Approvals == 1 && e.Required == 2 && e.By == "slack:UADMIN" &&
		e.Text == "pr_1 approved by ada (slack:UADMIN) (1 of 2)", e)
	e = got[5]
	check("deny", e.Text == "pr_1 denied by slack:UOWNER: too much", e)
	e = got[6]
	check("executed", e.Result == bridge.ResultSucceeded && e.Text == "pr_0 succeeded: Refunded $240", e)
	e = got[7]
	check("notice", e.Code == "ACCESS_DENIED" && e.Notice != nil && e.Notice.OperatorMessage == "Grant crm.read." &&
		e.Text == "ACCESS_DENIED in read account: Grant crm.read.", e)
	e = entryOf(t, got, bridge.TraceTimedOut, "q-2")
	check("timed out", e.Text == "Nobody answered within 0:00:04.", e)
	e = entryOf(t, got, bridge.TraceDeclined, "q-3")
	check("declined", e.By == "slack:UOP" && strings.Contains(e.Text, "declined to answer: ask Ana."), e)
	e = entryOf(t, got, bridge.TraceSuperseded, "q-4")
	check("superseded", e.Text == "superseded by task version 2", e)
	e = entryOf(t, got, bridge.TraceAsked, "q-5")
	check("asked q-5", e.TaskVersion == 2 && slices.Equal(e.AllowedTools, []string{"lookup"}), e)
	e = entryOf(t, got, bridge.TraceCancelled, "q-5")
	check("cancelled", e.Text == "not needed", e)

	// Pages of two reach the same entries.
	var paged []bridge.TraceEntry
	after := ""
	for range 20 {
		r := trace(t, env, bridge.TraceRequest{Tenant: "acme", JobID: job, Limit: 2, After: after})
		if r.Error != "" || len(r.Entries) > 2 {
			t.Fatalf("page after %q: %+v", after, r)
		}
		paged = append(paged, r.Entries...)
		if after = r.Next; after == "" {
			break
		}
	}
	if !slices.Equal(kinds(paged), want) {
		t.Errorf("paged trace: %v", kinds(paged))
	}
}

// TestTraceShowsWhatTheAskerMaySee weighs each entry as show weighs its
// question: a reader sees that things happened, an operator does not read
// a restricted question, its answerer reads it and nothing else of the
// job, and a stranger learns nothing, not even that the job exists.
func TestTraceShowsWhatTheAskerMaySee(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	const job = "job-tp"
	open := choiceQuestion(job)
	open.BlockedTools = []string{"send_report"}
	ask(t, env, open)
	secret := choiceQuestion(job)
	secret.QuestionID, secret.Question = "q-2", "Which salary band applies?"
	secret.Visibility, secret.Answerers = bridge.VisibilityRestricted, []string{"slack:UANA"}
	ask(t, env, secret)
	now := time.Now()
	appendLog(t, env, job, record.LogGate, "q-2", `{"tool":"pay","code":"blocked_by_question","task_version":1,"question_id":"q-2","reason":"question q-2 (salary band) is waiting and blocks pay"}`, now)
	appendLog(t, env, job, record.LogNotice, "", `{"tenant":"acme","job_id":"job-tp","code":"ACCESS_DENIED","operator_message":"Grant hr.read."}`, now)
	attempt(t, env, bridge.AnswerAttempt{JobID: job, QuestionID: "q-1", AttemptID: "a-1", By: "slack:UOP", Answer: json.RawMessage(`"green"`)})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if r := trace(t, env, bridge.TraceRequest{Tenant: "acme", JobID: job}); len(r.Entries) != 5 {
			return fmt.Errorf("trace: %v %s", kinds(r.Entries), r.Error)
		}
		return nil
	})
	all := []string{"asked q-1", "asked q-2", "gate q-2", "notice", "refused q-1"}
	contents := []string{"Which colour", "salary", "Grant", "must be one of", "slack:UOP", "send_report", "ACCESS_DENIED"}
	for _, c := range []struct {
		as         string
		want       []string
		hidden     []bool
		mayContain []string
	}{
		{"", all, []bool{false, false, false, false, false}, contents},
		{"slack:UADMIN", all, []bool{false, false, false, false, false}, contents},
		{"slack:UREADER", all, []bool{true, true, true, true, true}, nil},
		{"slack:UOP", all, []bool{false, true, true, false, false}, []string{"Which colour", "Grant", "must be one of", "slack:UOP", "send_report", "ACCESS_DENIED"}},
		{"slack:UANA", []string{"asked q-2", "gate q-2"}, []bool{false, false}, []string{"salary"}},
	} {
		reply := trace(t, env, bridge.TraceRequest{As: c.as, Tenant: "acme", JobID: job})
		if reply.Error != "" || !slices.Equal(kinds(reply.Entries), c.want) {
			t.Errorf("as %q: %v %s", c.as, kinds(reply.Entries), reply.Error)
			continue
		}
		var hidden []bool
		for _, e := range reply.Entries {
			hidden = append(hidden, e.Hidden)
		}
		if !slices.Equal(hidden, c.hidden) {
			t.Errorf("as %q: hidden %v, want %v", c.as, hidden, c.hidden)
		}
		data, _ := json.Marshal(reply)
		for _, s := range contents {
			if shown, may := strings.Contains(string(data), s), slices.Contains(c.mayContain, s); shown != may {
				t.Errorf("as %q: shows %q: %v, want %v: %s", c.as, s, shown, may, data)
			}
		}
		// What a hidden entry still says: its kind, time, question and
		// a gate decision's tool and code.
		for _, e := range reply.Entries {
			if e.Hidden && (e.At.IsZero() || e.By != "" || e.Notice != nil || len(e.BlockedTools) > 0) {
				t.Errorf("as %q: hidden entry %+v", c.as, e)
			}
			if e.Hidden && e.Kind == bridge.TraceGate && (e.Tool != "pay" || e.Code != bridge.GateBlockedByQuestion || e.Text != "pay: blocked_by_question") {
				t.Errorf("as %q: hidden gate entry %+v", c.as, e)
			}
		}
	}
	reader := trace(t, env, bridge.TraceRequest{As: "slack:UREADER", Tenant: "acme", JobID: job})
	if e := reader.Entries[0]; e.Text != "A question was asked." || e.QuestionID != "q-1" || e.TaskVersion != 1 {
		t.Errorf("a reader's asked entry: %+v", e)
	}

	const nothing = "There is no job job-tp in tenant acme that you can see."
	for _, c := range []struct {
		req  bridge.TraceRequest
		want string
	}{
		{bridge.TraceRequest{As: "slack:USTRANGER", Tenant: "acme", JobID: job}, nothing},
		{bridge.TraceRequest{As: "slack:UADMIN", Tenant: "other", JobID: job}, "There is no job job-tp in tenant other that you can see."},
		{bridge.TraceRequest{Tenant: "acme", JobID: "job-none"}, "There is no job job-none in tenant acme that you can see."},
		{bridge.TraceRequest{JobID: job}, "tenant: is required"},
		{bridge.TraceRequest{Tenant: "acme"}, "job_id: is required"},
		{bridge.TraceRequest{Tenant: "acme", JobID: "a b"}, `job_id: "a b" must be 1 to 64 letters, digits, '-' or '_'`},
		{bridge.TraceRequest{As: "kevin", Tenant: "acme", JobID: job}, "as: "},
		{bridge.TraceRequest{Tenant: "acme", JobID: job, Limit: 5000}, "limit: must be between 1 and 1000, not 5000"},
		{bridge.TraceRequest{Tenant: "acme", JobID: job, After: "later"}, "after: not a cursor from a previous trace"},
	} {
		reply := trace(t, env, c.req)
		if !strings.HasPrefix(reply.Error, c.want) || len(reply.Entries) != 0 {
			t.Errorf("%+v: error %q, want %q (entries %v)", c.req, reply.Error, c.want, kinds(reply.Entries))
		}
	}
	msg, err := env.NATS.Conn.Request(bridge.APITrace, []byte(`{"tenant":"acme","job_id":"job-tp","limit":"ten"}`), 5*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), "trace: limit: ") {
		t.Errorf("a limit in words: %s %v", msg.Data, err)
	}
}

// TestTraceShowsANoticeAsRecorded: a notice published by an agent reaches
// the trace masked, whole for an operator, hidden for a reader.
func TestTraceShowsANoticeAsRecorded(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	if err := env.Agent.Notify(context.Background(), crmNotice("job-tn")); err != nil {
		t.Fatal(err)
	}
	var reply bridge.TraceReply
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if reply = trace(t, env, bridge.TraceRequest{As: "slack:UOP", Tenant: "acme", JobID: "job-tn"}); len(reply.Entries) != 1 {
			return fmt.Errorf("trace: %v %s", kinds(reply.Entries), reply.Error)
		}
		return nil
	})
	e := reply.Entries[0]
	if e.Kind != bridge.TraceNotice || e.Hidden || e.Code != bridge.CodeAccessDenied || e.Notice == nil || e.Notice.NoticeID != "n-crm" ||
		e.Text != "ACCESS_DENIED in export_contacts: The CRM answered 403 to token [masked]." {
		t.Fatalf("an operator's notice entry: %+v", e)
	}
	reader := trace(t, env, bridge.TraceRequest{As: "slack:UREADER", Tenant: "acme", JobID: "job-tn"})
	if len(reader.Entries) != 1 || !reader.Entries[0].Hidden || reader.Entries[0].Notice != nil || reader.Entries[0].Code != "" ||
		reader.Entries[0].Text != "A notice was reported." {
		t.Fatalf("a reader's trace: %+v", reader)
	}
	data, _ := json.Marshal(trace(t, env, bridge.TraceRequest{Tenant: "acme", JobID: "job-tn"}))
	if strings.Contains(string(data), "xoxb-") {
		t.Errorf("the trace shows the token: %s", data)
	}
}

// TestTraceIsTheEvidenceTheGateHeld asks the real gate while a question
// blocks a tool and after it is answered: the trace shows the blocked
// call between the question and its answer, and the allowed one after.
func TestTraceIsTheEvidenceTheGateHeld(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock})
	q := choiceQuestion("job-tg")
	q.BlockedTools = []string{"send_report"}
	ask(t, env, q)
	clock.Advance(time.Second)
	if r := gate(t, env, "job-tg", 1, "send_report"); r.Allowed {
		t.Fatalf("the gate let send_report run while q-1 waits: %+v", r)
	}
	clock.Advance(time.Second)
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-tg", QuestionID: "q-1", AttemptID: "a-1", By: "slack:UOP", Answer: json.RawMessage(`"red"`)})
	waitState(t, env, q, bridge.StateAnswered)
	clock.Advance(time.Second)
	if r := gate(t, env, "job-tg", 1, "send_report"); !r.Allowed {
		t.Fatalf("the gate held send_report after the answer: %+v", r)
	}
	want := []string{"asked q-1", "gate q-1", "answered q-1", "gate"}
	var reply bridge.TraceReply
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		reply = trace(t, env, bridge.TraceRequest{As: "slack:UOP", Tenant: "acme", JobID: "job-tg"})
		if !slices.Equal(kinds(reply.Entries), want) {
			return fmt.Errorf("trace %v %s", kinds(reply.Entries), reply.Error)
		}
		return nil
	})
	blocked, allowed := reply.Entries[1], reply.Entries[3]
	if blocked.Tool != "send_report" || blocked.Code != bridge.GateBlockedByQuestion || blocked.TaskVersion != 1 ||
		!strings.HasPrefix(blocked.Text, "send_report: blocked_by_question — question q-1 (") {
		t.Errorf("the blocked call: %+v", blocked)
	}
	if allowed.Tool != "send_report" || allowed.Code != bridge.GateAllowed || allowed.Text != "send_report: allowed" {
		t.Errorf("the allowed call: %+v", allowed)
	}
}
