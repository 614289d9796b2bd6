package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HeaderDecidedTo on an answer attempt names a core NATS inbox that the
// runtime tells, with the attempt id as the body, once its decision on
// the attempt is committed. It spares a front-end that waits for the
// decision the trip through the outbox and the events stream.
const HeaderDecidedTo = "Ask-Decided-To"

// HeaderDecision and HeaderDecisionText, on the runtime's message to
// HeaderDecidedTo about an attempt, say what became of it (the type of
// its event: answered, declined, refused, approval_recorded, ...) and the
// text a person reads (a refusal's reason): a front-end that may not read
// the job's events learns it there.
const (
	HeaderDecision     = "Ask-Decision"
	HeaderDecisionText = "Ask-Decision-Text"
)

// CancelDecision is what the runtime publishes to a cancel's
// HeaderDecidedTo once the cancel is committed: how many questions it
// ended, or why it was refused.
type CancelDecision struct {
	Ended   int    `json:"ended"`
	Refused string `json:"refused,omitempty"`
}

// ValidNotifySubject reports whether the runtime may publish to s: a
// literal subject under "_INBOX.", no wildcards, no spaces. The header
// comes from whoever published the attempt, and the runtime's own NATS
// permissions must not become theirs: a subject such as
// "$JS.API.STREAM.DELETE.ASK_QUESTIONS" or one of askbridge's streams
// is refused.
func ValidNotifySubject(s string) bool {
	if !strings.HasPrefix(s, "_INBOX.") || len(s) > 256 || strings.ContainsAny(s, "*> \t\r\n") {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" {
			return false
		}
	}
	return true
}

// Decisions lets a front-end wait for the runtime's decision on an attempt
// it proposed. With a JetStream that does not fsync every write, a chat
// platform is answered only once the decision is committed (fsynced) in the
// runtime's store, so an acknowledged click survives a power cut.
//
// The runtime tells the Decisions' own inbox (HeaderDecidedTo); the
// decision's event on the bus counts too, so a runtime that does not
// read the header still ends the wait.
type Decisions struct {
	mu      sync.Mutex
	waiting map[string]*waiter
	inbox   string
	subs    []*nats.Subscription
}

// waiter is everyone waiting for one attempt id: a platform's retry of an
// interaction carries the same id, and JetStream keeps one copy of it.
type waiter struct {
	ch chan struct{}
	n  int
}

// WatchDecisions subscribes to a fresh inbox and to every event; only
// attempt ids are read.
func WatchDecisions(nc *nats.Conn) (*Decisions, error) {
	d := &Decisions{waiting: map[string]*waiter{}, inbox: nc.NewInbox()}
	direct, err := nc.Subscribe(d.inbox, func(m *nats.Msg) { d.done(string(m.Data)) })
	if err != nil {
		return nil, err
	}
	events, err := nc.Subscribe(PrefixEvent+".>", func(m *nats.Msg) {
		var ev struct {
			AttemptID string `json:"attempt_id"`
		}
		if json.Unmarshal(m.Data, &ev) == nil && ev.AttemptID != "" {
			d.done(ev.AttemptID)
		}
	})
	if err != nil {
		_ = direct.Unsubscribe()
		return nil, err
	}
	d.subs = []*nats.Subscription{direct, events}
	return d, nil
}

func (d *Decisions) done(attemptID string) {
	d.mu.Lock()
	w := d.waiting[attemptID]
	delete(d.waiting, attemptID)
	d.mu.Unlock()
	if w != nil {
		close(w.ch)
	}
}

// expect registers one more waiter for attemptID.
func (d *Decisions) expect(attemptID string) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.waiting[attemptID]
	if w == nil {
		w = &waiter{ch: make(chan struct{})}
		d.waiting[attemptID] = w
	}
	w.n++
	return w.ch
}

// forget drops one waiter for attemptID; the last one out removes it.
func (d *Decisions) forget(attemptID string, ch <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.waiting[attemptID]; w != nil && w.ch == ch {
		if w.n--; w.n == 0 {
			delete(d.waiting, attemptID)
		}
	}
}

// Close stops watching.
func (d *Decisions) Close() error {
	for _, s := range d.subs {
		_ = s.Unsubscribe()
	}
	return nil
}

// PublishAttempt publishes an answer attempt durably (its message id is
// "attempt-" and its attempt id) and, when d is not nil, waits until the
// runtime has decided it or ctx ends. It reports whether the decision
// came; after an error nothing was published that needs waiting for.
func (d *Decisions) PublishAttempt(ctx context.Context, js jetstream.JetStream, at *AnswerAttempt) (decided bool, err error) {
	data, err := json.Marshal(at)
	if err != nil {
		return false, err
	}
	msg := &nats.Msg{
		Subject: AnswerSubject(at.Tenant, at.JobID),
		Data:    data,
		Header:  nats.Header{},
	}
	var ch <-chan struct{}
	if d != nil {
		msg.Header.Set(HeaderDecidedTo, d.inbox)
		ch = d.expect(at.AttemptID)
	}
	if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID("attempt-"+at.AttemptID)); err != nil {
		if d != nil {
			d.forget(at.AttemptID, ch)
		}
		return false, fmt.Errorf("nats: publish %s: %w", msg.Subject, err)
	}
	if d == nil {
		return false, nil
	}
	select {
	case <-ch:
		return true, nil
	case <-ctx.Done():
		d.forget(at.AttemptID, ch)
		return false, nil
	}
}
