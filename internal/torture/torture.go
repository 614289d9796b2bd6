// Package torture runs askbridge under kill -9: fixed-rate questions and
// answers for a bounded time while the server process (or, in the cluster
// variant, its replicas and NATS nodes) is SIGKILLed every few seconds and
// restarted on the same data. Questions are shown on a fake Slack; a
// person answers by clicking their cards' buttons through the service's
// Slack interactions endpoint, signed as Slack signs, and some kills are
// aimed at a click in flight. At the end it reads everything back through
// the public contract (the streams and the request/reply API) and checks
// that no acknowledged question, click or answer was lost or decided
// twice, that every card came in time, no question resumed twice, no
// ladder step lost or fired twice and no outbox row left behind; and it
// measures how long cards, answers' resumes and ladder steps took.
package torture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	// Rate is questions a second; answers go at 80% of it.
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
	// 3-node NATS cluster of "askbridge nats-node" processes; a kill
	// SIGKILLs one replica, and one NATS node with it unless it is aimed
	// at a click.
	Replicas int
	// CardWithin is how soon after its publish is acknowledged a question's
	// card must be posted, not counting time when no replica was ready;
	// zero means DefaultCardWithin. The command measures against the
	// default; a test gives a bound that only detects a card that never
	// comes, as a loaded machine may post any card late.
	CardWithin time.Duration
}

// DefaultCardWithin is the failover promise of docs/deploy.md: a card
// comes within seconds of its question, kills included.
const DefaultCardWithin = 10 * time.Second

// Report is what a run saw. Counts are for this run's questions only.
type Report struct {
	// Kills is SIGKILLs of askbridge; NodeKills of NATS nodes (cluster);
	// AimedKills those of Kills aimed at a click in flight.
	Kills, NodeKills, AimedKills int
	// EarlyExits is replica starts that exited before they were ready
	// and were started again (cluster); each is a violation.
	EarlyExits int
	// AllDown is how many times, and for how long in all, no replica was
	// ready (every kill of the single server).
	AllDown    int
	AllDownFor time.Duration
	// Asked is questions whose publish JetStream acknowledged; Stored those
	// the service knows at the end.
	Asked, Stored int
	// AnswersSent is answers given (clicks and NATS attempts); AnswersAcked
	// those acknowledged (a click's HTTP 200, a publish's JetStream ack);
	// AckedAcrossKills those sent before a kill (or while what was killed
	// was down) and acknowledged after it (or after the restart).
	AnswersSent, AnswersAcked, AckedAcrossKills int
	// Clicks is answers given by clicking a card's button on a replica's
	// Slack interactions endpoint; ClicksAcked those answered HTTP 200;
	// ClicksRetried those that took more than one request; ClicksCut those
	// with a request cut off by the kill of the replica handling it: killed
	// before it claimed the click (CutBeforeClaim), between its claim and
	// the attempt's publication (CutBetween), or after the publication
	// (CutAfterPublish). ClicksFolded is clicks folded into the same
	// person's same click made just before (a double click), which they
	// count as.
	Clicks, ClicksAcked, ClicksRetried, ClicksCut, ClicksFolded int
	CutBeforeClaim, CutBetween, CutAfterPublish                 int
	// Settled is acked answers that answered or declined their question;
	// Refused those refused (by reason in RefusedBy); OutOfOrder questions
	// settled by an answer sent after another was acknowledged.
	Settled, Refused, OutOfOrder int
	RefusedBy                    map[string]int
	// Resumes is resume messages on the stream; Duplicates resumes beyond
	// the first of a question; Lost acknowledged work with no outcome.
	Resumes, Duplicates, Lost int
	// Cards is question cards posted to the fake Slack; CardDuplicates
	// cards beyond the first of a question; CardsLate cards posted more
	// than Options.CardWithin after the question's acknowledged publish (not
	// counting time when no replica was ready); CardsMissing questions
	// without a card still pending past then; NoCard questions that ended
	// before their card was due and never got one.
	Cards, CardDuplicates, CardsLate, CardsMissing, NoCard int
	// Lookups is the fake Slack's conversations.history and .replies
	// calls: tries looking for a card an earlier try may have posted,
	// which the adapter paces per method, one a second.
	Lookups int
	// CardDelay* are the first cards' delays after the acknowledged
	// publish, not counting time when no replica was ready.
	CardDelayP50, CardDelayP99, CardDelayMax time.Duration
	// ResumeDelay* are, of the ResumesMeasured acknowledged answers that
	// settled their question, the delays from the answer's first request
	// (a click) or publish (a NATS attempt) to its question's resume on
	// ASK_RESUMES; LadderLate* are, of the StepsMeasured ladder steps
	// (reminders, escalations and timeouts), how late each step's event
	// reached ASK_EVENTS past its due instant. Neither counts time when no
	// replica was ready. Figures, not checks (measure.go).
	ResumesMeasured, StepsMeasured                 int
	ResumeDelayP50, ResumeDelayP99, ResumeDelayMax time.Duration
	LadderLateP50, LadderLateP99, LadderLateMax    time.Duration
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
	ackedAt         time.Time
	card            *card // its first card, once posted
}

func (q *question) key() string { return keyOf(q.tenant, q.job, q.id, 1) }

// attempt is one answer this run gave: a click on the question's card, or
// an attempt published on NATS as the CLI does.
type attempt struct {
	id       string // the attempt id the runtime decides
	q        *question
	action   string
	answer   string
	by       string // who answers: the clicker's or the CLI's identity
	click    *click // nil for a NATS attempt
	sent     bool
	acked    bool
	sentAt   time.Time // its first request or publish
	ackedAt  time.Time
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
	live  *live            // which of srvs are ready
	nodes *cluster.Cluster // the cluster variant's NATS
	// unsettled says the service did not settle: the run ends with each
	// server's goroutines in the servers' log (dumpStacks).
	unsettled bool
	// backlogGrace is backlogGrace unless a test shortens it.
	backlogGrace time.Duration
	// keysDir holds the NATS keys the run's own client connects with.
	keysDir string
	slack   *fakeSlack
	start   time.Time
	dropped bool         // the events consumer is deleted
	kills   atomic.Int64 // bumped at each kill and restart: answers acknowledged across one
	aims    aimer        // kills aimed at a click in flight
	// http sends the clicks, each on a new connection as Slack's
	// retries would come.
	http *http.Client

	mu        sync.Mutex
	questions []*question
	byKey     map[string]*question
	open      []*question // shown, no valid answer yet
	tried     []*question // shown, with an answer
	attempts  []*attempt
	nAsk      int
	nAtt      int
	problems  []string // what the load saw wrong, reported as violations
	killLog   []kill
}

// kill is one kill of the run: what was killed, and when.
type kill struct {
	at   time.Time
	what string
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.out, "%6.1fs  %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// problem records a violation the load saw.
func (r *run) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// defaults fills in what o leaves out.
func (o *Options) defaults() {
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
	if o.CardWithin <= 0 {
		o.CardWithin = DefaultCardWithin
	}
}

// Run runs the torture test and reports what it found. An error means the
// run could not be carried out (the server would not start, NATS could not
// be read); broken invariants are in Report.Violations.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Binary == "" || o.DataDir == "" {
		return nil, errors.New("torture: Binary and DataDir are required")
	}
	o.defaults()
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
		http:  &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
	}
	// Whatever happens, no child outlives the run.
	defer r.killAll()
	rep := &Report{RefusedBy: map[string]int{}}
	if err := r.connect(ctx, serverLog, rep); err != nil {
		return nil, err
	}
	defer r.nc.Close()
	if err := r.keepEvents(ctx); err != nil {
		return nil, fmt.Errorf("torture: %w", err)
	}
	defer r.dropEvents() // on an early return; at the end, before the services stop

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
	if r.unsettled {
		r.dumpStacks()
	}
	r.stopAll()
	rep.Elapsed = time.Since(r.start)
	r.logf("done: %d violations", len(rep.Violations))
	return rep, nil
}

// connect starts the services and connects the run's own client to them,
// as an admin.
func (r *run) connect(ctx context.Context, serverLog io.Writer, rep *Report) error {
	url, err := r.startServices(ctx, serverLog, rep)
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	keys, err := principal.LoadKeys(r.keysDir)
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	admin, err := keys.Mint(principal.Spec{Kind: principal.KindAdmin, Name: "torture"})
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	r.nc, err = nats.Connect(url, nats.Name("askbridge-torture"), nats.MaxReconnects(-1), nats.UserJWTAndSeed(admin.JWT, admin.Seed),
		nats.ReconnectWait(100*time.Millisecond), nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		return fmt.Errorf("torture: connect %s: %w", url, err)
	}
	if r.js, err = jetstream.New(r.nc); err != nil {
		r.nc.Close()
		return fmt.Errorf("torture: jetstream: %w", err)
	}
	if r.agent, err = agent.New(r.nc); err != nil {
		r.nc.Close()
		return fmt.Errorf("torture: %w", err)
	}
	return nil
}
