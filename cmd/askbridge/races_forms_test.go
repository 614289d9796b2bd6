package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bots/console"
	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
)

// slackSubmit is a view_submission of the modal opened by views.open call
// opened, with a reason typed in.
func (r *race) slackSubmit(user string, opened raceCall, viewID, hash, reason string) map[string]any {
	view, _ := opened.JSON["view"].(map[string]any)
	v := map[string]any{}
	for k, x := range view {
		v[k] = x
	}
	v["id"], v["hash"], v["team_id"] = viewID, hash, "T1"
	v["state"] = map[string]any{"values": map[string]any{"reason": map[string]any{"v": map[string]any{"type": "plain_text_input", "value": reason}}}}
	return map[string]any{"type": "view_submission", "user": map[string]any{"id": user, "username": strings.ToLower(user), "name": strings.ToLower(user), "team_id": "T1"},
		"team": map[string]any{"id": "T1"}, "view": v}
}

// consoleForm opens the console page of q for identity and returns the
// page's URL and the decline form's hidden inputs.
func (r *race) consoleForm(identity string, q *bridge.Question) (string, url.Values) {
	r.t.Helper()
	signer := console.Signer{PublicURL: "http://askbridge.test", Secret: []byte(raceConsoleKey)}
	link := strings.TrimPrefix(signer.QuestionURL(identity, q.Tenant, q.JobID, q.QuestionID, time.Hour), "http://askbridge.test")
	resp, err := http.Get(r.base + link)
	if err != nil {
		r.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("console page: %d %s", resp.StatusCode, body)
	}
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)"`).FindAllStringSubmatch(string(body), -1) {
		if form.Get(m[1]) == "" {
			form.Set(m[1], m[2])
		}
	}
	if form.Get("nonce") == "" || form.Get("csrf") == "" {
		r.t.Fatalf("no form on the console page: %s", body)
	}
	return link, form
}

// TestRaceFormsAfterAButtonAnswer: forms opened while the question waited
// (Slack's decline modal, Discord's decline modal, the console's page),
// submitted after someone answered with a button. None of them answers;
// each person is told who answered, where they are.
func TestRaceFormsAfterAButtonAnswer(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rf", "q-1")
	ts, did := r.ask(q)
	block := "ask.acme.job-rf.q-1.1"

	// Three people open their forms.
	opened := r.openSlackModal("U0ANA", "trig-open", ts, block, "decline")
	modal := r.openDiscordModal(map[string]any{"custom_id": "ab:d:acme:job-rf:q-1:1", "component_type": 2})
	modalID, _ := modal["data"].(map[string]any)["custom_id"].(string)
	link, form := r.consoleForm("console:alice", q)

	// Kevin answers with a button on Discord.
	r.signedDiscord(r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 1), "component_type": 2}))
	res := r.resumedOnce(q, 1)
	if res.Outcome != bridge.OutcomeAnswered || res.By != "discord:"+raceKevinD {
		t.Fatalf("resume %+v", res)
	}
	answeredBy := "This question was already answered by discord:" + raceKevinD + " (kevin) at "

	// Ana submits her Slack decline form.
	status, body := r.signedSlack(r.slackSubmit("U0ANA", opened, "V1", "h1", "ask someone else"), nil)
	var inline struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	_ = json.Unmarshal([]byte(body), &inline)
	if status != http.StatusOK {
		t.Fatalf("slack submission: %d %s", status, body)
	}
	switch {
	case inline.ResponseAction == "errors":
		if got := inline.Errors["reason"]; !strings.HasPrefix(got, answeredBy) {
			t.Errorf("the Slack form says %q, want who answered (%q...)", got, answeredBy)
		}
	default:
		// Closed: the refusal comes as an ephemeral message in the thread.
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			for _, c := range r.Calls("chat.postEphemeral") {
				if c.Form.Get("user") == "U0ANA" && strings.HasPrefix(c.Form.Get("text"), answeredBy) {
					return nil
				}
			}
			return fmt.Errorf("ana was not told who answered: %v", r.Calls("chat.postEphemeral"))
		})
	}

	// Kevin submits a Discord decline form opened from another card.
	sub := r.discordInteraction(5, map[string]any{"custom_id": modalID, "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "reason", "value": "not mine"}}}}})
	_, dresp := r.signedDiscord(sub)
	if dresp["type"] == float64(4) {
		content, _ := dresp["data"].(map[string]any)["content"].(string)
		if !strings.HasPrefix(content, answeredBy) {
			t.Errorf("the Discord form says %q, want who answered", content)
		}
	} else {
		testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
			if len(r.followups(sub["id"].(string))) == 0 {
				return fmt.Errorf("discord form submitter told nothing (response %v)", dresp)
			}
			return nil
		})
		loserText(t, r.followups(sub["id"].(string)), answeredBy)
	}

	// Alice posts the console form.
	form.Set("action", "decline")
	form.Set("comment", "ask Ana")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(r.base+link, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console post: %d", resp.StatusCode)
	}
	page, err := http.Get(r.base + resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(pb), `<h2 id="outcome-h">Answered</h2>`) || strings.Contains(string(pb), `name="nonce"`) {
		t.Errorf("the console page after the post does not show the answer, or still offers a form: %s", pb)
	}
	// And it says the decline was not taken, and why, as a refusal.
	if !regexp.MustCompile(`id="refusal"><p>` + regexp.QuoteMeta(answeredBy) + `<time datetime="\S+Z">[^<]+</time>\.</p>`).Match(pb) {
		t.Errorf("the console page does not say the decline was refused because kevin answered: %s", pb)
	}

	// One outcome: no other resume, every card settled as answered.
	if got := r.resume.of(q.JobID, q.QuestionID, 1); len(got) != 1 {
		t.Errorf("%d resumes", len(got))
	}
	r.slackSettled(ts, "Answered by @kevin: blue")
	r.discordSettled(did, "Answered by")
	for _, ev := range r.events.of(q.JobID, q.QuestionID) {
		if ev.Type == bridge.EventDeclined {
			t.Errorf("a decline was taken after the answer: %+v", ev)
		}
	}
}

// TestRaceSameInteractionTwice: Slack retries a click (the same payload,
// X-Slack-Retry-Num) while the first delivery is still being handled, and
// Discord's interaction of one id arrives twice at once. Each is one
// attempt: one resume, nobody told that they were beaten by themselves.
func TestRaceSameInteractionTwice(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rs", "q-1")
	ts, did := r.ask(q)
	click := r.slackClick("U0ANA", "trig-retry", ts, "ask.acme.job-rs.q-1.1", "choice.1", "blue")
	var codes [3]int
	all(
		func() { codes[0], _ = r.signedSlack(click, nil) },
		func() {
			codes[1], _ = r.signedSlack(click, map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
		},
		func() {
			codes[2], _ = r.signedSlack(click, map[string]string{"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"})
		},
	)
	if codes != [3]int{200, 200, 200} {
		t.Errorf("slack deliveries answered %v", codes)
	}
	res := r.resumedOnce(q, 1)
	if res.Outcome != bridge.OutcomeAnswered || res.Text != "The answer: blue" || res.By != "slack:U0ANA" {
		t.Fatalf("resume %+v", res)
	}
	r.slackSettled(ts, "Answered by @u0ana: blue")
	r.discordSettled(did, "Answered by")

	q2 := raceQuestion("job-rs", "q-2")
	ts2, did2 := r.ask(q2)
	in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q2, 0), "component_type": 2})
	var resps [2]map[string]any
	all(
		func() { _, resps[0] = r.signedDiscord(in) },
		func() { _, resps[1] = r.signedDiscord(in) },
	)
	// An interaction is marked handled once handled (a retry of one cut
	// off midway must publish its attempt): a copy that arrives meanwhile
	// is handled too, and publishes the same attempt, which JetStream
	// keeps once; one that arrives after is told it was handled.
	deferred := 0
	for _, resp := range resps {
		data, _ := resp["data"].(map[string]any)
		switch {
		case resp["type"] == float64(6):
			deferred++
		case resp["type"] != float64(4) || !strings.Contains(fmt.Sprint(data["content"]), "already handled"):
			t.Errorf("discord response %v, want a deferred update or 'already handled'", resp)
		}
	}
	if deferred == 0 {
		t.Errorf("discord responses %v, want a deferred update", resps)
	}
	res2 := r.resumedOnce(q2, 1)
	if res2.Outcome != bridge.OutcomeAnswered || res2.Text != "The answer: red" || res2.By != "discord:"+raceKevinD {
		t.Fatalf("resume %+v", res2)
	}
	r.slackSettled(ts2, "Answered by @kevin: red")
	r.discordSettled(did2, "Answered by")

	// Nobody was told anything: no refusal, no "already answered" to
	// themselves, on either platform.
	for _, ev := range append(r.events.of("job-rs", "q-1"), r.events.of("job-rs", "q-2")...) {
		if ev.Type == bridge.EventRefused {
			t.Errorf("refused: %+v", ev)
		}
	}
	if got := r.told("trig-retry"); len(got) != 0 {
		t.Errorf("the Slack clicker was told %q", got)
	}
	if got := r.followups(in["id"].(string)); len(got) != 0 {
		t.Errorf("the Discord clicker was told %q", got)
	}
}

// TestRaceCLIAndSlackAtOnce: `askbridge answer` and a Slack click at
// once. The CLI's exit code and text say whether it won; the Slack loser
// is told privately.
func TestRaceCLIAndSlackAtOnce(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	q := raceQuestion("job-rcli", "q-1")
	ts, did := r.ask(q)
	kevin, out, errOut := testCLI(r.s, "cli:kevin")
	var code int
	all(
		func() { code = kevin.answer(context.Background(), []string{"job-rcli", "q-1", "red"}) },
		func() {
			r.signedSlack(r.slackClick("U0ANA", "trig-cli", ts, "ask.acme.job-rcli.q-1.1", "choice.1", "blue"), nil)
		},
	)
	res := r.resumedOnce(q, 1)
	switch res.By {
	case "cli:kevin":
		if code != exitOK || out.String() != "Answered: The answer: red\n" || res.Text != "The answer: red" {
			t.Errorf("cli won: exit %d, %q %q; resume %+v", code, out, errOut, res)
		}
		loserText(t, r.waitTold("trig-cli"), "This question was already answered by cli:kevin at ")
		r.slackSettled(ts, "Answered by")
		r.discordSettled(did, "red")
	case "slack:U0ANA":
		if code != exitError || !regexp.MustCompile(`^askbridge: refused: This question was already answered by slack:U0ANA \(u0ana\) at \S+Z\.\n$`).MatchString(errOut.String()) {
			t.Errorf("cli lost: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if got := r.told("trig-cli"); len(got) != 0 {
			t.Errorf("the Slack winner was told %q", got)
		}
		r.slackSettled(ts, "Answered by @u0ana: blue")
		r.discordSettled(did, "blue")
	default:
		t.Fatalf("resume %+v", res)
	}
	t.Logf("won by %s", res.By)
}

// slackCommand POSTs a signed /ask command of user's.
func (r *race) slackCommand(user, text, trigger string) (int, string) {
	form := url.Values{"command": {"/ask"}, "text": {text}, "user_id": {user}, "user_name": {strings.ToLower(user)},
		"channel_id": {raceSlackChan}, "team_id": {"T1"}, "trigger_id": {trigger},
		"response_url": {r.slack.URL + "/response/" + trigger}}
	body := form.Encode()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(raceSlackSecret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	req, _ := http.NewRequest(http.MethodPost, r.base+"/slack/commands", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Errorf("slack command: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestRacePersonsCancelAndAnswer: an admin's /ask cancel on Slack and a
// click on Discord at once. Whoever lost is told, where they acted.
func TestRacePersonsCancelAndAnswer(t *testing.T) {
	t.Parallel()
	r := startRace(t)
	for i := range 3 {
		job := fmt.Sprintf("job-rpc%d", i)
		q := raceQuestion(job, "q-1")
		ts, did := r.ask(q)
		in := r.discordInteraction(3, map[string]any{"custom_id": discordChoice(q, 1), "component_type": 2})
		trig := "trig-pc" + strconv.Itoa(i)
		var reply string
		all(
			func() { _, reply = r.slackCommand("U0ADM", "cancel "+job+"/q-1", trig) },
			func() { r.signedDiscord(in) },
		)
		res := r.resumedOnce(q, 1)
		switch res.Outcome {
		case bridge.OutcomeCanceled:
			testenv.CheckFor(t, testenv.Patience, 20*time.Millisecond, func() error {
				if len(r.followups(in["id"].(string))) == 0 {
					return fmt.Errorf("discord loser told nothing")
				}
				return nil
			})
			loserText(t, r.followups(in["id"].(string)), "This question was cancelled at ")
			r.slackSettled(ts, "Cancelled")
			r.discordSettled(did, "Cancelled")
		case bridge.OutcomeAnswered:
			if strings.Contains(reply, "no longer waits (answered)") || strings.Contains(reply, "askbridge did not answer in time") {
				// The command saw it answered before sending anything; or,
				// on a loaded machine, its look-up outlasted Slack's 3 s and
				// it said so in its reply, sending nothing.
				break
			}
			loserText(t, r.waitTold(trig), "Nothing was cancelled: this question was already answered by discord:"+raceKevinD+" (kevin) at ")
			r.slackSettled(ts, "Answered by @kevin: blue")
			r.discordSettled(did, "blue")
		default:
			t.Fatalf("resume %+v", res)
		}
		t.Logf("race %d: %s (command reply %s)", i, res.Outcome, reply)
	}
}
