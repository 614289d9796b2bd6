package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
)

// cliIdentity answers on NATS as the CLI does, and reads the API: an
// operator of every tenant (ASK_OPERATORS).
const cliIdentity = "cli:torture"

// askOne publishes the next question: 45% short with the default ladder,
// 15% short with the ladder off, 40% long (1h). A third of the short ones
// fail on timeout. Each job's questions go to a Slack channel of their own.
func (r *run) askOne(ctx context.Context, spawn func(func()) bool) {
	r.mu.Lock()
	n := r.nAsk
	r.nAsk++
	r.mu.Unlock()
	q := &question{
		tenant: fmt.Sprintf("tt%s%c", r.runID, 'a'+rune(n%2)),
		job:    fmt.Sprintf("job-%d", n/3),
		id:     fmt.Sprintf("q-%d", n),
		ladder: true,
	}
	switch p := rand.Float64(); {
	case p < 0.45:
		q.short = true
	case p < 0.60:
		q.short, q.ladder = true, false
	}
	bq := &bridge.Question{
		Tenant: q.tenant, JobID: q.job, QuestionID: q.id, TaskVersion: 1,
		Question: fmt.Sprintf("Torture question %d: red or blue?", n),
		Choices:  []string{"red", "blue"},
		Owner:    "cli:owner",
		// Its ladder reminds its answerer and owner, on the CLI: the
		// person clicking is an operator, whom a reminder would reach
		// in a Slack DM only if the question named no answerers, and
		// one DM channel (paced at a message a second, as Slack allows)
		// would hold every job's events behind its reminders.
		Answerers: []string{"cli:answerer"},
		Timeout:   "1h",
		// A channel a job, as a team would route its jobs' questions.
		Route: &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C" + strings.ToUpper(strings.ReplaceAll(q.tenant+q.job, "-", ""))}},
	}
	if q.short {
		span := r.o.ShortMax - r.o.ShortMin
		q.timeout = r.o.ShortMin + time.Duration(rand.Int64N(int64(span)+1))
		q.timeout = q.timeout.Round(100 * time.Millisecond)
		bq.Timeout = q.timeout.String()
		if rand.IntN(3) == 0 {
			q.fail = true
			bq.OnTimeout = bridge.OnTimeoutFail
		}
	} else {
		q.timeout = time.Hour
	}
	if !q.ladder {
		bq.Escalation = &bridge.Escalation{Off: true}
		bq.EscalationReason = "torture: no reminders for this one"
	}
	r.mu.Lock()
	r.questions = append(r.questions, q)
	r.byKey[q.key()] = q
	r.mu.Unlock()
	q.sent = spawn(func() {
		if err := publish(ctx, func(c context.Context) error { return r.agent.Publish(c, bq) }); err != nil {
			return
		}
		at := time.Now()
		r.mu.Lock()
		q.acked, q.ackedAt = true, at
		r.mu.Unlock()
	})
}

// onCard makes a question answerable once its card is posted: a person
// answers only what they were shown.
func (r *run) onCard(c card) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.byKey[c.key]; q != nil && q.card == nil {
		q.card = &c
		r.open = append(r.open, q)
	}
}

// answerOne gives an answer to a random question whose card is posted:
// mostly a click on its "red" button; sometimes a second click ("blue")
// on a question answered before (refused, or the first when it overtook
// an earlier one), and on NATS as the CLI does a decline or an answer
// that is not a choice (refused, the question waits on).
func (r *run) answerOne(ctx context.Context, spawn func(func()) bool) {
	a := r.nextAnswer()
	if a == nil {
		return
	}
	// An answer acknowledged after a kill lived through it.
	a.startInc = r.kills.Load()
	if a.click != nil {
		a.sent = spawn(func() { r.clickUntilAcked(ctx, a) })
		return
	}
	a.sent = spawn(func() { r.publishAttempt(ctx, a) })
}

// nextAnswer picks the next answer and records it.
func (r *run) nextAnswer() *attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := &attempt{action: bridge.ActionAnswer, answer: "red", by: cliIdentity}
	p := rand.Float64()
	switch {
	case p < 0.1 && len(r.tried) > 0:
		a.q = r.tried[rand.IntN(len(r.tried))]
		a.answer = "blue"
	case len(r.open) == 0:
		return nil
	case p < 0.2:
		a.q = r.open[rand.IntN(len(r.open))]
		a.answer = "green" // not a choice: refused, the question keeps waiting
	default:
		i := rand.IntN(len(r.open))
		a.q = r.open[i]
		r.open[i] = r.open[len(r.open)-1]
		r.open = r.open[:len(r.open)-1]
		r.tried = append(r.tried, a.q)
		if p < 0.3 {
			a.action, a.answer = bridge.ActionDecline, ""
		}
	}
	n := r.nAtt
	r.nAtt++
	a.id = fmt.Sprintf("torture-%s-%d", r.runID, n)
	if a.action == bridge.ActionAnswer && a.answer != "green" {
		c, err := r.newClick(a.q, a.answer, n)
		if err != nil {
			r.problems = append(r.problems, err.Error())
			return nil
		}
		a.click, a.id, a.by = c, clickAttemptID(c), clickIdentity
	}
	r.attempts = append(r.attempts, a)
	return a
}

// publishAttempt publishes a NATS answer attempt until JetStream
// acknowledges it.
func (r *run) publishAttempt(ctx context.Context, a *attempt) {
	answer, comment := []byte(`"`+a.answer+`"`), ""
	if a.action == bridge.ActionDecline {
		comment = "torture decline"
	}
	at := engine.NewAttempt(bridge.PlatformCLI, a.id, engine.Question{Tenant: a.q.tenant, JobID: a.q.job, QuestionID: a.q.id, TaskVersion: 1},
		engine.Person{Identity: a.by}, a.action, answer, comment, time.Now(), nil)
	r.mu.Lock()
	a.sentAt = time.Now()
	r.mu.Unlock()
	err := publish(ctx, func(c context.Context) error {
		return bridge.Publish(c, r.js, bridge.AnswerSubject(a.q.tenant, a.q.job), "attempt-"+a.id, at)
	})
	if err != nil {
		return
	}
	inc, now := r.kills.Load(), time.Now()
	r.mu.Lock()
	a.acked, a.ackInc, a.ackedAt = true, inc, now
	r.mu.Unlock()
}
