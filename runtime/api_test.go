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
	"github.com/askbridge/askbridge/runtime"
)

// TestListPagesReachEveryVisibleQuestion follows ask.v1.api.list's next
// cursor, with questions the identity may not see between the ones it
// may, for every page size: each visible question is listed once.
func TestListPagesReachEveryVisibleQuestion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	var want []string
	for i := range 7 {
		q := choiceQuestion(fmt.Sprintf("job-pg%d", i))
		q.Answerers = []string{"slack:UPAGER"}
		if i == 2 || i == 5 {
			q.Answerers = []string{"slack:UOTHER"}
		} else {
			want = append(want, q.JobID)
		}
		ask(t, env, q)
		waitState(t, env, q, bridge.StatePending)
	}
	for limit := 1; limit <= 8; limit++ {
		var got []string
		after := ""
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatalf("limit %d: more than 10 pages", limit)
			}
			req, _ := json.Marshal(bridge.ListRequest{As: "slack:UPAGER", Tenant: "acme", Limit: limit, After: after})
			msg, err := env.NATS.Conn.Request(bridge.APIList, req, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var reply bridge.ListReply
			if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error != "" {
				t.Fatalf("list: %v %s", err, reply.Error)
			}
			if len(reply.Questions) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(reply.Questions))
			}
			for _, v := range reply.Questions {
				got = append(got, v.JobID)
			}
			if after = reply.Next; after == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: following next listed %v, want %v", limit, got, want)
		}
	}
}

func TestListRefusesAnUnknownState(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	for _, c := range []struct{ state, err string }{
		{"open", `state: must be pending, answered, declined, timed_out, cancelled, superseded, failed or all, not "open"`},
		{"answered", ""},
		{"all", ""},
	} {
		req, _ := json.Marshal(bridge.ListRequest{As: "slack:UADMIN", State: c.state})
		msg, err := env.NATS.Conn.Request(bridge.APIList, req, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply bridge.ListReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error != c.err {
			t.Errorf("state %q: error %q (%v), want %q", c.state, reply.Error, err, c.err)
		}
	}
}

// TestShowByIDOnlyWeighsWhatTheAskerMaySee checks a question id used in
// two tenants: an admin of one tenant gets that tenant's question, a
// stranger learns nothing (not that the id is used twice), and someone
// who may see both is asked to name the job.
func TestShowByIDOnlyWeighsWhatTheAskerMaySee(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: runtime.Roles{Admins: []string{"acme/slack:UACME", "slack:UGLOBAL"}}})
	a := choiceQuestion("job-1")
	g := choiceQuestion("job-1")
	g.Tenant = "globex"
	for _, q := range []*bridge.Question{a, g} {
		if err := env.Agent.Publish(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	show := func(t *testing.T, env *testenv.Env, as, _, qid string) bridge.ShowReply {
		t.Helper()
		data, _ := json.Marshal(bridge.ShowRequest{As: as, QuestionID: qid}) // no tenant, no job
		msg, err := env.NATS.Conn.Request(bridge.APIShow, data, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply bridge.ShowReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		return reply
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if r := show(t, env, "", "", "q-1"); !strings.Contains(r.Error, "more than one job") {
			return fmt.Errorf("both not stored yet: %+v", r)
		}
		return nil
	})
	if r := show(t, env, "slack:UACME", "", "q-1"); r.Question == nil || r.Question.Tenant != "acme" {
		t.Errorf("acme's admin: %+v", r)
	}
	if r := show(t, env, "slack:USTRANGER", "", "q-1"); r.Question != nil || r.Error != "There is no question q-1 that you can see." {
		t.Errorf("a stranger: %+v", r)
	}
	if r := show(t, env, "slack:UGLOBAL", "", "q-1"); r.Question != nil || !strings.Contains(r.Error, "used in more than one job you can see") {
		t.Errorf("an admin of both: %+v", r)
	}
}

// TestAPIRequestErrorsNameTheProblem checks that a list or show request
// the runtime cannot read is answered with what is wrong with it, in the
// request's own field names, and that an empty list request is the
// default one.
func TestAPIRequestErrorsNameTheProblem(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	ask(t, env, choiceQuestion("job-apierr"))
	for _, c := range []struct{ subject, body, err string }{
		{bridge.APIList, `{"limit":"50"}`, "list: limit: must be a whole number, not text"},
		{bridge.APIList, `{"after":5}`, "list: after: must be text, not a number"},
		{bridge.APIList, `{"as":5}`, "list: as: must be text, not a number"},
		{bridge.APIList, `[]`, "list: the request is not a JSON object: expected an object, not a list"},
		{bridge.APIList, `{"state":"pending"`, "list: the request is not a JSON object: unexpected end of JSON input (at byte 18)"},
		{bridge.APIList, ``, ""},
		{bridge.APIShow, `{"question_id":"q-1","task_version":"1"}`, "show: task_version: must be a whole number, not text"},
		{bridge.APIShow, `{"question_id":"q-1"} x`, "show: the request is not a JSON object: invalid character 'x' after top-level value (at byte 23)"},
		{bridge.APIShow, ``, "question_id: is required"},
	} {
		msg, err := env.NATS.Conn.Request(c.subject, []byte(c.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply struct {
			Questions []bridge.QuestionView `json:"questions"`
			Error     string                `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Error != c.err {
			t.Errorf("%s %s: error %q, want %q", c.subject, c.body, reply.Error, c.err)
		}
		if c.subject == bridge.APIList && c.err == "" && len(reply.Questions) != 1 {
			t.Errorf("%s %s: %d questions, want the pending one", c.subject, c.body, len(reply.Questions))
		}
	}
}
