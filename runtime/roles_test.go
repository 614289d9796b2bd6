package runtime_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

func TestAPIListAndShowByPermission(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	open := choiceQuestion("job-api")
	ask(t, env, open)
	named := choiceQuestion("job-api")
	named.QuestionID = "q-2"
	named.Answerers = []string{"slack:UANA"}
	ask(t, env, named)

	list := func(as string) bridge.ListReply {
		data, _ := json.Marshal(bridge.ListRequest{As: as, Tenant: "acme"})
		msg, err := env.NATS.Conn.Request(bridge.APIList, data, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply bridge.ListReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		return reply
	}
	summary := func(r bridge.ListReply) string {
		var parts []string
		for _, v := range r.Questions {
			parts = append(parts, fmt.Sprintf("%s:hidden=%v,answer=%v,decline=%v", v.QuestionID, v.Hidden, v.CanAnswer, v.CanDecline))
		}
		return strings.Join(parts, " ")
	}
	for _, c := range []struct{ as, want string }{
		{"slack:UADMIN", "q-1:hidden=false,answer=true,decline=true q-2:hidden=false,answer=true,decline=true"},
		// Answerers add people: an operator still answers q-2.
		{"slack:UOP", "q-1:hidden=false,answer=true,decline=true q-2:hidden=false,answer=true,decline=true"},
		{"slack:UANA", "q-2:hidden=false,answer=true,decline=true"},
		{"slack:UREADER", "q-1:hidden=true,answer=false,decline=false q-2:hidden=true,answer=false,decline=false"},
		{"slack:USTRANGER", ""},
		// A program on the bus, asking as nobody, sees all and may do nothing.
		{"", "q-1:hidden=false,answer=false,decline=false q-2:hidden=false,answer=false,decline=false"},
	} {
		if got := summary(list(c.as)); got != c.want {
			t.Errorf("list as %s = %q, want %q", c.as, got, c.want)
		}
	}
	for _, v := range list("slack:UREADER").Questions {
		if v.Question != nil {
			t.Errorf("a reader sees the content of %s", v.QuestionID)
		}
	}
	if r := show(t, env, "slack:USTRANGER", "job-api", "q-1"); r.Question != nil || r.Error != "There is no question q-1 that you can see." {
		t.Errorf("stranger show = %+v", r)
	}
	r := show(t, env, "slack:UADMIN", "job-api", "q-1")
	if r.Question == nil || len(r.Audit) != 1 || r.Audit[0].To != bridge.StatePending {
		t.Errorf("admin show = %+v", r)
	}
	if r := show(t, env, "bad identity", "job-api", "q-1"); !strings.HasPrefix(r.Error, "as: ") {
		t.Errorf("bad identity show = %+v", r)
	}
}

func TestTenantScopedRoles(t *testing.T) {
	t.Parallel()
	scoped := runtime.Roles{Admins: []string{"slack:UADMIN"}, Operators: []string{"acme/slack:UACME", "other/slack:UOTHER"}}
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: scoped, Clock: clock})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.>")
	acme := choiceQuestion("job-sc")
	acme.Timeout = "4s" // the answerers' reminder falls due at 1s
	ch := ask(t, env, acme)
	clock.Advance(1500 * time.Millisecond)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, ev := range events.Events() {
			if ev.Type == bridge.EventReminded && ev.JobID == "job-sc" {
				if len(ev.Targets) != 1 || ev.Targets[0] != "slack:UACME" {
					return fmt.Errorf("reminded %v, want acme's operator only", ev.Targets)
				}
				return nil
			}
		}
		return fmt.Errorf("no reminder yet: %s", events.EventTypes())
	})
	// Another tenant's operator may not answer here.
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-sc", QuestionID: "q-1", AttemptID: "sc-other", Answer: json.RawMessage(`"red"`), By: "slack:UOTHER"})
	if ev := refusalFor(t, events, "sc-other"); ev.Reason != bridge.RefusedForbidden {
		t.Fatalf("other tenant's operator: %+v", ev)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-sc", QuestionID: "q-1", AttemptID: "sc-acme", Answer: json.RawMessage(`"red"`), By: "slack:UACME"})
	if out := outcome(t, ch); out.Text != "The answer: red" || out.By != "slack:UACME" {
		t.Fatalf("outcome = %+v", out)
	}
}
