package runtime_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/policy"
)

// kevinDiscord is kevin's Discord account; his Slack one is slack:UOP, an
// operator (roles).
const kevinDiscord = "discord:333333333333333333"

// TestPersonApprovesOnce: with two approvals required, kevin approving on
// Slack and again on Discord is still one of two; his Discord account
// holds his Slack account's operator role; another person settles it.
func TestPersonApprovesOnce(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles,
		People: bridge.People{"kevin": {"slack:UOP", kevinDiscord}},
		Policy: withPolicy(policy.Rule{RequireApproval: true, RequiredApprovals: 2, Approvers: []string{"operator", "admin"}})})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-pp")
	ch := ask(t, env, refundApproval("job-pp", "pr_people", 240))
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-pp", QuestionID: "q-refund", AttemptID: "k-slack", Action: bridge.ActionApprove, By: "slack:UOP", ByName: "Kevin M."})
	rec := eventOf(t, events, "job-pp", bridge.EventApproval)
	if rec.Text != "1 of 2 approvals: kevin" || rec.Person != "kevin" || rec.Proposal.Approvals[0].Person != "kevin" {
		t.Fatalf("approval_recorded: %q person %q %+v", rec.Text, rec.Person, rec.Proposal)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-pp", QuestionID: "q-refund", AttemptID: "k-discord", Action: bridge.ActionApprove, By: kevinDiscord, ByName: "kev"})
	if ev := refusalFor(t, events, "k-discord"); ev.Reason != bridge.RefusedAlreadyApproved || ev.Text !=
		"kevin has already approved this proposal as slack:UOP; it needs 2 approvals from different people (1 of 2 approvals: kevin)." {
		t.Fatalf("kevin again on Discord: %s %q", ev.Reason, ev.Text)
	}
	if row := proposalRow(t, env, "pr_people"); row.State != bridge.ProposalPending || len(row.Approvals) != 1 {
		t.Fatalf("after kevin twice: %+v", row)
	}
	// Kevin's Discord account, with no role of its own, may see and
	// answer it as his Slack account, an operator, does.
	if v := show(t, env, kevinDiscord, "job-pp", "q-refund").Question; v == nil || !v.CanAnswer ||
		strings.Join(v.Proposal.MayApprove, ",") != "operator,admin" {
		t.Fatalf("shown to kevin on Discord: %+v", v)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-pp", QuestionID: "q-refund", AttemptID: "admin", Action: bridge.ActionApprove, By: "slack:UADMIN"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeAnswered || string(out.Answer) != `"approved"` {
		t.Fatalf("outcome: %+v", out)
	}
}

// TestOwnersOtherAccountMayNotApprove: forbid_self_approval compares
// people, so the owner's Discord account cannot approve the owner's job.
func TestOwnersOtherAccountMayNotApprove(t *testing.T) {
	t.Parallel()
	h := withPolicy(policy.Rule{RequireApproval: true, ForbidSelfApproval: true})
	// The people: section of the policy file links them, as ASK_PEOPLE would.
	h.Load().People = bridge.People{"jane": {"slack:UJANE", "discord:444444444444444444"}}
	env := testenv.Start(t, testenv.Options{Roles: roles, Policy: h})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-po")
	ch := ask(t, env, refundApproval("job-po", "pr_jane", 40)) // owner slack:UJANE
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-po", QuestionID: "q-refund", AttemptID: "jane-d", Action: bridge.ActionApprove, By: "discord:444444444444444444"})
	if ev := refusalFor(t, events, "jane-d"); ev.Reason != bridge.RefusedSelfApproval || ev.Text !=
		"You can't approve this proposal: discord:444444444444444444 (jane, like slack:UJANE) is the owner of the job it acts for, and the policy forbids approving one's own refund. Someone else must approve it." {
		t.Fatalf("owner's other account: %s %q", ev.Reason, ev.Text)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-po", QuestionID: "q-refund", AttemptID: "op", Action: bridge.ActionApprove, By: "slack:UOP"})
	if out := outcome(t, ch); string(out.Answer) != `"approved"` || out.By != "slack:UOP" {
		t.Fatalf("outcome: %+v", out)
	}
}

// TestPersonAsAnswerer: answerers may name person:<name>; every identity
// of the person may then read and answer a restricted question, the
// outcome names the person, and an unknown person is refused at intake.
func TestPersonAsAnswerer(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: roles, People: bridge.People{"ana": {"slack:U0ANA", "discord:555555555555555555"}}})
	q := choiceQuestion("job-pa1")
	q.Answerers, q.Visibility = []string{"person:ana"}, bridge.VisibilityRestricted
	ch := ask(t, env, q)
	waitState(t, env, q, bridge.StatePending)
	if v := show(t, env, "discord:555555555555555555", "job-pa1", "q-1").Question; v == nil || v.Hidden || v.Question == nil || !v.CanAnswer {
		t.Fatalf("shown to ana on Discord: %+v", v)
	}
	if v := show(t, env, "slack:UOP", "job-pa1", "q-1").Question; v == nil || !v.Hidden || v.Question != nil ||
		!slices.Equal(v.WaitsFor, []string{"person:ana"}) {
		t.Fatalf("shown to an operator: %+v", v)
	}
	attempt(t, env, bridge.AnswerAttempt{JobID: "job-pa1", QuestionID: "q-1", AttemptID: "ana", Action: bridge.ActionDecline, Comment: "ask Kevin", By: "discord:555555555555555555"})
	if out := outcome(t, ch); out.Outcome != bridge.OutcomeDeclined || out.Person != "ana" ||
		out.Text != "discord:555555555555555555 (ana) declined to answer: ask Kevin." {
		t.Fatalf("outcome: %+v", out)
	}

	bad := choiceQuestion("job-pa2")
	bad.Answerers = []string{"slack:U1", "person:anna"}
	if out := refused(t, env, bad); out.Outcome != bridge.OutcomeInvalid || out.Text !=
		"The question was refused: answerers[1]: person:anna is not a person: ASK_PEOPLE and the policy file's people: name ana." {
		t.Fatalf("unknown person: %+v", out)
	}
}

// TestPersonRemindedOnce: a step that names a person through two of their
// identities (answerer on Slack, owner on Discord) reminds them once, where
// they were last active, else at the first identity listed.
func TestPersonRemindedOnce(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock,
		People: bridge.People{"ana": {"console:ana", "slack:UANA", "discord:555555555555555555"}}})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-pr")
	first := ladderQuestion("job-pr", "")
	first.Answerers = []string{"person:ana", "slack:UANA", "discord:555555555555555555"}
	first.Visibility = bridge.VisibilityRestricted
	outcomeAdvancing(t, clock, ask(t, env, first))
	reminded := eventOf(t, events, "job-pr", bridge.EventReminded)
	// console:ana cannot be sent a DM: the first chat identity listed.
	if !slices.Equal(reminded.Targets, []string{"slack:UANA"}) || reminded.Persons["slack:UANA"] != "ana" {
		t.Fatalf("reminded %v persons %v", reminded.Targets, reminded.Persons)
	}
	if !bridge.ReminderShowsQuestion(&reminded, reminded.Question, "slack:UANA") {
		t.Fatal("ana's reminder of a restricted question hides it from her")
	}

	// Ana is active on Discord: her next reminder goes there.
	second := ladderQuestion("job-pr2", "")
	second.QuestionID, second.Answerers = "q-2", []string{"person:ana"}
	ask(t, env, second)
	waitState(t, env, second, bridge.StatePending)
	show(t, env, "discord:555555555555555555", "job-pr2", "q-2")
	events2 := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-pr2")
	clock.AdvanceUntil(t, 100*time.Millisecond, testenv.Patience, func() error {
		for _, ev := range events2.Events() {
			if ev.Type == bridge.EventReminded {
				if !slices.Equal(ev.Targets, []string{"discord:555555555555555555"}) {
					t.Fatalf("second reminder to %v", ev.Targets)
				}
				return nil
			}
		}
		return fmt.Errorf("no reminder yet: %s", events2.EventTypes())
	})
}

// TestPersonReachedOnAPlatformThatIsOn: a person listed on Discord first
// is reminded on Slack when only Slack is on.
func TestPersonReachedOnAPlatformThatIsOn(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock,
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C1"}},
		People:    bridge.People{"olive": {"discord:444444444444444444", "slack:UOLIVE"}}})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-on")
	q := ladderQuestion("job-on", "")
	q.Answerers = []string{"person:olive"}
	outcomeAdvancing(t, clock, ask(t, env, q))
	if got := eventOf(t, events, "job-on", bridge.EventReminded).Targets; !slices.Equal(got, []string{"slack:UOLIVE"}) {
		t.Fatalf("reminded %v, want slack:UOLIVE", got)
	}
}

// TestSnoozeHoldsThePerson: ana snoozes from Slack, then is active on
// Discord; the next reminder, which would go to Discord, is held too: a
// snooze moves the person's reminder, whichever account it would reach.
func TestSnoozeHoldsThePerson(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock()
	env := testenv.Start(t, testenv.Options{Roles: roles, Clock: clock,
		People: bridge.People{"ana": {"slack:UANA", "discord:555555555555555555"}}})
	events := env.Record(t, bridge.StreamEvents, "ask.v1.event.acme.job-ps")
	q := choiceQuestion("job-ps")
	q.Timeout, q.Answerers = "8h", []string{"person:ana", "slack:UBEN"}
	q.Escalation = &bridge.Escalation{Steps: []bridge.LadderStep{{At: 0.25, To: bridge.TargetAnswerers}}}
	ask(t, env, q)
	waitState(t, env, q, bridge.StatePending)
	attempt(t, env, bridge.AnswerAttempt{JobID: q.JobID, QuestionID: "q-1", AttemptID: "ps1", Action: bridge.ActionSnooze, Snooze: bridge.SnoozeHours4, By: "slack:UANA"})
	eventOf(t, events, q.JobID, bridge.EventSnoozed)
	show(t, env, "discord:555555555555555555", q.JobID, "q-1") // active on Discord now
	// To the 2h reminder and not near the snooze's end at 4h: stepping the
	// clock on while the ladder works could pass 4h before it fires.
	clock.Advance(2*time.Hour + time.Minute)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		for _, ev := range events.Events() {
			if ev.Type == bridge.EventReminded {
				if !slices.Equal(ev.Targets, []string{"slack:UBEN"}) {
					t.Fatalf("the 2h reminder reminds %v, want ben only", ev.Targets)
				}
				return nil
			}
		}
		return fmt.Errorf("no reminder yet")
	})
}
