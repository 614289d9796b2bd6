package discord

// Discord's documented limits, checked on everything the bot sends: the
// fake Discord stores what it is given, where Discord answers 400 (50035
// Invalid Form Body). Lengths are Unicode code points, as Discord counts
// them; a required text must have more than whitespace.

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/internal/testenv"
	"github.com/askbridge/askbridge/runtime"
)

// edgeText is n characters of mixed scripts, astral emoji and combining
// marks, starting with a distinct prefix.
func edgeText(prefix string, n int) string {
	const mix = "Ünïcödé 日本語 🎉👩‍💻 e\u0301 "
	s := prefix
	for utf8.RuneCountInString(s) < n {
		s += mix
	}
	return string([]rune(s)[:n])
}

// edgeQuestions are questions at the edges docs/contract.md allows: the longest
// ids and texts, 20 fields, 20, 25 and 100 choices, approvals with long
// proposals, every one valid for the runtime.
func edgeQuestions(t *testing.T) []bridge.Question {
	t.Helper()
	base := func(id string) bridge.Question {
		var answerers []string
		for i := range 40 {
			answerers = append(answerers, fmt.Sprintf("discord:%019d", 3000000000000000100+i))
		}
		return bridge.Question{Tenant: strings.Repeat("T", 64), JobID: strings.Repeat("j", 60) + "-job",
			QuestionID: strings.Repeat("q", 58) + id, TaskVersion: math.MaxInt64,
			Question: edgeText("Q ", bridge.MaxQuestionText), Context: edgeText("C ", 4000),
			WhyItMatters: edgeText("W ", 4000), BlockedTools: []string{strings.Repeat("mcp__tool.name:v2/x-", 7)[:bridge.MaxToolName], "send_report"},
			Answerers: append([]string{"discord:" + kevin.ID}, answerers...), Owner: "discord:" + ana.ID,
			Agent: edgeText("agent ", 300)}
	}
	choices := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, edgeText(fmt.Sprintf("%03d ", i), min(bridge.MaxChoiceText, 8000/n)))
		}
		return out
	}
	var qs []bridge.Question
	for _, n := range []int{5, 20, 25, 26, 100} {
		q := base(fmt.Sprintf("-c%d", n))
		q.Choices = choices(n)
		qs = append(qs, q)
	}
	typed := base("-f20")
	for i := range bridge.MaxFields {
		f := bridge.Field{Name: fmt.Sprintf("field_%02d", i), Kind: bridge.FieldText, Label: edgeText(fmt.Sprintf("%02d ", i), 200),
			Required: i%2 == 0}
		if i%4 == 1 {
			f.Kind, f.Options, f.Label = bridge.FieldMultiChoice, []string{edgeText("a ", 150), edgeText("b ", 150)}, edgeText(fmt.Sprintf("%02d ", i), 100)
		}
		typed.Fields = append(typed.Fields, f)
	}
	free := base("-text")
	approval := base("-ok")
	approval.Kind = bridge.KindApproval
	approval.Proposal = &bridge.Proposal{ID: "p-1", Action: "refund"}
	for i := range 40 {
		approval.Proposal.Summary = append(approval.Proposal.Summary, edgeText(fmt.Sprintf("line %d ", i), 200))
	}
	qs = append(qs, typed, free, approval)
	for i := range qs {
		// Within 64 KiB of JSON: the context gives way.
		for len(qs[i].Context) > 100 {
			if raw, _ := json.Marshal(qs[i]); len(raw) <= bridge.MaxQuestionBytes {
				break
			}
			qs[i].Context = string([]rune(qs[i].Context)[:utf8.RuneCountInString(qs[i].Context)*3/4])
		}
		if err := bridge.ValidateQuestion(&qs[i]); err != nil {
			t.Fatalf("edge question %s is not valid: %v", qs[i].QuestionID, err)
		}
	}
	return qs
}

// TestEverythingSentFitsDiscordsLimits shows each edge question, clicks
// every button, opens and submits every form, refuses, reminds and
// settles, and checks every request and response against Discord's
// limits.
func TestEverythingSentFitsDiscordsLimits(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	qs := edgeQuestions(t)
	cards := map[string]map[string]any{}
	for i, q := range qs {
		h.publishEvent(asked(q))
		if i == 0 {
			cards[q.QuestionID] = h.posted(channelA, 1)
		} else {
			cards[q.QuestionID] = h.posted(cards[qs[0].QuestionID]["id"].(string), i)
		}
	}
	var attempts int
	for _, q := range qs {
		card := cards[q.QuestionID]
		for _, c := range components(card) {
			id, _ := c["custom_id"].(string)
			var resp map[string]any
			if c["type"] == float64(3) {
				resp = h.interact(h.selectChoice(kevin, id, "24"))
			} else {
				resp = h.interact(h.click(kevin, id))
			}
			checkResponse(t, fmt.Sprintf("%s: click %q", q.QuestionID, c["label"]), resp)
			if resp["type"] == float64(6) {
				attempts++
			}
			if resp["type"] != float64(9) {
				continue
			}
			d := resp["data"].(map[string]any)
			in := d["components"].([]any)[0].(map[string]any)["components"].([]any)[0].(map[string]any)
			max, _ := number(in["max_length"])
			if max == 0 {
				max = 4000
			}
			answer := edgeText("A ", max)
			sub := h.interact(h.submit(kevin, d["custom_id"].(string), map[string]string{in["custom_id"].(string): answer}))
			checkResponse(t, fmt.Sprintf("%s: submit %q", q.QuestionID, d["title"]), sub)
			if sub["type"] != float64(6) {
				t.Errorf("%s: a form filled to its max_length (%d) was refused: %v", q.QuestionID, max, sub)
			} else {
				attempts++
			}
		}
	}
	ats := h.waitAttempts(attempts)
	// Refusals with the longest texts and many field errors.
	for i, at := range ats {
		if i%3 != 0 {
			continue
		}
		errs := map[string]string{}
		for j := range 20 {
			errs[fmt.Sprintf("field_%02d", j)] = edgeText("must be ", 200)
		}
		h.publishEvent(bridge.Event{Type: bridge.EventRefused, Tenant: at.Tenant, JobID: at.JobID, QuestionID: at.QuestionID,
			TaskVersion: at.TaskVersion, To: at.By, Reason: bridge.RefusedInvalid, Text: edgeText("You can't ", 3000),
			FieldErrors: errs, AttemptID: at.AttemptID, ReplyTo: at.ReplyTo})
	}
	// Reminders, then every kind of outcome.
	kinds := []string{bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded}
	for i, q := range qs {
		ev := asked(q)
		h.publishEvent(bridge.Event{Type: bridge.EventEscalated, Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
			TaskVersion: q.TaskVersion, Step: bridge.TargetAdmins, Targets: []string{"discord:" + ana.ID}, Question: &q,
			AskedAt: ev.AskedAt, Deadline: ev.Deadline})
		h.publishEvent(bridge.Event{Type: kinds[i%len(kinds)], Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID,
			TaskVersion: q.TaskVersion, By: "discord:" + kevin.ID, ByName: edgeText("name ", 32), Via: bridge.PlatformDiscord,
			Answer: json.RawMessage(strconv.Quote(edgeText("", 4000))), AnswerText: edgeText("answer ", 10000),
			Comment: edgeText("why ", bridge.MaxCommentText), Text: edgeText("text ", 3000)})
	}
	for _, q := range qs {
		id := cards[q.QuestionID]["id"].(string)
		testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
			if m := h.fake.message(id); len(components(m)) != 0 || fieldValue(embedOf(t, m), "Outcome") == "" {
				return fmt.Errorf("%s: card not settled; bot log:\n%s", q.QuestionID, h.logs.String())
			}
			return nil
		})
	}
	h.markerEvent()
	h.fake.checkSent(t)
	if n := len(h.fake.requests("POST", "/webhooks/")); n == 0 {
		t.Error("no refusal was told")
	}
	if n := len(h.fake.requests("POST", "/channels/77"+ana.ID+"/messages")); n != len(qs) {
		t.Errorf("%d reminder DMs, want %d", n, len(qs))
	}
}

// TestAskCommandRepliesFitDiscordsLimits asks the edge questions through
// the runtime and checks what /ask replies about them.
func TestAskCommandRepliesFitDiscordsLimits(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	qs := edgeQuestions(t)
	for _, q := range qs {
		ask(t, env, q)
	}
	testenv.CheckFor(t, testenv.Patience, 10*time.Millisecond, func() error {
		if n := len(h.deliveriesNow()); n < len(qs) {
			return fmt.Errorf("%d of %d questions shown", n, len(qs))
		}
		return nil
	})
	for _, p := range []person{kevin, ana, stranger} {
		checkResponse(t, "list as "+p.Name, h.interact(h.command(p, "list", nil)))
		checkResponse(t, "help", h.interact(h.command(p, "help", nil)))
	}
	for _, q := range qs {
		opt := map[string]string{"question": q.QuestionID, "tenant": q.Tenant, "job": q.JobID}
		checkResponse(t, "show "+q.QuestionID, h.interact(h.command(kevin, "show", opt)))
	}
	// One settled, then shown.
	q := qs[0]
	resp := h.interact(h.command(kevin, "decline", map[string]string{"question": q.QuestionID, "tenant": q.Tenant, "job": q.JobID,
		"reason": edgeText("reason ", bridge.MaxCommentText)}))
	checkResponse(t, "decline", resp)
	await(t, env, q)
	checkResponse(t, "show settled", h.interact(h.command(kevin, "show", map[string]string{"question": q.QuestionID, "tenant": q.Tenant, "job": q.JobID})))
	h.markerEvent()
	h.fake.checkSent(t)
}

// shownChoices is what a person reads of each choice on a card: a
// button's label, or a select option's label and description.
func shownChoices(msg map[string]any) []string {
	var out []string
	for _, c := range components(msg) {
		switch c["type"] {
		case float64(2):
			if id, _ := c["custom_id"].(string); strings.Contains(id, ":"+actChoice+":") {
				out = append(out, c["label"].(string))
			}
		case float64(3):
			for _, o := range c["options"].([]any) {
				opt := o.(map[string]any)
				s := opt["label"].(string)
				if d, _ := opt["description"].(string); d != "" {
					s += " " + d
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// TestLongChoicesStayDistinct checks choices longer than a button's 80
// characters, which differ only at their end, are shown whole, so a
// person can tell which one they pick.
func TestLongChoicesStayDistinct(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	const head = "Refund the full amount of order 1234 to the customer through the original payment method, "
	for i, tc := range []struct {
		name    string
		choices []string
	}{
		{"two long", []string{head + "card ending 4242", head + "store credit"}},
		{"long without spaces", []string{strings.Repeat("日", 150) + "A", strings.Repeat("日", 150) + "B", "short"}},
		{"the longest, among 25", func() []string {
			var cs []string
			for j := range 25 {
				cs = append(cs, edgeText(head, 190)+fmt.Sprintf(" %02d", j))
			}
			return cs
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := colorQuestion()
			q.QuestionID, q.Choices = fmt.Sprintf("q-long-%d", i), tc.choices
			if err := bridge.ValidateQuestion(&q); err != nil {
				t.Fatal(err)
			}
			h.publishEvent(asked(q))
			// The job's first card starts its thread; the others go there.
			msg := h.posted(channelA, 1)
			if i > 0 {
				msg = h.posted(msg["id"].(string), i)
			}
			shown := shownChoices(msg)
			if len(shown) != len(tc.choices) {
				t.Fatalf("%d choices shown, want %d: %q", len(shown), len(tc.choices), shown)
			}
			for j, c := range tc.choices {
				if strings.Join(strings.Fields(shown[j]), "") != strings.Join(strings.Fields(c), "") {
					t.Errorf("choice %d shown as %q, want it whole: %q", j, shown[j], c)
				}
			}
			h.fake.checkSent(t)
		})
	}
	// Picking the last of the long choices proposes it, whole.
	q := colorQuestion()
	q.QuestionID, q.Choices = "q-long-0", []string{head + "card ending 4242", head + "store credit"}
	msg := h.posted(channelA, 1)
	sel := components(msg)[0]
	resp := h.interact(h.selectChoice(kevin, sel["custom_id"].(string), "1"))
	if resp["type"] != float64(6) {
		t.Fatalf("select response = %v", resp)
	}
	if at := h.waitAttempts(1)[0]; string(at.Answer) != strconv.Quote(q.Choices[1]) {
		t.Fatalf("answer = %s, want %q", at.Answer, q.Choices[1])
	}
}

// TestShowListsEveryChoiceWhole checks /ask show gives every choice whole,
// as /ask answer needs it typed, when together they are longer than one
// embed field holds.
func TestShowListsEveryChoiceWhole(t *testing.T) {
	t.Parallel()
	env, h := startE2E(t, runtime.Roles{})
	q := colorQuestion()
	q.Choices = nil
	for i := range 12 {
		q.Choices = append(q.Choices, edgeText(fmt.Sprintf("Option %d: ", i), 90))
	}
	ask(t, env, q)
	h.posted(channelA, 1)
	resp := h.interact(h.command(kevin, "show", map[string]string{"question": q.QuestionID}))
	checkResponse(t, "show", resp)
	e := resp["data"].(map[string]any)["embeds"].([]any)[0].(map[string]any)
	var listed []string
	for _, f := range e["fields"].([]any) {
		if fm := f.(map[string]any); strings.HasPrefix(fm["name"].(string), "Choices") {
			listed = append(listed, strings.Split(fm["value"].(string), " | ")...)
		}
	}
	if !slices.Equal(listed, q.Choices) {
		t.Fatalf("/ask show lists the choices as %q, want them all, whole: %q", listed, q.Choices)
	}
}
