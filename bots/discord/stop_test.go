package discord

import (
	"fmt"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestStopHandsEventsBackAtOnce checks that events a stop cuts short
// reach the next bot at once, stop after stop: handed back only once the
// stopped bot no longer pulls, not redelivered to its dead pull request
// and left there until the consumer's AckWait.
func TestStopHandsEventsBackAtOnce(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	for i := range 4 {
		user := fmt.Sprintf("300000000000000010%d", i)
		h.fake.failOn(failRule{Method: "POST", Prefix: "/users/@me/channels", Hang: true, Times: 1})
		now := time.Now().UTC()
		h.publishEvent(bridge.Event{Type: bridge.EventReminded, EventID: fmt.Sprintf("ob-stops-%d", i), Tenant: "acme", JobID: "job-stops",
			QuestionID: "q-stops", TaskVersion: 1, Step: bridge.TargetAnswerers, Targets: []string{"discord:" + user},
			Question: &q, AskedAt: now, Deadline: now.Add(4 * time.Hour)})
		opened := func() int {
			n := 0
			for _, r := range h.fake.requests("POST", "/users/@me/channels") {
				if r.JSON(t)["recipient_id"] == user {
					n++
				}
			}
			return n
		}
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			if opened() == 0 {
				return fmt.Errorf("stop %d: no DM opened for %s yet", i, user)
			}
			return nil
		})
		if i == 0 {
			h.stopBot()
		} else {
			h.stopSecond()
		}
		h.secondBot(t)
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			if got := len(h.fake.requests("POST", "/channels/77"+user+"/messages")); got != 1 {
				return fmt.Errorf("stop %d: %d DMs to %s after the restart, want 1", i, got, user)
			}
			return nil
		})
	}
}

// TestEventsOfAJobAreHandledInOrder checks the events of one job are
// handled in the order published while jobs go side by side: a question
// answered at once after it was asked is posted and then settled (handled
// the other way round, the answer would find no card, and the asked event
// would post nothing).
func TestEventsOfAJobAreHandledInOrder(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	const jobs = 12
	for i := range jobs {
		q := colorQuestion()
		q.JobID = fmt.Sprintf("job-o%d", i)
		h.publishEvent(asked(q))
		h.publishEvent(bridge.Event{Type: bridge.EventAnswered, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
			TaskVersion: q.TaskVersion, By: "discord:" + kevin.ID, ByName: "kevin", Via: "discord", Answer: []byte(`"red"`), AnswerText: "red"})
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		cards := map[string]string{}
		for _, d := range h.deliveriesNow() {
			if d.OK && d.Message != nil {
				cards[d.JobID] = d.Message.MessageID
			}
		}
		if len(cards) != jobs {
			return fmt.Errorf("%d of %d questions shown", len(cards), jobs)
		}
		for job, id := range cards {
			if n := len(components(h.fake.message(id))); n != 0 {
				return fmt.Errorf("%s: the card still has %d components", job, n)
			}
		}
		return nil
	})
}
