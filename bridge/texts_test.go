package bridge

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestTexts(t *testing.T) {
	t.Parallel()
	tests := []struct{ got, want string }{
		{AnsweredText([]byte(`"blue"`)), "The answer: blue"},
		{AnsweredText([]byte(`{"on":"2026-10-20","copies":2}`)), `The answer: {"on":"2026-10-20","copies":2}`},
		{AnsweredText([]byte(" { \"on\" : \"2026-10-20\",\n \"copies\": 2 }\n")), `The answer: {"on":"2026-10-20","copies":2}`},
		{AnsweredText([]byte(`"approved"`)), "The answer: approved"},
		{AnsweredText([]byte(`"a \"quoted\" word"`)), `The answer: a "quoted" word`},
		{AnsweredText([]byte(`["a","b"]`)), `The answer: ["a","b"]`},

		{DeclinedText("slack:U0KEV", "kevin", "ask Ana"), "slack:U0KEV (kevin) declined to answer: ask Ana."},
		{DeclinedText("slack:U0KEV", "kevin", " ask Ana. "), "slack:U0KEV (kevin) declined to answer: ask Ana."},
		{DeclinedText("cli:kevin", "kevin", "ask Ana"), "cli:kevin declined to answer: ask Ana."},
		{DeclinedText("cli:kevin", "cli:kevin", "ask Ana"), "cli:kevin declined to answer: ask Ana."},
		{DeclinedText("cli:kevin", "", "ask Ana"), "cli:kevin declined to answer: ask Ana."},
		{DeclinedText("slack:U0KEV", "kevin", ""), "slack:U0KEV (kevin) declined to answer."},
		{DeclinedText("slack:U0KEV", "kevin", "why me?"), "slack:U0KEV (kevin) declined to answer: why me?"},
		{DeclinedText("slack:U0KEV", "kevin", "no!"), "slack:U0KEV (kevin) declined to answer: no!"},

		{TimedOutText(4 * time.Hour), "Nobody answered within 4:00:00."},
		{TimedOutText(4 * time.Second), "Nobody answered within 0:00:04."},
		{TimedOutText(24 * time.Hour), "Nobody answered within 1 day, 0:00:00."},
		{TimedOutText(50*time.Hour + 30*time.Minute + 5*time.Second), "Nobody answered within 2 days, 2:30:05."},

		{DeniedText(""), "The answer: denied"},
		{DeniedText("too expensive"), "The answer: denied. Reason: too expensive."},
		{CancelledText(""), "The question was cancelled."},
		{CancelledText("job stopped"), "The question was cancelled: job stopped."},
		{SupersededText(4), "The question was superseded by task version 4."},
		{InvalidText(errors.New(`timeout: "banana" is not a duration such as 30m, 4h or 2d`)),
			`The question was refused: timeout: "banana" is not a duration such as 30m, 4h or 2d.`},

		{DisplayIdentity("slack:U0KEV", "kevin"), "slack:U0KEV (kevin)"},
		{DisplayIdentity("cli:kevin", "kevin"), "cli:kevin"},
		{DisplayIdentity("console:ana", ""), "console:ana"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got  %q\nwant %q", tt.got, tt.want)
		}
	}
}

func TestFormatTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0:00:00"},
		{-time.Hour, "0:00:00"},
		{4 * time.Second, "0:00:04"},
		{4*time.Second + 400*time.Millisecond, "0:00:04"},
		{4*time.Second + 500*time.Millisecond, "0:00:05"},
		{90 * time.Second, "0:01:30"},
		{4 * time.Hour, "4:00:00"},
		{23*time.Hour + 59*time.Minute + 59*time.Second, "23:59:59"},
		{24 * time.Hour, "1 day, 0:00:00"},
		{26 * time.Hour, "1 day, 2:00:00"},
		{48 * time.Hour, "2 days, 0:00:00"},
		{MaxTimeout, "90 days, 0:00:00"},
	} {
		if got := FormatTimeout(tt.d); got != tt.want {
			t.Errorf("FormatTimeout(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// Every timeout an agent may ask for reads back as the same duration.
func TestFormatTimeoutOfParsedTimeouts(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"4h": "4:00:00", "90s": "0:01:30", "2d": "2 days, 0:00:00", "1h30m": "1:30:00"} {
		d, err := ParseTimeout(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatTimeout(d); got != want {
			t.Errorf("FormatTimeout(ParseTimeout(%q)) = %q, want %q", in, got, want)
		}
	}
}

func TestAnswerAttemptAliases(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, action, comment string }{
		{`{"action":"decline","comment":"ask Ana"}`, ActionDecline, "ask Ana"},
		{`{"decline":true,"reason":"ask Ana"}`, ActionDecline, "ask Ana"},
		{`{"action":"declined","reason":"ask Ana"}`, ActionDecline, "ask Ana"},
		{`{"decision":"approve"}`, ActionApprove, ""},
		{`{"action":"denied","reason":"too risky"}`, ActionDeny, "too risky"},
		{`{"answer":"blue"}`, "", ""},
	} {
		var a AnswerAttempt
		if err := json.Unmarshal([]byte(c.in), &a); err != nil || a.Action != c.action || a.Comment != c.comment {
			t.Errorf("%s = %q %q, %v", c.in, a.Action, a.Comment, err)
		}
	}
	var a AnswerAttempt
	if err := json.Unmarshal([]byte(`{"tenant":"acme","answer":"blue","by":"slack:U1","reply_to":{"k":"v"}}`), &a); err != nil ||
		a.Tenant != "acme" || string(a.Answer) != `"blue"` || a.By != "slack:U1" || a.ReplyTo["k"] != "v" {
		t.Errorf("plain fields = %+v, %v", a, err)
	}
}

// docs/contract.md gives a typed failure as {code, dependency, operation,
// retryable, required_capability, safe_fallback, operator_message}: every
// key is present even when it does not apply.
func TestFailureCarriesEveryKey(t *testing.T) {
	t.Parallel()
	for _, f := range []Failure{{Code: CodeQuestionTimedOut}, {Code: CodeReferenceUnresolved, Dependency: "slack", Operation: "chat.postMessage"}} {
		raw, err := json.Marshal(Resume{Outcome: OutcomeFailed, Code: f.Code, Failure: &f})
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Failure map[string]any `json:"failure"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"code", "dependency", "operation", "retryable", "required_capability", "safe_fallback", "operator_message"} {
			if _, ok := res.Failure[key]; !ok {
				t.Errorf("%s: failure has no %q: %s", f.Code, key, raw)
			}
		}
		if len(res.Failure) != 7 {
			t.Errorf("failure has %d keys, want 7: %s", len(res.Failure), raw)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"short", 5, "short"}, {"longer text", 8, "longer…"}, {"héllo wörld", 7, "héllo…"}, {"abc", 0, ""}} {
		if got := Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestEndingsPairEventsAndStates: each final state but failed is left by
// one event and read back from it; failed is left by delivery_failed (or a
// timeout), and a state that is not final by no event.
func TestEndingsPairEventsAndStates(t *testing.T) {
	for _, st := range []string{StateAnswered, StateDeclined, StateTimedOut, StateCancelled, StateSuperseded} {
		ev := EndingEvent(st)
		if ev == "" || EndedState(ev) != st {
			t.Errorf("%s: ending event %q, which leaves %q", st, ev, EndedState(ev))
		}
	}
	for _, st := range []string{StateFailed, StatePending, "nonsense"} {
		if ev := EndingEvent(st); ev != "" {
			t.Errorf("%s: ending event %q, want none", st, ev)
		}
	}
	for _, ev := range []string{EventDeliveryFailed, "nonsense"} {
		if st := EndedState(ev); st != StateFailed {
			t.Errorf("%s leaves %q, want failed", ev, st)
		}
	}
}
