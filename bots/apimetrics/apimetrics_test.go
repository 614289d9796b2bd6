package apimetrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// value reads a series by its labels in Prometheus' order (op, platform,
// then result or reason); -1 when absent.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	m := map[string]string{"op": labels[0], "platform": labels[1]}
	if len(labels) > 2 {
		key := "result"
		if name == "askbridge_platform_api_retries_total" {
			key = "reason"
		}
		m[key] = labels[2]
	}
	v, ok := Value(reg, name, m)
	if !ok {
		return -1
	}
	return v
}

func TestCallsShareCollectorsAcrossPlatforms(t *testing.T) {
	reg := prometheus.NewRegistry()
	slack, err := New(reg, "slack")
	if err != nil {
		t.Fatal(err)
	}
	discord, err := New(reg, "discord")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	slack.Done("chat.postMessage", start, nil)
	slack.Retry("chat.postMessage", RetryRateLimited)
	slack.Done("chat.postMessage", start, fmt.Errorf("slack: chat.postMessage: %w", context.DeadlineExceeded))
	discord.Done("post question", start, errors.New("discord: post question: Missing Access"))
	discord.Retry("post question", RetryTransient)

	// Labels in the order Prometheus sorts them: op, platform, result/reason.
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"askbridge_platform_api_calls_total", []string{"chat.postMessage", "slack", ResultOK}, 1},
		{"askbridge_platform_api_calls_total", []string{"chat.postMessage", "slack", ResultCancelled}, 1},
		{"askbridge_platform_api_calls_total", []string{"post question", "discord", ResultError}, 1},
		{"askbridge_platform_api_calls_total", []string{"post question", "discord", ResultOK}, -1},
		{"askbridge_platform_api_retries_total", []string{"chat.postMessage", "slack", RetryRateLimited}, 1},
		{"askbridge_platform_api_retries_total", []string{"post question", "discord", RetryTransient}, 1},
		{"askbridge_platform_api_call_seconds", []string{"chat.postMessage", "slack"}, 2},
		{"askbridge_platform_api_call_seconds", []string{"post question", "discord"}, 1},
	} {
		if got := value(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Registering again on the same registry reuses the collectors.
	if again, err := New(reg, "slack"); err != nil || again.total != slack.total {
		t.Fatalf("second New: %v, shared %v", err, again != nil && again.total == slack.total)
	}
	// Without a registry nothing is recorded, and nothing panics.
	var none *Calls
	if none, err = New(nil, "slack"); err != nil || none != nil {
		t.Fatalf("New(nil) = %v, %v", none, err)
	}
	none.Done("x", start, nil)
	none.Retry("x", RetryTransient)
}

func TestPresetSeriesExistAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	slack, err := New(reg, "slack")
	if err != nil {
		t.Fatal(err)
	}
	slack.Preset("chat.postMessage")
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"askbridge_platform_api_calls_total", []string{"chat.postMessage", "slack", ResultOK}},
		{"askbridge_platform_api_calls_total", []string{"chat.postMessage", "slack", ResultError}},
		{"askbridge_platform_api_retries_total", []string{"chat.postMessage", "slack", RetryRateLimited}},
		{"askbridge_platform_api_retries_total", []string{"chat.postMessage", "slack", RetryTransient}},
	} {
		if got := value(t, reg, c.name, c.labels...); got != 0 {
			t.Errorf("%s %v = %v, want a series at 0", c.name, c.labels, got)
		}
	}
}
