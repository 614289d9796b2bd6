package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/testenv"
)

func readyz(s *service) (int, string) {
	resp, err := http.Get("http://" + s.Addr() + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// askAndAnswer asks a question through the agent package and answers it
// with the CLI; the agent must read the answer.
func askAndAnswer(t *testing.T, s *service, job string) {
	t.Helper()
	ag := agentFor(t, s)
	kevin, _, errOut := testCLI(s, "cli:kevin")
	ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: job, QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}})
	waitPending(t, kevin, job, "q-1")
	if code := kevin.answer(context.Background(), []string{job, "q-1", "blue"}); code != exitOK {
		t.Fatalf("answer %s: exit %d: %s", job, code, errOut)
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" {
		t.Fatalf("outcome of %s = %+v", job, res)
	}
}

// TestExternalNATSRestartKeepsWorking checks askbridge on an operator's
// NATS keeps asking and deciding after that server restarts with its store.
func TestExternalNATSRestartKeepsWorking(t *testing.T) {
	t.Parallel()
	ext := testenv.StartExternalNATS(t)
	s, _ := startTestService(t, func(c *config.Config) { c.NATSURL, c.Operators = ext.URL(), []string{"cli:kevin"} })
	askAndAnswer(t, s, "job-before")

	// A question asked before the restart, answered after it.
	ag := agentFor(t, s)
	kevin, _, errOut := testCLI(s, "cli:kevin")
	ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: "job-across", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}})
	waitPending(t, kevin, "job-across", "q-1")

	ext.Restart(false)
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if code, body := readyz(s); code != http.StatusOK {
			return fmt.Errorf("/readyz %d %s", code, body)
		}
		return nil
	})
	if code := kevin.answer(context.Background(), []string{"job-across", "q-1", "red"}); code != exitOK {
		t.Fatalf("answer across the restart: exit %d: %s", code, errOut)
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: red" {
		t.Fatalf("outcome across the restart = %+v", res)
	}
	askAndAnswer(t, s, "job-after")
}

// TestExternalNATSWipedStore checks askbridge on an operator's NATS that
// restarted without its store (streams, consumers, buckets gone).
func TestExternalNATSWipedStore(t *testing.T) {
	t.Parallel()
	ext := testenv.StartExternalNATS(t)
	s, _ := startTestService(t, func(c *config.Config) { c.NATSURL, c.Operators = ext.URL(), []string{"cli:kevin"} })
	askAndAnswer(t, s, "job-before")
	// A question asked before the store was lost, answered after: it is
	// pending in askbridge's database, and its agent still waits.
	ag := agentFor(t, s)
	kevin, _, errOut := testCLI(s, "cli:kevin")
	ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: "job-across", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}})
	waitPending(t, kevin, "job-across", "q-1")

	ext.Restart(true)
	testenv.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		if code, body := readyz(s); code != http.StatusOK {
			return fmt.Errorf("/readyz %d %s", code, strings.TrimSpace(body))
		}
		return nil
	})
	if code := kevin.answer(context.Background(), []string{"job-across", "q-1", "red"}); code != exitOK {
		t.Fatalf("answer across the restart: exit %d: %s", code, errOut)
	}
	if res := waitOutcome(t, ch); res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: red" {
		t.Fatalf("outcome across the restart = %+v", res)
	}
	askAndAnswer(t, s, "job-after")
}
