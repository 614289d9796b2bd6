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
	// late holds the last maxLate attempts whose wait ran out, and
	// whether their decision came since (lateOrder: oldest first). A
	// retry of one carries the same id, which JetStream drops as a
	// duplicate, so the runtime never tells of it again: it is answered
	// from here.
	late      map[string]bool
	lateOrder []string
}

// maxLate is how many attempts given up on a Decisions remembers.
const maxLate = 1024

// decidedLate is a channel closed from the start: the wait for an attempt
// already decided.
var decidedLate = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// waiter is everyone waiting for one attempt id: a platform's retry of an
// interaction carries the same id, and JetStream keeps one copy of it.
type waiter struct {
	ch chan struct{}
	n  int
}

// WatchDecisions subscribes to a fresh inbox and to every event; only
// attempt ids are read.
func WatchDecisions(nc *nats.Conn) (*Decisions, error) {
	d := &Decisions{waiting: map[string]*waiter{}, late: map[string]bool{}, inbox: nc.NewInbox()}
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
	if _, ok := d.late[attemptID]; ok {
		d.late[attemptID] = true
	}
	d.mu.Unlock()
	if w != nil {
		close(w.ch)
	}
}

// expect registers one more waiter for attemptID, or returns decidedLate when
// its decision came after an earlier wait for it ran out.
func (d *Decisions) expect(attemptID string) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.late[attemptID] {
		return decidedLate
	}
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
	d.forgetLocked(attemptID, ch)
}

func (d *Decisions) forgetLocked(attemptID string, ch <-chan struct{}) {
	if w := d.waiting[attemptID]; w != nil && w.ch == ch {
		if w.n--; w.n == 0 {
			delete(d.waiting, attemptID)
		}
	}
}

// giveUp drops a waiter whose time ran out and reports whether the
// decision came all the same (its waiter was ended); if not, attemptID is
// remembered, for a retry of it.
func (d *Decisions) giveUp(attemptID string, ch <-chan struct{}) (decided bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.waiting[attemptID]; w == nil || w.ch != ch {
		return true
	}
	d.forgetLocked(attemptID, ch)
	if _, ok := d.late[attemptID]; !ok {
		d.lateOrder = append(d.lateOrder, attemptID)
		if len(d.lateOrder) > maxLate {
			delete(d.late, d.lateOrder[0])
			d.lateOrder = d.lateOrder[1:]
		}
	}
	d.late[attemptID] = false
	return false
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
// came (for a retry of an attempt whose wait ran out, whether it came
// since); after an error nothing was published that needs waiting for.
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
		return d.giveUp(at.AttemptID, ch), nil
	}
}
