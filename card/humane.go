package card

import (
	"strconv"
	"time"
)

// Duration says d as people say it, rounded down, in at most two units:
// "less than a minute", "12 min", "3 h", "2 h 5 min", "1 day", "3 days 4 h".
func Duration(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min"
	case d < 24*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 || h >= 10 {
			return strconv.Itoa(h) + " h"
		}
		return strconv.Itoa(h) + " h " + strconv.Itoa(m) + " min"
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	s := strconv.Itoa(days) + " days"
	if days == 1 {
		s = "1 day"
	}
	if h > 0 && days < 3 {
		s += " " + strconv.Itoa(h) + " h"
	}
	return s
}

// Waiting is how long a question has waited and how long it still may, as
// of now: "waiting 12 min · deadline in 3 h", "waiting 2 days · deadline
// passed 5 min ago", "waiting 12 min" without a deadline.
func Waiting(asked, deadline, now time.Time) string {
	var s string
	if !asked.IsZero() {
		s = "waiting " + Duration(now.Sub(asked))
	}
	if deadline.IsZero() {
		return s
	}
	if s != "" {
		s += " · "
	}
	if left := deadline.Sub(now); left > 0 {
		return s + "deadline in " + Duration(left)
	}
	return s + "deadline passed " + Duration(now.Sub(deadline)) + " ago"
}

// Ago is how long before now t was: "12 min ago", "just now".
func Ago(t, now time.Time) string {
	if now.Sub(t) < time.Minute {
		return "just now"
	}
	return Duration(now.Sub(t)) + " ago"
}
