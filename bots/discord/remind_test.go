package discord

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestReminderDMs(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Answerers = []string{"discord:" + kevin.ID, "discord:" + ana.ID, "slack:U0ANA"}
	ev := asked(q)
	h.publishEvent(ev)
	card := h.posted(channelA, 1)
	h.fake.blockDMs(ana.ID)
	rem := bridge.Event{Type: bridge.EventReminded, EventID: "ob-rem-1", Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Step: bridge.TargetAnswerers, Targets: q.Answerers, Question: &q, AskedAt: ev.AskedAt, Deadline: ev.Deadline}
	h.publishEvent(rem)

	// Kevin gets a DM, opened with UserChannelCreate.
	var dm fakeReq
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		reqs := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")
		if len(reqs) != 1 {
			return fmt.Errorf("%d DMs to kevin", len(reqs))
		}
		dm = reqs[0]
		return nil
	})
	body := dm.JSON(t)
	e := body["embeds"].([]any)[0].(map[string]any)
	if !strings.Contains(body["content"].(string), "waiting for your answer") || e["description"] != q.Question {
		t.Fatalf("DM = %s", dm.Body)
	}
	var urls []string
	for _, c := range components(body) {
		urls = append(urls, c["url"].(string))
	}
	if len(urls) != 2 || urls[0] != "https://discord.com/channels/900/"+channelA+"/"+card["id"].(string) {
		t.Fatalf("DM buttons = %v, want a jump link and a console link", urls)
	}
	if l := linkOf(t, h.signer, urls[1]); l.Identity != "discord:"+kevin.ID {
		t.Fatalf("console link for %q, want kevin", l.Identity)
	}

	// Ana does not accept DMs: reported in the job's thread, once.
	thread := card["id"].(string)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		notes := h.fake.requests("POST", "/channels/"+thread+"/messages")
		if len(notes) != 1 || !strings.Contains(notes[0].JSON(t)["content"].(string), "<@"+ana.ID+">") {
			return fmt.Errorf("notes in the thread: %d", len(notes))
		}
		return nil
	})
	opens := h.fake.requests("POST", "/users/@me/channels")
	var recipients []string
	for _, o := range opens {
		recipients = append(recipients, o.JSON(t)["recipient_id"].(string))
	}
	if strings.Join(recipients, ",") != kevin.ID+","+ana.ID {
		t.Fatalf("DM channels opened for %v, want kevin and ana (not the Slack user)", recipients)
	}
	// Redelivered (or published again) the step sends nothing twice and
	// does not retry Ana.
	h.publishEvent(bridge.Event{Type: bridge.EventReminded, EventID: "ob-rem-1-again", Tenant: "acme", JobID: "job-1", QuestionID: "q-1",
		TaskVersion: 3, Step: bridge.TargetAnswerers, Targets: q.Answerers, Question: &q})
	h.markerEvent()
	dmsToAna := len(h.fake.requests("POST", "/channels/77"+ana.ID+"/messages"))
	if dmsToAna > 2 {
		t.Fatalf("%d DM attempts to ana, want at most one per event", dmsToAna)
	}
	if !strings.Contains(h.logs.String(), "does not accept direct messages") {
		t.Fatalf("the unreachable user is not in the log")
	}

	// The escalation to the owner says so.
	esc := bridge.Event{Type: bridge.EventEscalated, EventID: "ob-esc-1", Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Step: bridge.TargetOwner, Targets: []string{"discord:" + stranger.ID}, Question: &q, Deadline: ev.Deadline}
	h.publishEvent(esc)
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		reqs := h.fake.requests("POST", "/channels/77"+stranger.ID+"/messages")
		if len(reqs) != 1 {
			return fmt.Errorf("%d DMs to the owner", len(reqs))
		}
		if c := reqs[0].JSON(t)["content"].(string); !strings.Contains(c, "Nobody has answered") {
			return fmt.Errorf("escalation DM says %q", c)
		}
		return nil
	})
	// A later step that names Ana again is noted again: Discord would take
	// the same nonce, minutes later, for the first note.
	h.publishEvent(bridge.Event{Type: bridge.EventEscalated, EventID: "ob-esc-2", Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Step: bridge.TargetAdmins, Targets: []string{"discord:" + ana.ID}, Question: &q, Deadline: ev.Deadline})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		h.fake.mu.Lock()
		defer h.fake.mu.Unlock()
		n := 0
		for _, m := range h.fake.msgs {
			if m["channel_id"] == thread && strings.Contains(fmt.Sprint(m["content"]), "could not send <@"+ana.ID+">") {
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("%d notes about ana in the thread, want one per step", n)
		}
		return nil
	})
}

func TestReminderRedeliveryAfterTransientFailure(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	q := colorQuestion()
	q.Answerers = []string{"discord:" + kevin.ID, "discord:" + ana.ID}
	h.publishEvent(asked(q))
	h.posted(channelA, 1)
	// Ana's DM fails once with a 500: the event is retried; Kevin is not
	// messaged twice.
	h.fake.failOn(failRule{Method: "POST", Prefix: "/channels/77" + ana.ID, Status: 500, Times: 1})
	h.publishEvent(bridge.Event{Type: bridge.EventReminded, EventID: "ob-r2", Tenant: "acme", JobID: "job-1", QuestionID: "q-1",
		TaskVersion: 3, Step: bridge.TargetAnswerers, Targets: q.Answerers, Question: &q})
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.fake.requests("POST", "/channels/77"+ana.ID+"/messages")); n != 2 {
			return fmt.Errorf("%d DM posts to ana, want 2 (one failed, one retried)", n)
		}
		return nil
	})
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 1 {
		t.Fatalf("%d DMs to kevin, want 1", n)
	}
}
