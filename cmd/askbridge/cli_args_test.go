package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
)

// TestQuestionArgs: show, answer, decline and cancel read a question in
// one shape: JOB QUESTION, JOB/QUESTION, QUESTION alone (cancel: JOB
// alone is the job).
func TestQuestionArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		args     []string
		min, max int
		want     questionRef
		rest     string
		err      string
	}{
		{"show JOB QUESTION", []string{"job-1", "q-1"}, 0, 0, questionRef{"job-1", "q-1"}, "", ""},
		{"show JOB/QUESTION", []string{"job-1/q-1"}, 0, 0, questionRef{"job-1", "q-1"}, "", ""},
		{"show QUESTION", []string{"q-1"}, 0, 0, questionRef{"", "q-1"}, "", ""},
		{"show too many", []string{"a", "b", "c"}, 0, 0, questionRef{}, "", `not also "c"`},
		{"show nothing", nil, 0, 0, questionRef{}, "", "takes a job and a question"},
		{"show JOB/", []string{"job-1/"}, 0, 0, questionRef{}, "", "question: "},
		{"show /QUESTION", []string{"/q-1"}, 0, 0, questionRef{}, "", "job: "},
		{"answer JOB QUESTION ANSWER", []string{"job-1", "q-1", "deny", "too", "much"}, 1, -1, questionRef{"job-1", "q-1"}, "deny too much", ""},
		{"answer JOB/QUESTION ANSWER", []string{"job-1/q-1", "blue", "sky"}, 1, -1, questionRef{"job-1", "q-1"}, "blue sky", ""},
		{"answer QUESTION ANSWER", []string{"q-1", "blue sky"}, 1, -1, questionRef{"", "q-1"}, "blue sky", ""},
		{"answer JOB/QUESTION, no answer", []string{"job-1/q-1"}, 1, -1, questionRef{}, "", "takes a job, a question and the answer"},
		{"answer QUESTION, no answer", []string{"q-1"}, 1, -1, questionRef{}, "", "takes a job, a question and the answer"},
		{"answer a bad job", []string{"job 1", "q-1", "yes"}, 1, -1, questionRef{}, "", `job: "job 1"`},
	} {
		ref, rest, err := questionArgs(c.args, "the answer", c.min, c.max)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
		case c.err == "" && (err != nil || ref != c.want || strings.Join(rest, " ") != c.rest):
			t.Errorf("%s: %+v %q %v, want %+v %q", c.name, ref, rest, err, c.want, c.rest)
		}
	}
	for _, c := range []struct {
		args []string
		want questionRef
		err  string
	}{
		{[]string{"job-1"}, questionRef{Job: "job-1"}, ""},
		{[]string{"job-1", "q-1"}, questionRef{"job-1", "q-1"}, ""},
		{[]string{"job-1/q-1"}, questionRef{"job-1", "q-1"}, ""},
		{[]string{"job-1/q-1", "q-2"}, questionRef{}, `not also "q-2"`},
		{[]string{"a", "b", "c"}, questionRef{}, "takes a job"},
		{nil, questionRef{}, "takes a job"},
	} {
		ref, err := jobArgs(c.args)
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) || c.err == "" && (err != nil || ref != c.want) {
			t.Errorf("cancel %q: %+v %v, want %+v, error %q", c.args, ref, err, c.want, c.err)
		}
	}
}

// TestCLIQuestionFormsEverywhere answers, declines and cancels a question
// named in each form show takes, against the service.
func TestCLIQuestionFormsEverywhere(t *testing.T) {
	t.Parallel()
	s, _ := startTestService(t, func(c *config.Config) { c.Operators, c.Admins = []string{"cli:kevin"}, []string{"cli:ana"} })
	ag := agentFor(t, s)
	kevin, _, kevinErr := testCLI(s, "cli:kevin")
	ana, _, anaErr := testCLI(s, "cli:ana")
	ctx := context.Background()
	for i, c := range []struct {
		name    string
		run     func(context.Context, []string) int
		args    func(job, q string) []string
		outcome string
	}{
		{"answer JOB QUESTION", kevin.answer, func(j, q string) []string { return []string{j, q, "blue"} }, bridge.OutcomeAnswered},
		{"answer JOB/QUESTION", kevin.answer, func(j, q string) []string { return []string{j + "/" + q, "blue"} }, bridge.OutcomeAnswered},
		{"answer QUESTION", kevin.answer, func(j, q string) []string { return []string{q, "blue"} }, bridge.OutcomeAnswered},
		{"decline JOB QUESTION", kevin.decline, func(j, q string) []string { return []string{j, q} }, bridge.OutcomeDeclined},
		{"decline JOB/QUESTION", kevin.decline, func(j, q string) []string { return []string{j + "/" + q} }, bridge.OutcomeDeclined},
		{"decline QUESTION", kevin.decline, func(j, q string) []string { return []string{q, "--comment", "ask Ana"} }, bridge.OutcomeDeclined},
		{"cancel JOB QUESTION", ana.cancel, func(j, q string) []string { return []string{j, q} }, bridge.OutcomeCanceled},
		{"cancel JOB/QUESTION", ana.cancel, func(j, q string) []string { return []string{j + "/" + q, "--reason", "done"} }, bridge.OutcomeCanceled},
	} {
		job, qid := fmt.Sprintf("job-form-%d", i), fmt.Sprintf("q-form-%d", i)
		ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: job, QuestionID: qid, TaskVersion: 1,
			Question: "Which colour?", Choices: []string{"red", "blue"}})
		waitPending(t, kevin, job, qid)
		if code := c.run(ctx, c.args(job, qid)); code != exitOK {
			t.Fatalf("%s: exit %d: %s%s", c.name, code, kevinErr, anaErr)
		}
		if res := waitOutcome(t, ch); res.Outcome != c.outcome {
			t.Errorf("%s: outcome %+v, want %s", c.name, res, c.outcome)
		}
	}
}
