package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// Recorder collects the messages of one subject pattern from the start of
// its stream, for assertions.
type Recorder struct {
	mu   sync.Mutex
	msgs []jetstream.Msg
	cc   jetstream.ConsumeContext
}

// Record starts recording every message on subject (wildcards allowed)
// held by stream, from its first message.
func (e *Env) Record(t testing.TB, stream, subject string) *Recorder {
	t.Helper()
	cons, err := e.NATS.JS.OrderedConsumer(context.Background(), stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		t.Fatalf("testenv: record %s: %v", subject, err)
	}
	r := &Recorder{}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		r.mu.Lock()
		r.msgs = append(r.msgs, m)
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatalf("testenv: record %s: %v", subject, err)
	}
	r.cc = cc
	t.Cleanup(cc.Stop)
	return r
}

// Len is how many messages were recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

// StreamCount is how many messages stream holds on subject now. Unlike a
// Recorder, which receives them some time later, it is exact the moment a
// reader has seen a message: count after awaiting what was expected.
func StreamCount(t testing.TB, n *bridge.NATS, stream, subject string) uint64 {
	t.Helper()
	s, err := n.JS.Stream(context.Background(), stream)
	if err != nil {
		t.Fatalf("testenv: stream %s: %v", stream, err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatalf("testenv: stream %s: %v", stream, err)
	}
	var total uint64
	for _, v := range info.State.Subjects {
		total += v
	}
	return total
}

// Data returns the recorded bodies in order.
func (r *Recorder) Data() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]byte, len(r.msgs))
	for i, m := range r.msgs {
		out[i] = m.Data()
	}
	return out
}

// Events decodes recorded events.
func (r *Recorder) Events() []bridge.Event {
	var out []bridge.Event
	for _, d := range r.Data() {
		var ev bridge.Event
		if json.Unmarshal(d, &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

// Resumes decodes recorded resumes.
func (r *Recorder) Resumes() []bridge.Resume {
	var out []bridge.Resume
	for _, d := range r.Data() {
		var res bridge.Resume
		if json.Unmarshal(d, &res) == nil {
			out = append(out, res)
		}
	}
	return out
}

// EventTypes lists the recorded event types in order, e.g. "asked,answered".
func (r *Recorder) EventTypes() string {
	var types []string
	for _, ev := range r.Events() {
		types = append(types, ev.Type)
	}
	return strings.Join(types, ",")
}

// Attempt publishes an answer attempt as a front-end would.
func (e *Env) Attempt(ctx context.Context, a bridge.AnswerAttempt) error {
	if a.AttemptID == "" {
		return fmt.Errorf("testenv: attempt without attempt_id")
	}
	return bridge.Publish(ctx, e.NATS.JS, bridge.AnswerSubject(a.Tenant, a.JobID), "attempt-"+a.AttemptID, a)
}

// Conn opens a second client connection to the embedded server.
func (e *Env) Conn(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(e.URL(), e.NATS.Admin())
	if err != nil {
		t.Fatalf("testenv: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Publications counts what is published on a subject the way JetStream
// keeps it: once per Nats-Msg-Id. The runtime's input streams are work
// queues, which let a message go once the runtime has it, so a test that
// asks how many attempts were made counts them where they are sent.
type Publications struct {
	nc  *nats.Conn
	sub *nats.Subscription
	ids map[string]bool
}

// Published starts counting publications on subject; create it before the
// publications it should see.
func Published(t testing.TB, nc *nats.Conn, subject string) *Publications {
	t.Helper()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatalf("testenv: subscribe %s: %v", subject, err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatalf("testenv: subscribe %s: %v", subject, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("testenv: subscribe %s: %v", subject, err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return &Publications{nc: nc, sub: sub, ids: map[string]bool{}}
}

// Count is how many distinct messages were published so far. It is
// exact once whatever followed them has been seen: the server sends a
// message to this subscriber before it acknowledges its publication, and
// the round trip below waits until everything sent before has arrived.
func (p *Publications) Count(t testing.TB) int {
	t.Helper()
	if err := p.nc.Flush(); err != nil {
		t.Fatalf("testenv: flush: %v", err)
	}
	for {
		n, _, err := p.sub.Pending()
		if err != nil {
			t.Fatalf("testenv: pending: %v", err)
		}
		if n == 0 {
			return len(p.ids)
		}
		m, err := p.sub.NextMsg(time.Second)
		if err != nil {
			t.Fatalf("testenv: next message: %v", err)
		}
		id := m.Header.Get(nats.MsgIdHdr)
		if id == "" {
			id = fmt.Sprintf("no-id-%d", len(p.ids))
		}
		p.ids[id] = true
	}
}

// KVTTL is the TTL the last write of key in bucket carries ("" for none:
// the key lives as long as the bucket keeps anything).
func KVTTL(t testing.TB, n *bridge.NATS, bucket, key string) string {
	t.Helper()
	ctx := context.Background()
	s, err := n.JS.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatalf("testenv: bucket %s: %v", bucket, err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "$KV."+bucket+"."+key)
	if err != nil {
		t.Fatalf("testenv: %s in %s: %v", key, bucket, err)
	}
	return m.Header.Get(jetstream.MsgTTLHeader)
}
