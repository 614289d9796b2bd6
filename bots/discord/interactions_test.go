package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

func TestPingAnsweredInline(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	status, body := h.post([]byte(`{"id":"1","application_id":"555000111","type":1,"token":"t","version":1}`), time.Now(), h.priv)
	if status != http.StatusOK {
		t.Fatalf("PING: HTTP %d: %s", status, body)
	}
	var resp map[string]any
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("PING response: %v: %s", err, body)
	}
	if len(resp) != 1 || resp["type"] != float64(1) {
		t.Fatalf("PING response = %s, want {\"type\":1}", body)
	}
}

func TestBadSignatureRefused(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	body := []byte(`{"id":"1","application_id":"555000111","type":1,"token":"t","version":1}`)
	if status, out := h.post(body, time.Now(), other); status != http.StatusUnauthorized {
		t.Fatalf("signed with another key: HTTP %d (%s), want 401", status, out)
	}
	// A body changed after signing.
	stamp := time.Now()
	status, _ := h.postTampered(body, stamp)
	if status != http.StatusUnauthorized {
		t.Fatalf("tampered body: HTTP %d, want 401", status)
	}
	// No signature at all.
	resp, err := http.Post(h.web.URL+"/discord/interactions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned: HTTP %d, want 401", resp.StatusCode)
	}
}

func TestOversizeBodyRefused(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	in := h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))
	// A validly signed, fresh interaction padded past the limit (2 MiB, and
	// one byte over): 413, not a signature failure, and nothing published.
	in["padding"] = strings.Repeat("a", 2<<20)
	big, _ := json.Marshal(in)
	if status, out := h.post(big, time.Now(), h.priv); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("2 MiB body: HTTP %d (%s), want 413", status, out)
	}
	in["padding"] = ""
	base, _ := json.Marshal(in)
	in["padding"] = strings.Repeat("a", maxBodyBytes-len(base)+1)
	over, _ := json.Marshal(in)
	if len(over) != maxBodyBytes+1 {
		t.Fatalf("padded body is %d bytes, want %d", len(over), maxBodyBytes+1)
	}
	if status, out := h.post(over, time.Now(), h.priv); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d-byte body: HTTP %d (%s), want 413", len(over), status, out)
	}
	// Unsigned and oversize: still 413 (the size is checked first).
	resp, err := http.Post(h.web.URL+"/discord/interactions", "application/json", strings.NewReader(string(big)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("unsigned 2 MiB body: HTTP %d, want 413", resp.StatusCode)
	}
	// At the limit exactly, the same click (a new interaction) is verified
	// from the buffered body and accepted.
	in = h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))
	in["padding"] = ""
	base, _ = json.Marshal(in)
	in["padding"] = strings.Repeat("a", maxBodyBytes-len(base))
	exact, _ := json.Marshal(in)
	if len(exact) != maxBodyBytes {
		t.Fatalf("padded body is %d bytes, want %d", len(exact), maxBodyBytes)
	}
	if status, out := h.post(exact, time.Now(), h.priv); status != http.StatusOK {
		t.Fatalf("%d-byte body: HTTP %d (%s), want 200", len(exact), status, out)
	}
	if got := h.waitAttempts(1); got[0].By != "discord:"+kevin.ID || string(got[0].Answer) != `"blue"` {
		t.Fatalf("attempt = %+v", got[0])
	}
}

func TestOldTimestampRefused(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	in := h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))
	body, _ := json.Marshal(in)
	for _, ts := range []time.Time{time.Now().Add(-6 * time.Minute), time.Now().Add(6 * time.Minute)} {
		status, out := h.post(body, ts, h.priv)
		if status != http.StatusUnauthorized {
			t.Fatalf("timestamp %s off: HTTP %d (%s), want 401", time.Until(ts).Round(time.Minute), status, out)
		}
	}
	// The same interaction, fresh, is accepted: the refusal was the time.
	if status, out := h.post(body, time.Now(), h.priv); status != http.StatusOK {
		t.Fatalf("fresh: HTTP %d: %s", status, out)
	}
	if got := h.waitAttempts(1); got[0].By != "discord:"+kevin.ID {
		t.Fatalf("attempt by %q", got[0].By)
	}
}

func TestReplayedInteractionMakesNoSecondAttempt(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	in := h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))
	first := h.interact(in)
	if first["type"] != float64(6) {
		t.Fatalf("first click response = %v, want a deferred update (6)", first)
	}
	h.waitAttempts(1)
	again := h.interact(in)
	data, _ := again["data"].(map[string]any)
	if again["type"] != float64(4) || data["flags"] != float64(64) || !strings.Contains(data["content"].(string), "already handled") {
		t.Fatalf("replay response = %v, want an ephemeral 'already handled'", again)
	}
	// Core NATS sees every publish, even ones JetStream would drop: the
	// replay published nothing.
	if got := len(h.attempts.all()); got != 1 {
		t.Fatalf("%d attempts published after a replay, want 1", got)
	}
}

func TestBadInteractionsGetClearErrors(t *testing.T) {
	t.Parallel()
	// The runtime says which questions it knows.
	env := testenv.Start(t, testenv.Options{Platforms: map[string]bridge.Platform{bridge.PlatformDiscord: {DefaultChannel: channelA}}})
	h := start(t, harnessOptions{nats: env.NATS})
	for name, tc := range map[string]struct {
		in   map[string]any
		want string
	}{
		"unknown custom id":          {h.click(kevin, "nope:c:acme:job-1:q-1:3:0"), "not one askbridge understands"},
		"index out of range":         {h.click(kevin, "ab:c:acme:job-1:q-1:3:25"), "not one askbridge understands"},
		"leading zero version":       {h.click(kevin, "ab:c:acme:job-1:q-1:03:0"), "not one askbridge understands"},
		"unknown card":               {h.click(kevin, "ab:c:acme:job-9:q-9:1:0"), "no longer knows"},
		"component without data":     {h.interaction(3, kevin, nil), "not one askbridge understands"},
		"modal for unknown card":     {h.submit(kevin, "ab:ma:acme:job-9:q-9:1", map[string]string{"answer": "x"}), "no longer knows"},
		"unknown interaction type":   {h.interaction(4, kevin, map[string]any{"name": "ask"}), "does not handle"},
		"command with no subcommand": {h.interaction(2, kevin, map[string]any{"name": "ask", "type": 1}), "/ask help"},
	} {
		t.Run(name, func(t *testing.T) {
			resp := h.interact(tc.in)
			data, _ := resp["data"].(map[string]any)
			if resp["type"] != float64(4) || data["flags"] != float64(64) {
				t.Fatalf("response = %v, want an ephemeral message", resp)
			}
			if c, _ := data["content"].(string); !strings.Contains(c, tc.want) {
				t.Fatalf("content = %q, want it to say %q", c, tc.want)
			}
		})
	}
	// Garbage that is signed: a clear 400, no panic.
	status, out := h.post([]byte(`{"type": 3, "data": 17`), time.Now(), h.priv)
	if status != http.StatusBadRequest {
		t.Fatalf("malformed JSON: HTTP %d (%s), want 400", status, out)
	}
	status, out = h.post([]byte(`{"type": 3, "id": "12", "token": "x", "data": "not an object"}`), time.Now(), h.priv)
	if status != http.StatusBadRequest {
		t.Fatalf("data of the wrong shape: HTTP %d (%s), want 400", status, out)
	}
	if got := len(h.attempts.all()); got != 0 {
		t.Fatalf("%d attempts published for bad input, want 0", got)
	}
}

func TestDMInteractionAndMissingUser(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	// In a DM Discord sends "user", not "member".
	in := h.command(kevin, "help", nil)
	delete(in, "member")
	delete(in, "guild_id")
	in["user"] = map[string]any{"id": kevin.ID, "username": "kevin"}
	resp := h.interact(in)
	if d := resp["data"].(map[string]any); d["flags"] != float64(64) || !strings.Contains(d["content"].(string), "/ask list") {
		t.Fatalf("help in a DM = %v", resp)
	}
	// Neither: nobody to attribute an answer to.
	in = h.command(kevin, "help", nil)
	delete(in, "member")
	resp = h.interact(in)
	if d := resp["data"].(map[string]any); !strings.Contains(d["content"].(string), "cannot tell who you are") {
		t.Fatalf("no user = %v", resp)
	}
}

func TestForgedButtonsAreRefused(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	h.posted(channelA, 1)
	// A free-text Answer and an Approve aimed at a choice question.
	resp := h.interact(h.click(kevin, customID(actAnswer, "acme", "job-1", "q-1", 3, 0)))
	if d, _ := resp["data"].(map[string]any); resp["type"] != float64(4) || !strings.Contains(d["content"].(string), "not answered with free text") {
		t.Fatalf("forged Answer = %v", resp)
	}
	// An index beyond the choices.
	resp = h.interact(h.click(kevin, customID(actChoice, "acme", "job-1", "q-1", 3, 7)))
	if d, _ := resp["data"].(map[string]any); !strings.Contains(d["content"].(string), "not one of this question's") {
		t.Fatalf("forged index = %v", resp)
	}
	// Deny on a question opens no form: refused at once, in the
	// validator's words, and nothing is proposed.
	resp = h.interact(h.click(kevin, customID(actDeny, "acme", "job-1", "q-1", 3, 0)))
	if d, _ := resp["data"].(map[string]any); resp["type"] != float64(4) || d["flags"] != float64(64) ||
		!strings.Contains(d["content"].(string), "not an approval") {
		t.Fatalf("forged Deny = %v", resp)
	}
	// A deny form forged for a question is refused the same way.
	resp = h.interact(h.submit(kevin, customID(actModalDeny, "acme", "job-1", "q-1", 3, 0), map[string]string{"reason": "no"}))
	if d, _ := resp["data"].(map[string]any); resp["type"] != float64(4) || d["flags"] != float64(64) ||
		!strings.Contains(d["content"].(string), "not an approval") {
		t.Fatalf("forged deny form = %v", resp)
	}
	// Approve on a question is proposed; the runtime refuses it as the wrong kind.
	h.interact(h.click(kevin, customID(actApprove, "acme", "job-1", "q-1", 3, 0)))
	if at := h.waitAttempts(1)[0]; at.Action != bridge.ActionApprove {
		t.Fatalf("attempt = %+v", at)
	}
}

func TestUndecodableEventDoesNotStopTheBot(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	if err := bridge.PublishRaw(context.Background(), h.nats.JS, bridge.EventSubject("acme", "job-1"), "garbage-1", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	h.publishEvent(bridge.Event{Type: bridge.EventAsked, Tenant: "acme", JobID: "job-1", QuestionID: "q-x"}) // no question
	h.publishEvent(asked(colorQuestion()))
	h.posted(channelA, 1)
	if !strings.Contains(h.logs.String(), "undecodable event") {
		t.Fatalf("the bad event was not logged")
	}
}

// TestInteractionRetriedAfterAReplicaDiedBeforePublishing cuts a click off
// just before its attempt is published (the replica's death: no answer,
// nothing published). Discord's retry of the same interaction is handled,
// not told "already handled": its attempt is recorded, once; a replay
// after that is refused as before.
func TestInteractionRetriedAfterAReplicaDiedBeforePublishing(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	in := h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))
	body, _ := json.Marshal(in)

	die := func() { panic(http.ErrAbortHandler) }
	h.bot.proposing.Store(&die)
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, h.web.URL+"/discord/interactions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Signature-Ed25519", hex.EncodeToString(ed25519.Sign(h.priv, append([]byte(stamp), body...))))
	req.Header.Set("X-Signature-Timestamp", stamp)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the click cut off before its publication was answered %d", resp.StatusCode)
	}
	h.bot.proposing.Store(nil)

	if again := h.interact(in); again["type"] != float64(6) {
		t.Fatalf("Discord's retry got %v, want a deferred update (6)", again)
	}
	if got := h.waitAttempts(1); got[0].By != "discord:"+kevin.ID || string(got[0].Answer) != `"blue"` {
		t.Fatalf("attempt = %+v", got[0])
	}
	if n := testenv.StreamCount(t, h.nats, bridge.StreamAnswers, bridge.PrefixAnswer+".>"); n != 1 {
		t.Fatalf("%d attempts on the stream, want 1", n)
	}
	replay := h.interact(in)
	if data, _ := replay["data"].(map[string]any); replay["type"] != float64(4) || !strings.Contains(fmt.Sprint(data["content"]), "already handled") {
		t.Fatalf("a replay once handled got %v, want an ephemeral 'already handled'", replay)
	}
}

// TestInteractionRetriedAfterItsAttemptWasRefusedIsRecorded has JetStream
// refuse a click's attempt (the answers stream takes no message that
// large): the person is told it was not recorded, and Discord's retry of
// the same interaction is handled and recorded, not told "already
// handled".
func TestInteractionRetriedAfterItsAttemptWasRefusedIsRecorded(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.publishEvent(asked(colorQuestion()))
	msg := h.posted(channelA, 1)
	in := h.click(kevin, findComponent(t, msg, "blue")["custom_id"].(string))

	ctx := context.Background()
	stream, err := h.nats.JS.Stream(ctx, bridge.StreamAnswers)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	small := cfg
	small.MaxMsgSize = 16
	if _, err := h.nats.JS.UpdateStream(ctx, small); err != nil {
		t.Fatal(err)
	}
	refused := h.interact(in)
	if data, _ := refused["data"].(map[string]any); refused["type"] != float64(4) || !strings.Contains(fmt.Sprint(data["content"]), "could not record") {
		t.Fatalf("a click whose attempt JetStream refused got %v, want an ephemeral 'could not record'", refused)
	}
	if n := testenv.StreamCount(t, h.nats, bridge.StreamAnswers, bridge.PrefixAnswer+".>"); n != 0 {
		t.Fatalf("%d attempts on the stream after the refusal, want 0", n)
	}
	if _, err := h.nats.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	if again := h.interact(in); again["type"] != float64(6) {
		t.Fatalf("Discord's retry got %v, want a deferred update (6)", again)
	}
	if n := testenv.StreamCount(t, h.nats, bridge.StreamAnswers, bridge.PrefixAnswer+".>"); n != 1 {
		t.Fatalf("%d attempts on the stream, want 1", n)
	}
}
