package slack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// TestRestrictedContentGoesToItsPeopleInADM checks a restricted question's
// content reaches the people it names in a DM, once per person, on the
// platform the runtime picks for them (one that is on), while the channel's card, the
// operator's /ask list and the queue hide it.
func TestRestrictedContentGoesToItsPeopleInADM(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Roles: operators,
		// Kevin is on Slack first; the owner on Discord first, but Discord
		// is off here: the owner's DM comes on Slack.
		People:    bridge.People{"kevin": {"slack:U0KEV", "discord:333333333333333333"}, "olive": {"discord:444444444444444444", "slack:U0OWNER"}},
		Platforms: map[string]bridge.Platform{bridge.PlatformSlack: {DefaultChannel: "C0123"}}})
	h := startBot(t, env.NATS, newFakeSlack(t))
	q := question("job-rdm", "q-rdm")
	q.Question, q.WhyItMatters = "Which salary band should the offer use?", "The offer goes out today."
	q.Choices = []string{"band-4", "band-5"}
	q.Answerers = []string{"person:kevin", "slack:U0KEV"}
	q.Visibility = bridge.VisibilityRestricted
	publishQuestion(t, env, q)
	card := h.posted(t, "q-rdm")
	secrets := []string{q.Question, q.WhyItMatters, "band-4", "band-5"}
	for _, secret := range secrets {
		if strings.Contains(string(card.Body), secret) {
			t.Errorf("the channel card shows %q", secret)
		}
	}
	var dms map[string][]string
	testenv.CheckFor(t, wait, tick, func() error {
		dms = map[string][]string{}
		for _, c := range h.fake.Calls("chat.postMessage") {
			if ch := c.Str("channel"); strings.HasPrefix(ch, "D") {
				dms[ch] = append(dms[ch], c.Str("text"))
			}
		}
		if len(dms["D0KEV"]) == 0 || len(dms["D0OWNER"]) == 0 {
			return fmt.Errorf("no DM to kevin; DMs: %v", dms)
		}
		return nil
	})
	if got := dms["D0KEV"]; len(got) != 1 || !strings.HasPrefix(got[0],
		":lock: A restricted question for you (job `job-rdm`); only the people it names and admins may read it:\n>Which salary band should the offer use?\nWhy it matters: The offer goes out today.\nChoices: band-4 · band-5\n") ||
		!strings.Contains(got[0], "shows others only that it waits") || !strings.HasSuffix(got[0], "\nOr answer with `/ask answer job-rdm/q-rdm <answer>`.") {
		t.Errorf("kevin's DMs: %q", got)
	}
	for _, cmd := range []string{"list", "queue job-rdm"} {
		if s := slashReply(t, h, "U0OP", cmd); strings.Contains(s, q.Question) || strings.Contains(s, "band-4") || !strings.Contains(s, "job-rdm") {
			t.Errorf("the operator's /ask %s: %q", cmd, s)
		}
	}
	if got := dms["D0OWNER"]; len(got) != 1 || !strings.Contains(got[0], q.Question) {
		t.Errorf("the owner's DMs: %q", got)
	}
	// By now every DM of the asked event is out: none to the operator,
	// none twice.
	for _, c := range h.fake.Calls("chat.postMessage") {
		switch ch := c.Str("channel"); {
		case ch == "D0OP":
			t.Errorf("%s got %q", ch, c.Str("text"))
		case (ch == "D0KEV" || ch == "D0OWNER") && c.Str("text") != dms[ch][0]:
			t.Errorf("%s got a second DM: %q", ch, c.Str("text"))
		}
	}
	// Kevin answers as his DM says, and the outcome names him as a person.
	if s := slashReply(t, h, "U0KEV", "answer job-rdm/q-rdm band-5"); !strings.Contains(s, "Sent your answer") {
		t.Fatalf("/ask answer: %q", s)
	}
	if out := awaitOutcome(t, env, q); out.Outcome != bridge.OutcomeAnswered || out.Text != "The answer: band-5" || out.Person != "kevin" {
		t.Fatalf("resume: %+v", out)
	}
}
