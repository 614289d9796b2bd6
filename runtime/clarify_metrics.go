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

// clarifyStore is what the clarification measures read.
type clarifyStore interface {
	ClarifyQuestions(ctx context.Context, tenant string, since time.Time) ([]record.ClarifyQuestion, error)
	GateDecisions(ctx context.Context, tenant string, since, until time.Time) ([]record.GateDecision, error)
}

// ClarifyMetrics shapes the clarification metrics on /metrics. Tenants
// and Agents are the values the tenant and agent labels may take
// (ASK_METRICS_TENANTS, ASK_METRICS_AGENTS); every other tenant or agent
// is "other", so the series stay bounded whatever agents publish. Window
// is how far back the measures look (ASK_METRICS_WINDOW; 0 is 7 days).
type ClarifyMetrics struct {
	Tenants []string
	Agents  []string
	Window  time.Duration
}

// otherLabel is the label value of a tenant or agent not configured.
const otherLabel = "other"

func (o ClarifyMetrics) group(tenant, agent string) (string, string) {
	if !slices.Contains(o.Tenants, tenant) {
		tenant = otherLabel
	}
	if !slices.Contains(o.Agents, agent) {
		agent = otherLabel
	}
	return tenant, agent
}

// statsSince is the window a stats request asks for.
func statsSince(req bridge.StatsRequest) (time.Duration, error) {
	if req.Tenant != "" && !bridge.ValidToken(req.Tenant) {
		return 0, fmt.Errorf("tenant: %q must be 1 to 64 letters, digits, '-' or '_'", req.Tenant)
	}
	if req.Since == "" {
		return bridge.DefaultStatsSince, nil
	}
	d, err := bridge.ParseTimeout(req.Since)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("since: %q is not a positive duration such as 7d, 24h or 90m (at most 90d)", req.Since)
	}
	return d, nil
}

// clarification reads the record and computes the measures of [since, until).
func clarification(ctx context.Context, st clarifyStore, tenant string, since, until time.Time, group grouper) (*bridge.Clarification, error) {
	qs, err := st.ClarifyQuestions(ctx, tenant, since)
	if err != nil {
		return nil, err
	}
	gates, err := st.GateDecisions(ctx, tenant, since, until)
	if err != nil {
		return nil, err
	}
	total, groups := clarify(qs, gates, since, until, group)
	c := &bridge.Clarification{Since: since.UTC(), Until: until.UTC(), Total: total.m, Groups: []bridge.ClarificationMeasures{}}
	for _, g := range groups {
		c.Groups = append(c.Groups, g.m)
	}
	return c, nil
}

// clarifyCollector computes the clarification measures from the record at
// scrape time, over the last Window. They are gauges of that window (the
// record is what they count, not events since the process started), and
// the time to answer a histogram of it.
type clarifyCollector struct {
	st  clarifyStore
	now func() time.Time
	o   ClarifyMetrics
}

var (
	clarifyLabels    = []string{"tenant", "agent"}
	clarifyQuestions = prometheus.NewDesc("askbridge_clarification_questions",
		"Questions asked in the window (ASK_METRICS_WINDOW), by how they stand now.", append(clarifyLabels, "outcome"), nil)
	clarifyRate = prometheus.NewDesc("askbridge_clarification_rate",
		"Clarification rates of the questions asked in the window: resolution, decline, abandonment, repetition, reopen.", append(clarifyLabels, "measure"), nil)
	clarifyWait = prometheus.NewDesc("askbridge_clarification_time_to_answer_seconds",
		"Time from asked to answered, of the questions asked and answered in the window.", clarifyLabels, nil)
	clarifyWaitQuantile = prometheus.NewDesc("askbridge_clarification_time_to_answer_quantile_seconds",
		"Time to answer at the 0.5 and 0.9 quantiles (nearest rank), of the window.", append(clarifyLabels, "quantile"), nil)
	clarifyGate = prometheus.NewDesc("askbridge_clarification_gate_refusals",
		"Gate refusals in the window, by code.", append(clarifyLabels, "code"), nil)
	clarifyPremature = prometheus.NewDesc("askbridge_clarification_premature_actions_blocked",
		"Gate refusals in the window that held back an action (all but invalid and unavailable).", clarifyLabels, nil)
)

// clarifyBuckets are the time-to-answer histogram's buckets, in seconds.
var clarifyBuckets = []float64{60, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}

func (c *clarifyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{clarifyQuestions, clarifyRate, clarifyWait, clarifyWaitQuantile, clarifyGate, clarifyPremature} {
		ch <- d
	}
}

func (c *clarifyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	window := c.o.Window
	if window <= 0 {
		window = bridge.DefaultStatsSince
	}
	until := c.now()
	qs, err := c.st.ClarifyQuestions(ctx, "", until.Add(-window))
	if err != nil {
		return
	}
	gates, err := c.st.GateDecisions(ctx, "", until.Add(-window), until)
	if err != nil {
		return
	}
	_, groups := clarify(qs, gates, until.Add(-window), until, c.o.group)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, g := range groups {
		m, t, a := g.m, g.m.Tenant, g.m.Agent
		for outcome, n := range map[string]int64{bridge.StateAnswered: m.Answered, bridge.StateDeclined: m.Declined,
			bridge.StateTimedOut: m.TimedOut, bridge.StateCancelled: m.Cancelled, bridge.StateSuperseded: m.Superseded,
			bridge.StateFailed: m.Failed, bridge.StatePending: m.Pending} {
			gauge(clarifyQuestions, float64(n), t, a, outcome)
		}
		for measure, v := range map[string]float64{"resolution": m.ResolutionRate, "decline": m.DeclineRate,
			"abandonment": m.AbandonmentRate, "repetition": m.RepetitionRate, "reopen": m.ReopenRate} {
			gauge(clarifyRate, v, t, a, measure)
		}
		gauge(clarifyWaitQuantile, m.TimeToAnswerP50, t, a, "0.5")
		gauge(clarifyWaitQuantile, m.TimeToAnswerP90, t, a, "0.9")
		ch <- prometheus.MustNewConstHistogram(clarifyWait, uint64(len(g.waits)), sum(g.waits), buckets(g.waits), t, a)
		for _, code := range gateCodes {
			if code != bridge.GateAllowed {
				gauge(clarifyGate, float64(m.GateRefusals[code]), t, a, code)
			}
		}
		gauge(clarifyPremature, float64(m.PrematureActionsBlocked), t, a)
	}
}

func sum(vs []float64) float64 {
	var s float64
	for _, v := range vs {
		s += v
	}
	return s
}

// buckets counts vs cumulatively into clarifyBuckets.
func buckets(vs []float64) map[float64]uint64 {
	out := make(map[float64]uint64, len(clarifyBuckets))
	for _, b := range clarifyBuckets {
		for _, v := range vs {
			if v <= b {
				out[b]++
			}
		}
	}
	return out
}
