package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// A retired and an implicitly answered question on Discord: each card says
// why it ended, the agent reads cancelled with the status, and show's audit
// keeps the evidence.
func TestE2ERetiredAndImplicitlyAnswered(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	ctx := context.Background()
	retired, implicit := colorQuestion(), colorQuestion()
	retired.JobID, implicit.JobID = "job-ret", "job-imp"
	ask(t, env, retired)
	retiredCard := h.posted(channelA, 1)
	ask(t, env, implicit)
	implicitCard := h.posted(channelA, 2)

	for id, c := range map[string]bridge.Cancel{
		"cancel-ret": {Tenant: "acme", JobID: "job-ret", QuestionID: "q-1", Status: bridge.CancelRetired,
			Reason: "the customer switched to the annual plan"},
		"cancel-imp": {Tenant: "acme", JobID: "job-imp", QuestionID: "q-1", Status: bridge.CancelImplicitlyAnswered,
			Evidence: "green, like the new brand guide"},
	} {
		if err := bridge.Publish(ctx, env.NATS.JS, bridge.CancelSubject(c.Tenant, c.JobID), id, c); err != nil {
			t.Fatal(err)
		}
	}
	h.fake.settledCard(t, retiredCard["id"].(string), "No longer needed: the customer switched to the annual plan")
	h.fake.settledCard(t, implicitCard["id"].(string), "Answered in conversation: “green, like the new brand guide”")

	if out := await(t, env, retired); out.Outcome != bridge.OutcomeCanceled || out.Status != bridge.CancelRetired ||
		out.Text != "No longer needed: the customer switched to the annual plan." {
		t.Errorf("retired resume = %+v", out)
	}
	if out := await(t, env, implicit); out.Outcome != bridge.OutcomeCanceled || out.Status != bridge.CancelImplicitlyAnswered ||
		out.Text != "Answered in conversation: “green, like the new brand guide”." {
		t.Errorf("implicitly answered resume = %+v", out)
	}
	var show bridge.ShowReply
	if err := h.bot.request(ctx, bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
		Tenant: "acme", JobID: "job-imp", QuestionID: "q-1"}, &show); err != nil {
		t.Fatal(err)
	}
	if n := len(show.Audit); n == 0 || show.Audit[n-1].Reason != "Answered in conversation: “green, like the new brand guide”." {
		t.Errorf("show's audit = %+v", show.Audit)
	}
	if show.Question == nil || show.Question.State != bridge.StateCancelled {
		t.Errorf("show = %+v, want cancelled", show.Question)
	}
}

// cancelsNow decodes the cancels the bot published so far.
func (h *harness) cancelsNow() []bridge.Cancel {
	var out []bridge.Cancel
	for _, m := range h.cancels.all() {
		var c bridge.Cancel
		if err := json.Unmarshal(m.Data, &c); err != nil {
			h.t.Fatalf("cancel is not JSON: %v", err)
		}
		out = append(out, c)
	}
	return out
}

func TestE2ECancelByMappedDiscordRole(t *testing.T) {
	t.Parallel()
	// Nobody is configured as an admin: only the mapped Discord role can
	// make someone one.
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	ask(t, env, q)
	msg := h.posted(channelA, 1)
	reply := func(resp map[string]any) string {
		t.Helper()
		d, _ := resp["data"].(map[string]any)
		if resp["type"] != float64(4) || d["flags"] != float64(64) {
			t.Fatalf("response = %v, want an ephemeral message", resp)
		}
		s, _ := d["content"].(string)
		return s
	}

	// A plain member (no mapped role) asks to cancel: the command's reply
	// is honest, the runtime refuses, and the refusal reaches that member
	// alone as an ephemeral follow-up on their command.
	plain := h.command(stranger, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "reason": "done"})
	if s := reply(h.interact(plain)); !strings.Contains(s, "Asked askbridge to cancel job job-1") || !strings.Contains(s, "only owners and admins may") {
		t.Fatalf("cancel reply = %q", s)
	}
	f := h.fake.followups(t, plain["token"].(string), 1)[0].JSON(t)
	if f["flags"] != float64(64) || !strings.Contains(f["content"].(string), "You can't cancel questions") ||
		!strings.Contains(f["content"].(string), "job-1") {
		t.Fatalf("cancel refusal follow-up = %v", f)
	}
	cs := h.cancelsNow()
	if len(cs) != 1 || cs[0].By != "discord:"+stranger.ID || len(cs[0].Roles) != 0 ||
		cs[0].ReplyTo[replyUser] != stranger.ID || cs[0].ReplyTo[replyToken] != plain["token"] {
		t.Fatalf("plain member's cancel = %+v", cs)
	}
	// The question keeps waiting.
	var show bridge.ShowReply
	if err := h.bot.request(context.Background(), bridge.APIShow, bridge.ShowRequest{As: "discord:" + kevin.ID,
		Tenant: "acme", JobID: "job-1", QuestionID: "q-1"}, &show); err != nil {
		t.Fatal(err)
	}
	if show.Question == nil || show.Question.State != bridge.StatePending {
		t.Fatalf("after a refused cancel the question is %+v, want pending", show.Question)
	}
	if n := resumeCount(t, env); n != 0 {
		t.Fatalf("%d resumes after a refused cancel, want 0", n)
	}
	if n := len(components(h.fake.message(msg["id"].(string)))); n == 0 {
		t.Fatal("the card lost its buttons after a refused cancel")
	}

	// A member whose Discord role maps to admin cancels: the job resumes
	// cancelled.
	ada := person{ID: "3000000000000000005", Name: "ada", Roles: []string{"2000000000000000099", adminRole}}
	reply(h.interact(h.command(ada, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "reason": "not needed"})))
	res := await(t, env, q)
	if res.Outcome != bridge.OutcomeCanceled || !strings.Contains(res.Text, "not needed") {
		t.Fatalf("resume = %+v, want cancelled", res)
	}
	cs = h.cancelsNow()
	if len(cs) != 2 || cs[1].By != "discord:"+ada.ID || !slices.Equal(cs[1].Roles, []string{"admin"}) {
		t.Fatalf("admin's cancel = %+v", cs)
	}
	h.fake.settledCard(t, msg["id"].(string), "Cancelled: not needed · ")
	// Only the plain member's command got a follow-up.
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 1 {
		t.Fatalf("%d follow-ups, want 1 (the refusal)", n)
	}
}

func TestE2ECancelRefusalByDMWhenTheTokenExpired(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	var ahead atomic.Int64 // the bot's clock runs this far ahead
	h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) {
		b.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond }
	}})
	q := colorQuestion()
	ask(t, env, q)
	h.posted(channelA, 1)
	// The runtime's refusal comes after the command's token lapsed (the
	// fake answers this token as Discord does an expired one), and long
	// enough after the command (11 s) not to be a refusal overtaking the
	// command's response: a DM.
	in := h.command(kevin, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "question": "q-1"})
	in["token"] = "expired-" + in["id"].(string)
	h.interact(in)
	ahead.Store(int64(11 * time.Second))
	var dm map[string]any
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		dms := h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")
		if len(dms) != 1 {
			return fmt.Errorf("%d DMs to kevin, want 1", len(dms))
		}
		dm = dms[0].JSON(t)
		return nil
	})
	if s, _ := dm["content"].(string); !strings.Contains(s, "You can't cancel questions") || !strings.Contains(s, "question q-1 of job job-1") {
		t.Fatalf("DM = %v", dm)
	}
	// One try, or two when the refusal came before the clock moved on.
	if n := len(h.fake.requests("POST", "/webhooks/"+testApp+"/"+in["token"].(string))); n < 1 || n > 2 {
		t.Fatalf("%d follow-up tries on the expired token, want 1 or 2", n)
	}
	// Nobody else was told.
	if n := len(h.fake.requests("POST", "/users/@me/channels")); n != 1 {
		t.Fatalf("%d DM channels opened, want 1", n)
	}
}

func TestCancelRefusalAfterTheTokenLapsedGoesByDM(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	// A refused cancel read long after the command (e.g. after a restart):
	// the token is past its life, so no follow-up is tried; a DM instead.
	ev := bridge.Event{Type: bridge.EventRefused, Tenant: "acme", JobID: "job-9", To: "discord:" + ana.ID, By: "discord:" + ana.ID,
		Reason: bridge.RefusedForbidden, Text: "You can't cancel questions: that needs the admin or owner role.",
		ReplyTo: map[string]string{replyPlatform: bridge.PlatformDiscord, replyAppID: testApp, replyToken: "itoken-old",
			replyChannel: channelA, replyKind: replyKindCancel, replyUser: ana.ID, replyInteraction: "1400000000000000777",
			replySentAt: strconv.FormatInt(time.Now().Add(-20*time.Minute).Unix(), 10)}}
	h.publishEvent(ev)
	ev.EventID = "ob-redelivered"
	h.publishEvent(ev) // told once
	// A refusal addressed to someone other than the cancel's requester is
	// not told to anyone.
	other := ev
	other.EventID, other.To = "ob-other", "discord:"+kevin.ID
	other.ReplyTo = map[string]string{}
	for k, v := range ev.ReplyTo {
		other.ReplyTo[k] = v
	}
	other.ReplyTo[replyInteraction] = "1400000000000000778"
	h.publishEvent(other)
	h.markerEvent()
	dms := h.fake.requests("POST", "/channels/77"+ana.ID+"/messages")
	if len(dms) != 1 || !strings.Contains(dms[0].JSON(t)["content"].(string), "You can't cancel questions") {
		t.Fatalf("DMs to ana = %v, want one with the refusal", dms)
	}
	if n := len(h.fake.requests("POST", "/webhooks/")); n != 0 {
		t.Fatalf("%d follow-ups on a lapsed token, want 0", n)
	}
	if n := len(h.fake.requests("POST", "/channels/77"+kevin.ID+"/messages")); n != 0 {
		t.Fatalf("%d DMs to kevin, want 0", n)
	}
}

// TestE2ECancelRefusalOvertakingTheResponse checks a refused /ask cancel
// whose follow-up reaches Discord before the command's response (unknown
// webhook, seconds after the command) is tried again as a follow-up, not
// sent by DM at once.
func TestE2ECancelRefusalOvertakingTheResponse(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS, tweak: func(b *Bot) {
		b.backoff = func(uint64) time.Duration { return 10 * time.Millisecond }
	}})
	q := colorQuestion()
	ask(t, env, q)
	h.posted(channelA, 1)
	in := h.command(kevin, "cancel", map[string]string{"tenant": "acme", "job": "job-1", "question": "q-1"})
	token := in["token"].(string)
	h.fake.failOn(failRule{Method: "POST", Prefix: "/webhooks/" + testApp + "/" + token, Status: 404, Code: 10015, Times: 1})
	h.interact(in)
	tries := h.fake.followups(t, token, 2)
	if c, _ := tries[1].JSON(t)["content"].(string); !strings.Contains(c, "You can't cancel questions") {
		t.Fatalf("second try = %s", tries[1].Body)
	}
	h.markerEvent()
	if n := len(h.fake.requests("POST", "/users/@me/channels")); n != 0 {
		t.Fatalf("%d DM channels opened, want none: the follow-up reached kevin", n)
	}
}
