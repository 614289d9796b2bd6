// Package apimetrics counts a chat platform's API calls for /metrics: how
// many, how they ended, how long they took with their retries, and why they
// were retried. Operators read it to tell a slow or rate-limiting platform
// from a slow askbridge.
package apimetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Calls records one platform's calls. The zero of *Calls (nil) records
// nothing, so an adapter built without a registry needs no checks.
type Calls struct {
	platform string
	total    *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	retries  *prometheus.CounterVec
}

// Results of a call, the "result" label.
const (
	ResultOK        = "ok"
	ResultError     = "error"
	ResultCancelled = "cancelled"
)

// Retry reasons, the "reason" label.
const (
	RetryRateLimited = "rate_limited"
	RetryTransient   = "transient"
)

// New registers the collectors on reg (once per registry; both adapters
// share them through the platform label) and returns the recorder for
// platform. A nil reg gives a nil *Calls.
func New(reg prometheus.Registerer, platform string) (*Calls, error) {
	if reg == nil {
		return nil, nil
	}
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "askbridge_platform_api_calls_total",
		Help: "Chat platform API calls by platform, operation and result (ok, error, cancelled), retries included in one call.",
	}, []string{"platform", "op", "result"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "askbridge_platform_api_call_seconds",
		Help:    "Time of a chat platform API call from first try to its end, waits for rate limits and retries included.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"platform", "op"})
	retries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "askbridge_platform_api_retries_total",
		Help: "Chat platform API calls tried again, by platform, operation and reason (rate_limited, transient).",
	}, []string{"platform", "op", "reason"})
	var err error
	if total, err = register(reg, total); err != nil {
		return nil, err
	}
	if seconds, err = register(reg, seconds); err != nil {
		return nil, err
	}
	if retries, err = register(reg, retries); err != nil {
		return nil, err
	}
	return &Calls{platform: platform, total: total, seconds: seconds, retries: retries}, nil
}

// register registers c, or returns the collector already registered under
// its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		var zero C
		return zero, err
	}
	return c, nil
}

// Done records a call that started at start and ended with err.
func (c *Calls) Done(op string, start time.Time, err error) {
	if c == nil {
		return
	}
	result := ResultOK
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		result = ResultCancelled
	case err != nil:
		result = ResultError
	}
	c.total.WithLabelValues(c.platform, op, result).Inc()
	c.seconds.WithLabelValues(c.platform, op).Observe(time.Since(start).Seconds())
}

// Retry records that a call is tried again for reason.
func (c *Calls) Retry(op, reason string) {
	if c == nil {
		return
	}
	c.retries.WithLabelValues(c.platform, op, reason).Inc()
}

// Value reads one series from g: a counter's value or a histogram's number
// of observations. ok is false when no series has exactly these labels.
func Value(g prometheus.Gatherer, name string, labels map[string]string) (v float64, ok bool) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if want, has := labels[lp.GetName()]; !has || want != lp.GetValue() {
					continue series
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount()), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// Preset makes the series of ops exist, at 0, before the first call, so a
// scrape of a quiet service already shows what will be counted.
func (c *Calls) Preset(ops ...string) {
	if c == nil {
		return
	}
	for _, op := range ops {
		for _, result := range []string{ResultOK, ResultError} {
			c.total.WithLabelValues(c.platform, op, result)
		}
		for _, reason := range []string{RetryRateLimited, RetryTransient} {
			c.retries.WithLabelValues(c.platform, op, reason)
		}
		c.seconds.WithLabelValues(c.platform, op)
	}
}
