package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// Races: people and agents acting on one question at the same moment,
// across Slack, Discord, the console and the agent's own cancels, against
// the whole service. Each race ends in exactly one outcome, one resume,
// every loser told on the platform they used, and every card settled the
// same way.

func TestRaceTwoSlackClicksAtOnce(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-r1", "q-1")
	ts, did := r.ask(q)
	block := "ask.acme.job-r1.q-1.1"
	all(
		func() { r.signedSlack(r.slackClick("U0KEV", "trig-kev", ts, block, "choice.0", "red"), nil) },
		func() { r.signedSlack(r.slackClick("U0ANA", "trig-ana", ts, block, "choice.1", "blue"), nil) },
	)
	out := r.outcome(q, 1)
	if out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome %+v", out)
	}
	winner, loserTrig, want := "u0kev", "trig-ana", "red"
	if out.By == "slack:U0ANA" {
		winner, loserTrig, want = "u0ana", "trig-kev", "blue"
	}
	if out.Text != "The answer: "+want {
		t.Fatalf("resume text %q for %s", out.Text, out.By)
	}
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		if len(r.told(loserTrig)) == 0 {
			return fmt.Errorf("the loser was told nothing")
		}
		return nil
	})
	loserText(t, r.told(loserTrig), "This question was already answered by "+out.By+" ("+winner+") at ")
	r.slackSettled(ts, "Answered by @"+winner+": "+want)
	r.discordSettled(did, want)
	evs := r.events.of("job-r1", "q-1")
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		evs = r.events.of("job-r1", "q-1")
		if types := eventTypes(evs); types != "asked,answered,refused" && types != "asked,refused,answered" {
			return fmt.Errorf("events %s", types)
		}
		return nil
	})
	if winnerTold := r.told(map[string]string{"trig-kev": "trig-ana", "trig-ana": "trig-kev"}[loserTrig]); len(winnerTold) != 0 {
		t.Errorf("the winner was told %q", winnerTold)
	}
}

func eventTypes(evs []bridge.Event) string {
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return strings.Join(types, ",")
}

func TestRaceSlackAndDiscordAtOnce(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-r2", "q-1")
	ts, did := r.ask(q)
	in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 1), "component_type": 2})
	var dresp map[string]any
	all(
		func() {
			r.signedSlack(r.slackClick("U0ANA", "trig-ana", ts, "ask.acme.job-r2.q-1.1", "choice.0", "red"), nil)
		},
		func() { _, dresp = r.signedDiscord(in) },
	)
	if dresp["type"] != float64(6) {
		t.Errorf("discord click answered %v, want a deferred update", dresp)
	}
	out := r.outcome(q, 1)
	if out.Outcome != bridge.OutcomeAnswered {
		t.Fatalf("outcome %+v", out)
	}
	did2 := in["id"].(string)
	switch out.By {
	case "slack:U0ANA":
		if out.Text != "The answer: red" || out.Via != "slack" {
			t.Fatalf("resume %+v", out)
		}
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			if len(r.followups(did2)) == 0 {
				return fmt.Errorf("discord loser told nothing")
			}
			return nil
		})
		loserText(t, r.followups(did2), "This question was already answered by slack:U0ANA (u0ana) at ")
		if n := len(r.told("trig-ana")); n != 0 {
			t.Errorf("the Slack winner was told %q", r.told("trig-ana"))
		}
		r.slackSettled(ts, "Answered by @u0ana: red")
		r.discordSettled(did, "red")
	case "discord:" + raceKevinD:
		if out.Text != "The answer: blue" || out.Via != "discord" {
			t.Fatalf("resume %+v", out)
		}
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			if len(r.told("trig-ana")) == 0 {
				return fmt.Errorf("slack loser told nothing")
			}
			return nil
		})
		loserText(t, r.told("trig-ana"), "This question was already answered by discord:"+raceKevinD+" (kevin) at ")
		if n := len(r.followups(did2)); n != 0 {
			t.Errorf("the Discord winner was told %q", r.followups(did2))
		}
		r.slackSettled(ts, "Answered by @kevin: blue")
		r.discordSettled(did, "blue")
	default:
		t.Fatalf("answered by %s", out.By)
	}
	// The events stream holds one outcome and one refusal, to the loser.
	testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
		evs := r.events.of("job-r2", "q-1")
		if types := eventTypes(evs); types != "asked,answered,refused" && types != "asked,refused,answered" {
			return fmt.Errorf("events %s", types)
		}
		for _, ev := range evs {
			if ev.Type == bridge.EventRefused && (ev.To == out.By || ev.Reason != bridge.RefusedNotPending) {
				return fmt.Errorf("refusal %+v", ev)
			}
		}
		return nil
	})
}

// resumedOnce waits for the one resume of q at version and returns it.
func (r *race) resumedOnce(q *bridge.Question, version int64) bridge.Resume {
	r.t.Helper()
	var got []bridge.Resume
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		if got = r.resume.of(q.JobID, q.QuestionID, version); len(got) == 0 {
			return fmt.Errorf("no resume of %s v%d", q.QuestionID, version)
		}
		return nil
	})
	// The outbox publishes in order: a later row seen means any duplicate
	// of this one would have been seen before it. Flush and look again.
	if err := r.nc.Flush(); err != nil {
		r.t.Fatal(err)
	}
	if got = r.resume.of(q.JobID, q.QuestionID, version); len(got) != 1 {
		r.t.Errorf("%d resumes of %s v%d: %+v", len(got), q.QuestionID, version, got)
	}
	return got[0]
}

// waitTold waits for the Slack clicker of trigger to be told something.
func (r *race) waitTold(trigger string) []string {
	r.t.Helper()
	testenv.CheckFor(r.t, testenv.Patience, 20*time.Millisecond, func() error {
		if len(r.told(trigger)) == 0 {
			return fmt.Errorf("the clicker of %s was told nothing", trigger)
		}
		return nil
	})
	return r.told(trigger)
}

// TestRaceAnswerAndCancel: a click and the agent's cancel at once. One of
// them ends the question; the cards say which; a refused click is told it
// was cancelled.
func TestRaceAnswerAndCancel(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	for i := range 3 {
		job := fmt.Sprintf("job-rc%d", i)
		q := raceQuestion(job, "q-1")
		ts, did := r.ask(q)
		trig := "trig-c" + strconv.Itoa(i)
		all(
			func() {
				r.signedSlack(r.slackClick("U0ANA", trig, ts, "ask.acme."+job+".q-1.1", "choice.1", "blue"), nil)
			},
			func() {
				c := bridge.Cancel{Tenant: "acme", JobID: job, Reason: "the customer called back"}
				if err := bridge.Publish(context.Background(), r.s.nats.JS, bridge.CancelSubject("acme", job), "cancel-"+job, c); err != nil {
					t.Error(err)
				}
			},
		)
		res := r.resumedOnce(q, 1)
		switch res.Outcome {
		case bridge.OutcomeAnswered:
			if res.Text != "The answer: blue" || res.By != "slack:U0ANA" {
				t.Fatalf("resume %+v", res)
			}
			r.slackSettled(ts, "Answered by @u0ana: blue")
			r.discordSettled(did, "Answered by")
		case bridge.OutcomeCanceled:
			loserText(t, r.waitTold(trig), "This question was cancelled at ")
			r.slackSettled(ts, "Cancelled")
			r.discordSettled(did, "Cancelled")
		default:
			t.Fatalf("resume %+v", res)
		}
		t.Logf("race %d: %s", i, res.Outcome)
	}
}

// TestRaceAnswerAndTimeout: clicks on Slack and Discord at the question's
// deadline, and just after it.
func TestRaceAnswerAndTimeout(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	for i, after := range []time.Duration{-400 * time.Millisecond, 0, 300 * time.Millisecond} {
		q, timeout, ts, did := r.askShortly(fmt.Sprintf("job-rt%d", i))
		job := q.JobID
		var deadline time.Time
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			for _, ev := range r.events.of(q.JobID, q.QuestionID) {
				if ev.Type == bridge.EventAsked {
					deadline = ev.Deadline
					return nil
				}
			}
			return fmt.Errorf("no asked event")
		})
		time.Sleep(time.Until(deadline.Add(after))) // the race is at the deadline
		in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 0), "component_type": 2})
		trig := "trig-t" + strconv.Itoa(i)
		var sent [2]time.Time // when each click's request was answered: its attempt published
		all(
			func() {
				r.signedSlack(r.slackClick("U0ANA", trig, ts, "ask.acme."+job+".q-1.1", "choice.1", "blue"), nil)
				sent[0] = time.Now()
			},
			func() { r.signedDiscord(in); sent[1] = time.Now() },
		)
		res := r.resumedOnce(q, 1)
		id := in["id"].(string)
		if early := sent[0].Before(deadline) || sent[1].Before(deadline); early && res.Outcome != bridge.OutcomeAnswered {
			t.Errorf("an answer published before the deadline lost to the timeout: %+v", res)
		}
		switch res.Outcome {
		case bridge.OutcomeTimedOut:
			if res.Text != bridge.TimedOutText(timeout) {
				t.Errorf("resume %+v", res)
			}
			loserText(t, r.waitTold(trig), "This question timed out at ")
			testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
				if len(r.followups(id)) == 0 {
					return fmt.Errorf("discord clicker told nothing")
				}
				return nil
			})
			loserText(t, r.followups(id), "This question timed out at ")
			r.slackSettled(ts, strings.TrimSuffix(bridge.TimedOutText(timeout), "."))
			r.discordSettled(did, strings.TrimSuffix(bridge.TimedOutText(timeout), "."))
		case bridge.OutcomeAnswered:
			// The loser of the two clicks is told who answered.
			if res.By == "slack:U0ANA" {
				testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
					if len(r.followups(id)) == 0 {
						return fmt.Errorf("discord loser told nothing")
					}
					return nil
				})
				loserText(t, r.followups(id), "This question was already answered by slack:U0ANA (u0ana) at ")
			} else {
				loserText(t, r.waitTold(trig), "This question was already answered by discord:"+raceKevinD+" (kevin) at ")
			}
			r.slackSettled(ts, "Answered by")
			r.discordSettled(did, "Answered by")
		default:
			t.Fatalf("resume %+v", res)
		}
		t.Logf("%v after the deadline: %s by %s", after, res.Outcome, res.By)
	}
}

// TestRaceAnswerAndReask: a click on the version 1 card while the agent
// asks the same question at version 2.
func TestRaceAnswerAndReask(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rv", "q-1")
	ts, did := r.ask(q)
	q2 := raceQuestion("job-rv", "q-1")
	q2.TaskVersion = 2
	q2.Question = "Which colour should the new report use?"
	all(
		func() {
			r.signedSlack(r.slackClick("U0ANA", "trig-v", ts, "ask.acme.job-rv.q-1.1", "choice.1", "blue"), nil)
		},
		func() {
			if err := r.ag.Publish(context.Background(), q2); err != nil {
				t.Error(err)
			}
		},
	)
	res := r.resumedOnce(q, 1)
	switch res.Outcome {
	case bridge.OutcomeCanceled:
		if res.Text != "The question was superseded by task version 2." {
			t.Errorf("resume %+v", res)
		}
		loserText(t, r.waitTold("trig-v"), "This answer is stale: the question belongs to task version 1, which a newer version of the task replaced at ")
		r.slackSettled(ts, "Superseded by task version 2")
		r.discordSettled(did, "Superseded by task version 2")
	case bridge.OutcomeAnswered:
		r.slackSettled(ts, "Answered by @u0ana: blue")
		r.discordSettled(did, "Answered by")
	default:
		t.Fatalf("resume %+v", res)
	}
	// Version 2 waits with its own cards either way, and takes an answer.
	ts2, did2 := r.cards(q2)
	if ts2 == ts || did2 == did {
		t.Fatalf("version 2 shown on version 1's cards")
	}
	in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q2, 0), "component_type": 2})
	r.signedDiscord(in)
	if res2 := r.resumedOnce(q2, 2); res2.Outcome != bridge.OutcomeAnswered || res2.Text != "The answer: red" {
		t.Fatalf("version 2 resume %+v", res2)
	}
	r.slackSettled(ts2, "Answered by @kevin: red")
	r.discordSettled(did2, "Answered by")
	t.Logf("version 1: %s", res.Outcome)
}
