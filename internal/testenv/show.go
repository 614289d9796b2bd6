package testenv

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// ShowLog records the ask.v1.api.show requests a FakeShow received.
type ShowLog struct {
	mu   sync.Mutex
	reqs []bridge.ShowRequest
}

// All returns the requests so far.
func (l *ShowLog) All() []bridge.ShowRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]bridge.ShowRequest(nil), l.reqs...)
}

// FakeShow plays the runtime on ask.v1.api.show: it replies with the
// state states gives the question id, or not at all when states is nil
// (a runtime that does not answer in time), and records each request.
func FakeShow(t testing.TB, nc *nats.Conn, states map[string]string) *ShowLog {
	t.Helper()
	l := &ShowLog{}
	sub, err := nc.Subscribe(bridge.APIShow, func(m *nats.Msg) {
		var req bridge.ShowRequest
		_ = json.Unmarshal(m.Data, &req)
		l.mu.Lock()
		l.reqs = append(l.reqs, req)
		l.mu.Unlock()
		if states == nil {
			return
		}
		reply := bridge.ShowReply{Question: &bridge.QuestionView{Tenant: req.Tenant, JobID: req.JobID,
			QuestionID: req.QuestionID, TaskVersion: req.TaskVersion, State: states[req.QuestionID]}}
		data, _ := json.Marshal(reply)
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return l
}
