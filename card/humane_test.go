package card

import (
	"testing"
	"time"
)

func TestDurationAndWaiting(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		-time.Second:                    "less than a minute",
		59 * time.Second:                "less than a minute",
		12*time.Minute + 40*time.Second: "12 min",
		3 * time.Hour:                   "3 h",
		2*time.Hour + 5*time.Minute:     "2 h 5 min",
		11*time.Hour + 5*time.Minute:    "11 h",
		25 * time.Hour:                  "1 day 1 h",
		76 * time.Hour:                  "3 days",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		asked, deadline time.Time
		want            string
	}{
		{now.Add(-12 * time.Minute), now.Add(3 * time.Hour), "waiting 12 min · deadline in 3 h"},
		{now.Add(-12 * time.Minute), time.Time{}, "waiting 12 min"},
		{now.Add(-50 * time.Hour), now.Add(-5 * time.Minute), "waiting 2 days 2 h · deadline passed 5 min ago"},
		{time.Time{}, now.Add(time.Hour), "deadline in 1 h"},
	} {
		if got := Waiting(c.asked, c.deadline, now); got != c.want {
			t.Errorf("Waiting = %q, want %q", got, c.want)
		}
	}
	if got := Ago(now.Add(-30*time.Second), now); got != "just now" {
		t.Errorf("Ago = %q", got)
	}
	if got := Ago(now.Add(-90*time.Minute), now); got != "1 h 30 min ago" {
		t.Errorf("Ago = %q", got)
	}
}
