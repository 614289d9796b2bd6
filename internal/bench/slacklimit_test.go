package bench

import (
	"testing"
	"time"
)

// TestSlackLimits: a channel takes its burst at once, then one call a
// gap; a refusal names whole seconds; a call before the named instant is
// an early retry; channels do not share a limit.
func TestSlackLimits(t *testing.T) {
	type call struct {
		at      time.Duration // since the start
		channel string
		wait    int // Retry-After seconds; 0 accepted
		early   bool
	}
	cases := []struct {
		name  string
		gap   time.Duration
		burst int
		calls []call
		want  SlackLimitStats
	}{
		{"a burst, then the pace", time.Second, 2, []call{
			{0, "C1", 0, false},
			{0, "C1", 0, false},
			{0, "C1", 1, false},
			{300 * time.Millisecond, "C2", 0, false},
			{time.Second, "C1", 0, false},
			{time.Second, "C1", 1, false},
			{2 * time.Second, "C1", 0, false},
		}, SlackLimitStats{Channels: 2, Accepted: 5, Limited: 2, Floor: 2 * time.Second}},
		{"early retries are counted and refused", time.Second, 1, []call{
			{0, "C1", 0, false},
			{100 * time.Millisecond, "C1", 1, false},
			{600 * time.Millisecond, "C1", 1, true},
			{1099 * time.Millisecond, "C1", 1, true},
			{1100 * time.Millisecond, "C1", 0, false},
		}, SlackLimitStats{Channels: 1, Accepted: 2, Limited: 3, EarlyRetries: 2, EarlyChannels: 1, Floor: time.Second}},
		{"a wait of a fraction of a second is asked as a whole one, longer ones rounded up", 3 * time.Second, 1, []call{
			{0, "C1", 0, false},
			{500 * time.Millisecond, "C1", 3, false},
			{4 * time.Second, "C1", 0, false},
			{4500 * time.Millisecond, "C1", 3, false},
		}, SlackLimitStats{Channels: 1, Accepted: 2, Limited: 2, Floor: 3 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1_700_000_000, 0)
			now := start
			l := NewSlackLimits(tc.gap, tc.burst, func() time.Time { return now })
			for i, c := range tc.calls {
				now = start.Add(c.at)
				wait, early := l.Take(c.channel)
				if wait != c.wait || early != c.early {
					t.Errorf("call %d (%v, %s): Retry-After %d, early %v; want %d, %v", i, c.at, c.channel, wait, early, c.wait, c.early)
				}
			}
			if got := l.Stats(); got != tc.want {
				t.Errorf("stats %+v, want %+v", got, tc.want)
			}
		})
	}
}
