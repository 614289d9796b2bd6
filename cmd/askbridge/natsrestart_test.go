package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/askbridge/askbridge/bridge"
)

// externalNATS is an operator's nats-server with JetStream, on a fixed
// loopback port so that it can be restarted where askbridge reaches it.
type externalNATS struct {
	t    *testing.T
	port int
	dir  string
	ns   *server.Server
}

func startExternalNATS(t *testing.T) *externalNATS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	e := &externalNATS{t: t, port: port, dir: t.TempDir()}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *externalNATS) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(e.port) }

func (e *externalNATS) start() {
	e.t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: e.port, JetStream: true, StoreDir: e.dir, NoSigs: true, NoLog: true})
	if err != nil {
		e.t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		e.t.Fatal("nats-server did not start")
	}
	e.ns = ns
}

func (e *externalNATS) stop() {
	if e.ns != nil {
		e.ns.Shutdown()
		e.ns.WaitForShutdown()
		e.ns = nil
	}
}

// restart stops the server and starts it again on the same port, with its
// store kept or, with wipe, emptied (streams, consumers, buckets gone).
func (e *externalNATS) restart(wipe bool) {
	e.t.Helper()
	e.stop()
	if wipe {
		e.dir = e.t.TempDir()
	}
	e.start()
}

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
	ext := startExternalNATS(t)
	s, _ := startTestService(t, map[string]string{"ASK_NATS_URL": ext.URL(), "ASK_OPERATORS": "cli:kevin"})
	askAndAnswer(t, s, "job-before")

	// A question asked before the restart, answered after it.
	ag := agentFor(t, s)
	kevin, _, errOut := testCLI(s, "cli:kevin")
	ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: "job-across", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}})
	waitPending(t, kevin, "job-across", "q-1")

	ext.restart(false)
	checkFor(t, 30*time.Second, func() error {
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
	ext := startExternalNATS(t)
	s, _ := startTestService(t, map[string]string{"ASK_NATS_URL": ext.URL(), "ASK_OPERATORS": "cli:kevin"})
	askAndAnswer(t, s, "job-before")
	// A question asked before the store was lost, answered after: it is
	// pending in askbridge's database, and its agent still waits.
	ag := agentFor(t, s)
	kevin, _, errOut := testCLI(s, "cli:kevin")
	ch := askAsync(t, ag, &bridge.Question{Tenant: "acme", JobID: "job-across", QuestionID: "q-1", TaskVersion: 1,
		Question: "Which colour?", Choices: []string{"red", "blue"}})
	waitPending(t, kevin, "job-across", "q-1")

	ext.restart(true)
	checkFor(t, 60*time.Second, func() error {
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
