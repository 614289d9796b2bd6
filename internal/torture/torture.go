// Package torture runs askbridge under kill -9: fixed-rate questions and
// answer attempts for a bounded time while the server process is SIGKILLed
// every few seconds and restarted on the same data directory. At the end
// it reads everything back through the public contract (the streams and
// the request/reply API) and checks that no acknowledged answer was lost,
// no question resumed twice, no ladder step lost or fired twice and no
// outbox row left behind.
package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bots/engine"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/bridge/agent"
	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/internal/testenv/cluster"
)

// Options shape a run.
type Options struct {
	// Binary is the askbridge executable; it is run as "<Binary> serve".
	Binary string
	// DataDir is the server's data directory, kept across restarts.
	DataDir string
	// Duration is how long questions and answers are sent (and the server killed).
	Duration time.Duration
	// Rate is questions a second; answer attempts go at 80% of it.
	Rate float64
	// KillEvery is the mean time between SIGKILLs (jittered by ±20%).
	KillEvery time.Duration
	// MinKills makes the load go on past Duration until the server has been
	// killed and restarted this many times, so a slow machine, whose
	// restarts take longer, still sees every kill a short run asks for.
	MinKills int
	// ShortMin and ShortMax bound the timeouts of short questions, which
	// climb their ladder and time out during the run (default 6s and 12s).
	ShortMin, ShortMax time.Duration
	// Progress receives one line per kill and per phase; nil discards.
	Progress io.Writer
	// ServerLog receives the child's output; nil means <DataDir>/serve.log.
	ServerLog io.Writer
	// Sync is the server's ASK_NATS_SYNC: "always" (default) or "interval".
	Sync string
	// Replicas, when above zero, runs the cluster variant (cluster.go):
	// this many "askbridge serve" replicas with ASK_STORE=jetstream on a
	// 3-node NATS cluster of "askbridge nats-node" processes; each kill
	// SIGKILLs one replica and one NATS node.
	Replicas int
}

// Report is what a run saw. Counts are for this run's questions only.
type Report struct {
	// Kills is SIGKILLs of askbridge; NodeKills of NATS nodes (cluster).
	Kills, NodeKills int
	// EarlyExits is replica restarts that exited before they were ready
	// and were started again (cluster).
	EarlyExits int
	// Asked is questions whose publish JetStream acknowledged; Stored those
	// the service knows at the end.
	Asked, Stored int
	// AnswersSent is answer attempts published; AnswersAcked those
	// JetStream acknowledged; AckedAcrossKills those whose publish started
	// before a kill (or while what was killed was down) and was
	// acknowledged after it (or after the restart).
	AnswersSent, AnswersAcked, AckedAcrossKills int
	// Settled is acked attempts that answered or declined their question;
	// Refused those refused (by reason in RefusedBy).
	Settled, Refused int
	RefusedBy        map[string]int
	// Resumes is resume messages on the stream; Duplicates resumes beyond
	// the first of a question; Lost acknowledged work with no outcome.
	Resumes, Duplicates, Lost int
	// Cards is question cards posted to the fake Slack (cluster);
	// CardDuplicates cards beyond the first of a question; NoCard stored
	// questions that never got one (ended before it was posted).
	Cards, CardDuplicates, NoCard int
	// By final state.
	Answered, Declined, TimedOut, Failed, Pending int
	// LadderSteps is reminded and escalated events.
	LadderSteps int
	// OutboxBacklog is the service's unsent outbox rows at the end.
	OutboxBacklog int64
	// Violations lists every broken invariant, one sentence each.
	Violations []string
	Elapsed    time.Duration
}

func (r *Report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

// maxViolations bounds the list; the counts still count everything.
const maxViolations = 200

// question is one question this run asked.
type question struct {
	tenant, job, id string
	short, ladder   bool
	fail            bool
	timeout         time.Duration
	sent, acked     bool
	shown           bool // the runtime announced it (asked event)
}

func (q *question) key() string { return fmt.Sprintf("%s/%s/%s@1", q.tenant, q.job, q.id) }

// attempt is one answer attempt this run sent.
type attempt struct {
	id       string
	q        *question
	action   string
	answer   string
	sent     bool
	acked    bool
	startInc int64
	ackInc   int64
}

type run struct {
	o     Options
	out   io.Writer
	runID string
	nc    *nats.Conn
	js    jetstream.JetStream
	agent *agent.Client
	srvs  []*server        // one, or the replicas
	nodes *cluster.Cluster // the cluster variant's NATS
	// keysDir holds the NATS keys the run's own client connects with.
	keysDir string
	slack   *fakeSlack // the cluster variant's Slack
	start   time.Time
	dropped bool         // the events consumer is deleted
	kills   atomic.Int64 // bumped at each kill and restart: attempts acknowledged across one

	mu        sync.Mutex
	questions []*question
	byKey     map[string]*question
	open      []*question // announced, no valid attempt yet
	tried     []*question // announced, with an attempt
	attempts  []*attempt
	nAsk      int
	nAtt      int
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "%6.1fs  %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// Run runs the torture test and reports what it found. An error means the
// run could not be carried out (the server would not start, NATS could not
// be read); broken invariants are in Report.Violations.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Binary == "" || o.DataDir == "" {
		return nil, errors.New("torture: Binary and DataDir are required")
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.Rate <= 0 {
		o.Rate = 50
	}
	if o.KillEvery <= 0 {
		o.KillEvery = 5 * time.Second
	}
	if o.ShortMin <= 0 {
		o.ShortMin = 6 * time.Second
	}
	if o.ShortMax < o.ShortMin {
		o.ShortMax = max(12*time.Second, o.ShortMin)
	}
	out := o.Progress
	if out == nil {
		out = io.Discard
	}
	if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("torture: data dir: %w", err)
	}
	serverLog := o.ServerLog
	if serverLog == nil {
		f, err := os.OpenFile(filepath.Join(o.DataDir, "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
		if err != nil {
			return nil, fmt.Errorf("torture: server log: %w", err)
		}
		defer f.Close()
		serverLog = f
	}
	r := &run{
		o: o, out: out, start: time.Now(),
		runID: fmt.Sprintf("%06x", rand.Uint32()&0xffffff),
		byKey: map[string]*question{},
	}
	// Whatever happens, no child outlives the run.
	defer r.killAll()
	rep := &Report{RefusedBy: map[string]int{}}
	url, err := r.startServices(ctx, serverLog, rep)
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	keys, err := principal.LoadKeys(r.keysDir)
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	admin, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "torture"}, time.Now())
	if err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	r.nc, err = nats.Connect(url, nats.Name("askbridge-torture"), nats.MaxReconnects(-1), nats.UserJWTAndSeed(admin.JWT, admin.Seed),
		nats.ReconnectWait(100*time.Millisecond), nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		return nil, fmt.Errorf("torture: connect %s: %w", url, err)
	}
	defer r.nc.Close()
	if r.js, err = jetstream.New(r.nc); err != nil {
		return nil, fmt.Errorf("torture: jetstream: %w", err)
	}
	if r.agent, err = agent.New(r.nc); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}

	if err := r.keepEvents(ctx); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	defer r.dropEvents() // on an early return; at the end, before the services stop

	// Like a front-end, the answerers answer only questions the runtime
	// announced: a person cannot answer a question nobody showed them.
	for _, tenant := range r.tenants() {
		sub, err := r.nc.Subscribe(bridge.EventSubject(tenant, ">"), r.onEvent)
		if err != nil {
			return nil, fmt.Errorf("torture: subscribe to events: %w", err)
		}
		defer sub.Unsubscribe()
	}

	if err := r.load(ctx, rep); err != nil {
		return rep, err
	}
	if err := r.settle(ctx, rep); err != nil {
		return rep, err
	}
	if err := r.check(ctx, rep); err != nil {
		return rep, err
	}
	if len(rep.Violations) > maxViolations {
		n := len(rep.Violations) - maxViolations
		rep.Violations = append(rep.Violations[:maxViolations], fmt.Sprintf("... and %d more", n))
	}
	r.dropEvents()
	r.stopAll()
	rep.Elapsed = time.Since(r.start)
	r.logf("done: %d violations", len(rep.Violations))
	return rep, nil
}

// windows returns the load's context, which ends after Duration once MinKills
// restarts are done (enough is closed then), and the publishes' context,
// which ends 60 s after the load: publishes started during the load retry
// until acknowledged or until then.
func (r *run) windows(ctx context.Context) (load context.Context, stopLoad context.CancelFunc,
	pub context.Context, stopPub context.CancelFunc, enough chan struct{}) {
	load, stopLoad = context.WithCancel(ctx)
	pub, stopPub = context.WithCancel(ctx)
	enough = make(chan struct{})
	go func() {
		t := time.NewTimer(r.o.Duration)
		defer t.Stop()
		select {
		case <-t.C:
		case <-load.Done():
			return
		}
		select {
		case <-enough:
			stopLoad()
		case <-load.Done():
		}
	}()
	go func() {
		<-load.Done()
		select {
		case <-time.After(60 * time.Second):
			stopPub()
		case <-pub.Done():
		}
	}()
	return load, stopLoad, pub, stopPub, enough
}

// load sends questions and answers at fixed rates for the duration while
// the killer kills and restarts the server; then it stops killing and waits
// for every publish in flight to be acknowledged.
func (r *run) load(ctx context.Context, rep *Report) error {
	loadCtx, stopLoad, pubCtx, stopPub, enough := r.windows(ctx)
	defer stopLoad()
	defer stopPub()

	var fatal error
	var fatalOnce sync.Once
	fail := func(err error) {
		fatalOnce.Do(func() { fatal = err; stopLoad(); stopPub() })
	}

	var pubs sync.WaitGroup
	sem := make(chan struct{}, 512)
	spawn := func(f func()) bool {
		select {
		case sem <- struct{}{}:
		case <-loadCtx.Done():
			return false
		}
		pubs.Add(1)
		go func() {
			defer func() { <-sem; pubs.Done() }()
			f()
		}()
		return true
	}

	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); r.killer(loadCtx, rep, enough, fail) }()
	go func() {
		defer loops.Done()
		r.every(loadCtx, r.o.Rate, func() { r.askOne(pubCtx, spawn) })
	}()
	go func() {
		defer loops.Done()
		r.every(loadCtx, r.o.Rate*0.8, func() { r.answerOne(pubCtx, spawn) })
	}()
	loops.Wait()
	r.logf("load over after %d kills: waiting for publishes in flight", rep.Kills)
	pubs.Wait()
	if fatal != nil {
		return fatal
	}
	if pubCtx.Err() != nil && ctx.Err() == nil {
		return errors.New("torture: publishes were still not acknowledged 60s after the load ended")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.questions {
		if q.acked {
			rep.Asked++
		}
	}
	for _, a := range r.attempts {
		if a.sent {
			rep.AnswersSent++
		}
		if a.acked {
			rep.AnswersAcked++
			// kills is odd while what was killed is down: an attempt
			// published then was acknowledged once it was back, however
			// soon that came before its restart was declared ready.
			if a.ackInc > a.startInc || a.startInc%2 == 1 {
				rep.AckedAcrossKills++
			}
		}
	}
	sent := 0
	for _, q := range r.questions {
		if q.sent {
			sent++
		}
	}
	r.logf("asked %d (%d acked), answer attempts %d (%d acked, %d across kills)",
		sent, rep.Asked, rep.AnswersSent, rep.AnswersAcked, rep.AckedAcrossKills)
	return nil
}

// every calls f at a fixed rate until ctx ends.
func (r *run) every(ctx context.Context, perSecond float64, f func()) {
	if perSecond <= 0 {
		return
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// killer SIGKILLs the server every KillEvery (±20%) and restarts it.
// It closes enough once the server has restarted MinKills times.
func (r *run) killer(ctx context.Context, rep *Report, enough chan<- struct{}, fail func(error)) {
	if r.o.MinKills <= 0 {
		close(enough)
	}
	for {
		wait := time.Duration(float64(r.o.KillEvery) * (0.8 + 0.4*rand.Float64()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := r.killOnce(ctx, rep); err != nil {
			fail(err)
			return
		}
		if rep.Kills == r.o.MinKills {
			close(enough)
		}
	}
}

// publish retries f with the same message id until JetStream acknowledges
// it or ctx ends: the client reconnects by itself (to the same address,
// or to another node of the cluster).
func publish(ctx context.Context, f func(context.Context) error) error {
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := f(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Pace retries while the server is down.
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// askOne publishes the next question: 45% short with the default ladder,
// 15% short with the ladder off, 40% long (1h). A third of the short ones
// fail on timeout.
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
		Timeout:  "1h",
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
	if r.slack != nil {
		// A channel a job, as a team would route its jobs' questions.
		bq.Route = &bridge.Route{Slack: &bridge.SlackRoute{Channel: "C" + strings.ToUpper(strings.ReplaceAll(q.tenant+q.job, "-", ""))}}
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
		r.mu.Lock()
		q.acked = true
		r.mu.Unlock()
	})
}

// onEvent makes a question answerable once its asked event is seen. Events
// published while this client reconnects are missed: those questions are
// simply never answered.
func (r *run) onEvent(m *nats.Msg) {
	var ev bridge.Event
	if json.Unmarshal(m.Data, &ev) != nil || ev.Type != bridge.EventAsked {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.byKey[keyOf(ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion)]; q != nil && !q.shown {
		q.shown = true
		r.open = append(r.open, q)
	}
}

// answerOne publishes an answer attempt to a random acknowledged question:
// mostly a valid answer, sometimes a decline, an invalid answer (refused,
// the question waits on) or a second attempt on a question tried before.
func (r *run) answerOne(ctx context.Context, spawn func(func()) bool) {
	r.mu.Lock()
	a := &attempt{action: bridge.ActionAnswer, answer: "red"}
	p := rand.Float64()
	switch {
	case p < 0.1 && len(r.tried) > 0:
		a.q = r.tried[rand.IntN(len(r.tried))]
		a.answer = "blue"
	case len(r.open) == 0:
		r.mu.Unlock()
		return
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
	a.id = fmt.Sprintf("torture-%s-%d", r.runID, r.nAtt)
	r.nAtt++
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()

	answer, comment := []byte(`"`+a.answer+`"`), ""
	if a.action == bridge.ActionDecline {
		comment = "torture decline"
	}
	at := engine.NewAttempt(bridge.PlatformCLI, a.id, engine.Question{Tenant: a.q.tenant, JobID: a.q.job, QuestionID: a.q.id, TaskVersion: 1},
		engine.Person{Identity: "cli:torture"}, a.action, answer, comment, time.Now(), nil)
	// A publish acknowledged after a kill lived through it.
	a.startInc = r.kills.Load()
	a.sent = spawn(func() {
		err := publish(ctx, func(c context.Context) error {
			return bridge.Publish(c, r.js, bridge.AnswerSubject(a.q.tenant, a.q.job), "attempt-"+a.id, at)
		})
		if err != nil {
			return
		}
		inc := r.kills.Load()
		r.mu.Lock()
		a.acked, a.ackInc = true, inc
		r.mu.Unlock()
	})
}
