package engine

import (
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

func TestNewAttempt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	q := Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3, Exact: true}
	by := Person{Identity: "discord:300", Name: "kevin", Roles: []string{"operator"}}
	reply := map[string]string{"user": "U1"}
	for _, tc := range []struct {
		name, action, comment string
		answer                []byte
		wantAnswer            string
	}{
		{name: "answer", action: bridge.ActionAnswer, answer: []byte(`"blue"`), wantAnswer: `"blue"`},
		{name: "a decline carries no answer", action: bridge.ActionDecline, answer: []byte(`"blue"`), comment: "away"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAttempt(bridge.PlatformDiscord, "discord-1", q, by, tc.action, tc.answer, tc.comment, at, reply)
			if a.Tenant != "acme" || a.JobID != "job-1" || a.QuestionID != "q-1" || a.TaskVersion != 3 || !a.ExactVersion ||
				a.AttemptID != "discord-1" || a.Action != tc.action || string(a.Answer) != tc.wantAnswer || a.Comment != tc.comment ||
				a.By != "discord:300" || a.ByName != "kevin" || len(a.Roles) != 1 || a.Via != bridge.PlatformDiscord ||
				a.ReplyTo["user"] != "U1" || a.At.Location() != time.UTC || !a.At.Equal(at) {
				t.Fatalf("attempt %+v", a)
			}
		})
	}
}
