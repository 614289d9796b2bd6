package engine

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
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

// TestPublishAttemptUndecidedIsNotAcknowledged: with decisions awaited
// (ASK_NATS_SYNC=interval), an attempt in JetStream whose decision did
// not come within the platform's time is not acknowledged (ErrUndecided);
// without, JetStream's acknowledgement is the acknowledgement.
func TestPublishAttemptUndecidedIsNotAcknowledged(t *testing.T) {
	t.Parallel()
	n, err := bridge.ConnectNATS(context.Background(), bridge.NATSOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	d, err := bridge.WatchDecisions(n.Conn)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	log := slog.New(slog.DiscardHandler)
	q := Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 1, Exact: true}
	by := Person{Identity: "discord:300"}
	// No runtime decides here: the wait runs out with the platform's
	// budget. A publish that itself ran out of it (a stalled machine) is
	// tried again, as the person would.
	at := NewAttempt(bridge.PlatformDiscord, "discord-1", q, by, bridge.ActionAnswer, []byte(`"blue"`), "", time.Now(), nil)
	testenv.CheckFor(t, testenv.Patience, 0, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		switch err := PublishAttempt(ctx, log, d, n.JS, &at); {
		case err == nil:
			return errors.New("an attempt never decided was acknowledged")
		case !errors.Is(err, ErrUndecided):
			return err
		}
		return nil
	})
	at = NewAttempt(bridge.PlatformDiscord, "discord-2", q, by, bridge.ActionAnswer, []byte(`"blue"`), "", time.Now(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	err = PublishAttempt(ctx, log, nil, n.JS, &at)
	cancel()
	if err != nil {
		t.Fatalf("without waiting for decisions: %v", err)
	}
	if got := testenv.StreamCount(t, n, bridge.StreamAnswers, bridge.PrefixAnswer+".>"); got != 2 {
		t.Errorf("%d attempts in JetStream, want 2", got)
	}
}
