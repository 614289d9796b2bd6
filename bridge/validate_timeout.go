package bridge

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// validateEscalation checks the question's reminder ladder: steps that
// climb within the timeout to answerers, owner or admins, or a ladder
// turned off with its reason.
func validateEscalation(ve *ValidationError, q *Question) {
	e := q.Escalation
	if e == nil {
		return
	}
	for _, p := range e.unknown {
		ve.add("%s", p)
	}
	if !e.Off && len(e.Steps) == 0 && !e.asDefault && len(e.unknown) == 0 {
		ve.add(`escalation: names no steps: give steps such as [{"at": 0.5, "to": "owner"}], false with escalation_reason to turn reminders off, or leave it out for the default ladder`)
	}
	if e.Off {
		if strings.TrimSpace(q.EscalationReason) == "" {
			ve.add("escalation_reason: is required to turn the escalation ladder off")
		}
		if len(e.Steps) > 0 {
			ve.add("escalation: give steps or turn it off, not both")
		}
		return
	}
	last := 0.0
	for i, s := range e.Steps {
		if !(s.At > 0 && s.At < 1) {
			ve.add("escalation.steps[%d].at: must be a fraction of the timeout between 0 and 1", i)
		} else if s.At <= last {
			ve.add("escalation.steps[%d].at: steps must climb in order", i)
		} else {
			last = s.At
		}
		switch s.To {
		case TargetAnswerers, TargetOwner, TargetAdmins:
		default:
			ve.add("escalation.steps[%d].to: must be answerers, owner or admins, not %q", i, s.To)
		}
	}
	if len(e.Steps) > 10 {
		ve.add("escalation.steps: at most 10")
	}
}

// ParseTimeout parses a question timeout: a Go duration ("90s", "4h",
// "1h30m"), a number of days ("2d"), or days and a duration ("1d12h").
func ParseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 30m, 4h or 2d", s)
		}
		if n > int(MaxTimeout/(24*time.Hour)) {
			// Checked before multiplying, which could overflow.
			return 0, fmt.Errorf("%q must be at most 90 days", s)
		}
		d = time.Duration(n) * 24 * time.Hour
		if rest != "" {
			more, err := time.ParseDuration(rest)
			if err != nil || more < 0 || rest[0] == '+' {
				return 0, fmt.Errorf("%q is not a duration such as 30m, 4h or 2d", s)
			}
			if more > MaxTimeout {
				return 0, fmt.Errorf("%q must be at most 90 days", s)
			}
			d += more
		}
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 30m, 4h or 2d", s)
		}
	}
	if d < time.Second {
		return 0, fmt.Errorf("%q must be at least one second", s)
	}
	if d > MaxTimeout {
		return 0, fmt.Errorf("%q must be at most 90 days", s)
	}
	return d, nil
}

// FormatTimeout writes a duration as the agent reads it: 4:00:00,
// 0:00:04, 1 day, 2:00:00.
func FormatTimeout(d time.Duration) string {
	d = d.Round(time.Second)
	if d < 0 {
		d = 0
	}
	days := int64(d / (24 * time.Hour))
	d -= time.Duration(days) * 24 * time.Hour
	h := int64(d / time.Hour)
	m := int64(d%time.Hour) / int64(time.Minute)
	s := int64(d%time.Minute) / int64(time.Second)
	clock := fmt.Sprintf("%d:%02d:%02d", h, m, s)
	switch days {
	case 0:
		return clock
	case 1:
		return "1 day, " + clock
	default:
		return fmt.Sprintf("%d days, %s", days, clock)
	}
}
