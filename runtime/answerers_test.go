package runtime_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestOperatorAnswersForNamedAnswerers checks answerers add people without
// taking the question from the operators: the agent asked Ana, and the
// on-call operator answers.
func TestOperatorAnswersForNamedAnswerers(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := choiceQuestion("job-oncall")
	q.Answerers = []string{"slack:UANA"}
	ch := ask(t, env, q)
	v := show(t, env, "slack:UOP", q.JobID, q.QuestionID).Question
	if v == nil || v.Hidden || v.Question == nil || !v.CanAnswer || v.CannotAnswer != "" {
		t.Fatalf("operator's view = %+v", v)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, AttemptID: "oncall", Answer: json.RawMessage(`"blue"`), By: "slack:UOP", ByName: "op"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: blue" || out.By != "slack:UOP" {
		t.Fatalf("outcome = %+v", out)
	}
}

// restrictedQuestion is for Ana (its answerer) and the job's owner.
func restrictedQuestion(job string) *bridge.Question {
	q := choiceQuestion(job)
	q.Question = "Which salary band should the offer letter use?"
	q.Choices = []string{"band-4", "band-5"}
	q.Answerers = []string{"slack:UANA"}
	q.Owner = "slack:UJOB"
	q.Visibility = bridge.VisibilityRestricted
	return q
}

// TestRestrictedQuestionByIdentity checks show and list give a restricted
// question's content to its answerers, its owner and admins only; an
// operator and a reader learn that it waits and for whom, and the operator
// may decline it.
func TestRestrictedQuestionByIdentity(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	q := restrictedQuestion("job-rs")
	ask(t, env, q)
	const refusal = "You can't answer this question: it is restricted to slack:UANA, slack:UJOB and admins; you may decline it without seeing it."
	for _, c := range []struct {
		as                 string
		sees, answer, decl bool
		cannot             string
	}{
		{"slack:UADMIN", true, true, true, ""},
		{"slack:UOWNER", true, true, true, ""},
		{"slack:UANA", true, true, true, ""},
		{"slack:UJOB", true, true, true, ""},
		{"slack:UOP", false, false, true, refusal},
		{"slack:UREADER", false, false, false, "You can't answer this question: slack:UREADER is a reader: it may see that the question waits, but not answer or decline it."},
	} {
		t.Run(c.as, func(t *testing.T) {
			rep := show(t, env, c.as, q.JobID, q.QuestionID)
			data, _ := json.Marshal(rep)
			views := map[string]*bridge.QuestionView{"show": rep.Question}
			lst := list(t, env, c.as, q.JobID)
			if len(lst.Questions) != 1 {
				t.Fatalf("list = %+v", lst)
			}
			views["list"] = &lst.Questions[0]
			listed, _ := json.Marshal(lst)
			data = append(data, listed...)
			for op, v := range views {
				if v == nil || !v.Restricted || v.Hidden == c.sees || v.CanAnswer != c.answer || v.CanDecline != c.decl || v.CannotAnswer != c.cannot {
					t.Fatalf("%s: view = %+v", op, v)
				}
				if c.sees {
					if v.Question == nil || v.Question.Question != q.Question || v.WaitsFor != nil {
						t.Errorf("%s: view = %+v", op, v)
					}
				} else if v.Question != nil || !slices.Equal(v.WaitsFor, []string{"slack:UANA", "slack:UJOB"}) {
					t.Errorf("%s: hidden view = %+v", op, v)
				}
			}
			for _, secret := range []string{q.Question, "band-4", "band-5"} {
				if strings.Contains(string(data), secret) != c.sees {
					t.Errorf("%s sees %q: %v; want %v\n%s", c.as, secret, !c.sees, c.sees, data)
				}
			}
			if !c.sees && len(rep.Audit) != 0 {
				t.Errorf("audit shown to %s: %+v", c.as, rep.Audit)
			}
		})
	}
}

// TestRestrictedQuestionOperatorDeclines checks an operator is refused an
// answer to a restricted question, told why, and may decline it.
func TestRestrictedQuestionOperatorDeclines(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-rd")
	q := restrictedQuestion("job-rd")
	ch := ask(t, env, q)
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, AttemptID: "rd1", Answer: json.RawMessage(`"band-4"`), By: "slack:UOP"})
	ev := refusalFor(t, events, "rd1")
	if ev.Reason != bridge.RefusedForbidden || ev.To != "slack:UOP" ||
		ev.Text != "You can't answer this question: it is restricted to slack:UANA, slack:UJOB and admins; you may decline it without seeing it." {
		t.Fatalf("refusal = %+v", ev)
	}
	waitState(t, env, q, bridge.StatePending)
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: q.QuestionID, AttemptID: "rd2", Action: bridge.ActionDecline, Comment: "Ana is on leave until Monday", By: "slack:UOP"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeDeclined || out.Text != "slack:UOP declined to answer: Ana is on leave until Monday." {
		t.Fatalf("outcome = %+v", out)
	}
}

func list(t *testing.T, env *testenv.Env, as, job string) bridge.ListReply {
	t.Helper()
	data, _ := json.Marshal(bridge.ListRequest{As: as, Tenant: "acme", JobID: job, State: "all"})
	msg, err := env.NATS.Conn.Request(bridge.APIList, data, 5*time.Second)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var reply bridge.ListReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		t.Fatalf("list reply: %v", err)
	}
	return reply
}
