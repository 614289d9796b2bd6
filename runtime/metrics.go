package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

type metrics struct {
	asked      prometheus.Counter
	invalid    prometheus.Counter
	settled    *prometheus.CounterVec
	refusals   *prometheus.CounterVec
	ladder     *prometheus.CounterVec
	latency    prometheus.Histogram
	published  prometheus.Counter
	deliveries *prometheus.CounterVec
	attempts   *prometheus.CounterVec
	// notices counts notices recorded, by failure code; noticesRefused
	// those refused as not valid.
	notices        *prometheus.CounterVec
	noticesRefused prometheus.Counter
	// gate counts the gate's decisions by code (gateCodes).
	gate *prometheus.CounterVec
	// frontEnds are the front-ends a label may name; any other is "other",
	// so whoever may publish on the bus cannot mint series.
	frontEnds []string
}

// stateCounter counts questions by state, for the askbridge_questions gauge.
type stateCounter interface {
	CountByState(ctx context.Context) (map[string]int64, error)
}

// storeCollector reads gauges from the store at scrape time, so nothing
// keeps counts of all questions in memory.
type storeCollector struct {
	st        stateCounter
	backlogOf func(context.Context) (int64, error)
	byState   *prometheus.Desc
	backlog   *prometheus.Desc
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byState
	ch <- c.backlog
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if counts, err := c.st.CountByState(ctx); err == nil {
		// Every state, 0 included: a series that comes and goes breaks
		// alerts and graphs.
		for _, state := range allStates {
			ch <- prometheus.MustNewConstMetric(c.byState, prometheus.GaugeValue, float64(counts[state]), state)
		}
	}
	if n, err := c.backlogOf(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(n))
	}
}

// newMetrics makes the runtime's metrics; platforms are the chat platforms
// a front-end label may name besides the console and the CLI.
func newMetrics(reg prometheus.Registerer, st stateCounter, backlog func(context.Context) (int64, error), platforms []bridge.Platform) (*metrics, error) {
	m := &metrics{
		asked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askbridge_questions_asked_total", Help: "Questions recorded.",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askbridge_questions_invalid_total", Help: "Questions refused as malformed.",
		}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_questions_settled_total", Help: "Questions that left pending, by final state.",
		}, []string{"state"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_refusals_total", Help: "Answer attempts refused, by reason.",
		}, []string{"reason"}),
		ladder: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_ladder_steps_total", Help: "Escalation ladder steps fired, by step.",
		}, []string{"step"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "askbridge_answer_latency_seconds",
			Help:    "Time from a question being asked to its answer or decline.",
			Buckets: []float64{1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
		}),
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askbridge_outbox_published_total", Help: "Outbox messages published to NATS.",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_deliveries_total", Help: "Delivery reports from the chat adapters, by platform and result (ok or a failure code).",
		}, []string{"platform", "result"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_answer_attempts_total", Help: "Answer attempts decided, by the front-end they came through.",
		}, []string{"via"}),
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_notices_total", Help: "Notices of failures that are not questions, recorded by failure code.",
		}, []string{"code"}),
		noticesRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askbridge_notices_refused_total", Help: "Notices refused as not valid.",
		}),
		gate: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_gate_decisions_total", Help: "Gate decisions (ask.v1.gate), by code: allowed, or why not.",
		}, []string{"code"}),
	}
	m.preset(platforms)
	if reg == nil {
		return m, nil
	}
	collectors := []prometheus.Collector{m.asked, m.invalid, m.settled, m.refusals, m.ladder, m.latency, m.published, m.deliveries, m.attempts, m.notices, m.noticesRefused, m.gate,
		&storeCollector{
			st:        st,
			backlogOf: backlog,
			byState:   prometheus.NewDesc("askbridge_questions", "Questions by state.", []string{"state"}, nil),
			backlog:   prometheus.NewDesc("askbridge_outbox_backlog", "Outbox messages not yet published.", nil, nil),
		}}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("runtime: register metrics: %w", err)
		}
	}
	return m, nil
}

// preset makes the series that exist, at 0, from the start: a scrape
// before the first refusal or step still shows what will be counted.
func (m *metrics) preset(platforms []bridge.Platform) {
	for _, s := range allStates {
		if s != bridge.StatePending {
			m.settled.WithLabelValues(s)
		}
	}
	for _, r := range []string{bridge.RefusedUnknown, bridge.RefusedNotPending, bridge.RefusedStale, bridge.RefusedForbidden,
		bridge.RefusedWrongKind, bridge.RefusedInvalid, bridge.RefusedSelfApproval, bridge.RefusedAlreadyApproved, bridge.RefusedExpired} {
		m.refusals.WithLabelValues(r)
	}
	for _, s := range []string{bridge.TargetAnswerers, bridge.TargetOwner, bridge.TargetAdmins, record.StepTimeout} {
		m.ladder.WithLabelValues(s)
	}
	for _, code := range bridge.NoticeCodes {
		m.notices.WithLabelValues(code)
	}
	for _, code := range gateCodes {
		m.gate.WithLabelValues(code)
	}
	for _, p := range platforms {
		m.frontEnds = append(m.frontEnds, p.Name)
	}
	m.frontEnds = append(m.frontEnds, bridge.PlatformConsole, bridge.PlatformCLI)
	for _, v := range append(slices.Clone(m.frontEnds), otherFrontEnd) {
		m.attempts.WithLabelValues(v)
	}
}

// allStates are the states askbridge_questions always reports.
var allStates = []string{bridge.StatePending, bridge.StateAnswered, bridge.StateDeclined, bridge.StateTimedOut,
	bridge.StateCancelled, bridge.StateSuperseded, bridge.StateFailed}

// otherFrontEnd labels a front-end the metrics do not know.
const otherFrontEnd = "other"

// knownFailureCodes are the failure codes a delivery label may name.
var knownFailureCodes = map[string]bool{
	bridge.CodeCapabilityUnavailable: true, bridge.CodeAccessDenied: true, bridge.CodeReferenceUnresolved: true,
	bridge.CodeSourceUnreliable: true, bridge.CodeInputMissing: true,
}

// frontEnd is p if it is a known front-end, else "other".
func (m *metrics) frontEnd(p string) string {
	if slices.Contains(m.frontEnds, p) {
		return p
	}
	return otherFrontEnd
}
