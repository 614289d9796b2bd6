package blockkit

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func ptr(f float64) *float64 { return &f }

var (
	asked    = time.Date(2026, 10, 20, 10, 0, 0, 0, time.UTC)
	deadline = asked.Add(4 * time.Hour)
	console  = "https://ask.example.com/console/q/acme/job-1/q-1?as=slack%3AU0ANA&exp=1&sig=abc"
)

func baseQ() *bridge.Question {
	return &bridge.Question{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", TaskVersion: 3,
		Question: "Which colour should the report use?", WhyItMatters: "The board prints it.",
		Answerers: []string{"slack:U0ANA"}, Owner: "slack:U0OWNER", Agent: "acme-support", Timeout: "4h"}
}

func allFields() []bridge.Field {
	many := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	return []bridge.Field{
		{Name: "title", Kind: bridge.FieldText, Label: "Title", Description: "Shown on the cover", Required: true, MaxLength: 80},
		{Name: "notes", Kind: bridge.FieldText, Multiline: true},
		{Name: "copies", Kind: bridge.FieldNumber, Integer: true, Min: ptr(1), Max: ptr(9), Required: true},
		{Name: "budget", Kind: bridge.FieldNumber, Min: ptr(0.5)},
		{Name: "colour", Kind: bridge.FieldChoice, Options: []string{"red", "blue"}, Required: true},
		{Name: "font", Kind: bridge.FieldChoice, Options: many},
		{Name: "parts", Kind: bridge.FieldMultiChoice, Options: []string{"summary", "tables", "appendix"}},
		{Name: "tags", Kind: bridge.FieldMultiChoice, Options: many},
		{Name: "on", Kind: bridge.FieldDate, Label: "Send on", Required: true},
		{Name: "at", Kind: bridge.FieldDate, DateTime: true},
		{Name: "urgent", Kind: bridge.FieldToggle, Label: "Urgent?"},
	}
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	checkLimits(t, name, got)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./blockkit -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}

// checkLimits walks rendered JSON and enforces Block Kit's limits, so a
// golden file can never bless a payload Slack would refuse.
func checkLimits(t *testing.T, name string, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any, string)
	walk = func(x any, parent string) {
		switch x := x.(type) {
		case map[string]any:
			typ, _ := x["type"].(string)
			if typ == "section" {
				if txt, ok := x["text"].(map[string]any); ok {
					if n := utf8.RuneCountInString(txt["text"].(string)); n > MaxSectionText {
						t.Errorf("%s: section text of %d characters", name, n)
					}
				}
			}
			if typ == "button" {
				if n := utf8.RuneCountInString(x["text"].(map[string]any)["text"].(string)); n > MaxButtonText {
					t.Errorf("%s: button text of %d characters", name, n)
				}
			}
			if id, ok := x["action_id"].(string); ok && len(id) > 255 {
				t.Errorf("%s: action_id of %d", name, len(id))
			}
			if id, ok := x["block_id"].(string); ok && len(id) > 255 {
				t.Errorf("%s: block_id of %d", name, len(id))
			}
			if opts, ok := x["options"].([]any); ok && len(opts) > MaxSelectOpts {
				t.Errorf("%s: %d options", name, len(opts))
			}
			if parent == "options" {
				if n := utf8.RuneCountInString(x["text"].(map[string]any)["text"].(string)); n > MaxOptionText {
					t.Errorf("%s: option text of %d", name, n)
				}
				if n := len(x["value"].(string)); n > MaxOptionValue {
					t.Errorf("%s: option value of %d", name, n)
				}
			}
			if blocks, ok := x["blocks"].([]any); ok && len(blocks) > MaxMessageBlks {
				t.Errorf("%s: %d blocks", name, len(blocks))
			}
			for k, c := range x {
				walk(c, k)
			}
		case []any:
			for _, c := range x {
				walk(c, parent)
			}
		}
	}
	walk(v, "")
}

type message struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

func slackCard(q *bridge.Question) Card {
	return Card{Question: q, AskedAt: asked, Deadline: deadline, Console: true, ConsoleURL: console}
}

func TestCardsGolden(t *testing.T) {
	choices := baseQ()
	choices.Choices = []string{"red", "blue", "green"}
	many := baseQ()
	many.Choices = nil
	for i := range 120 {
		many.Choices = append(many.Choices, fmt.Sprintf("option %d with a rather long description that goes on and on beyond seventy-five characters", i))
	}
	free := baseQ()
	free.Answerers, free.Owner = nil, ""
	fields := baseQ()
	fields.Fields = allFields()
	approval := baseQ()
	approval.Kind = bridge.KindApproval
	approval.Question = "May I send the refund?"
	approval.Proposal = &bridge.Proposal{ID: "refund-42", Summary: []string{"Refund 120 EUR to <customer> & co", "Close the ticket"}}
	long := baseQ()
	long.Question = strings.Repeat("This question is long & <detailed>. ", 300)
	long.WhyItMatters = strings.Repeat("why ", 900)

	for name, q := range map[string]*bridge.Question{
		"card_choices_buttons": choices, "card_choices_select": many, "card_free_text": free,
		"card_fields": fields, "card_approval": approval, "card_long": long,
	} {
		t.Run(name, func(t *testing.T) {
			blocks, text := QuestionMessage(slackCard(q))
			golden(t, name, message{Text: text, Blocks: blocks})
		})
	}
	t.Run("card_settled", func(t *testing.T) {
		ev := &bridge.Event{Type: bridge.EventAnswered, By: "slack:U0KEV", ByName: "kevin", AnswerText: "blue"}
		c := slackCard(choices)
		c.Ended = time.Date(2026, 10, 20, 14, 3, 0, 0, time.UTC)
		blocks, text := SettledMessage(c, OutcomeLine(ev, choices))
		golden(t, "card_settled", message{Text: text, Blocks: blocks})
	})
	t.Run("thread_parent", func(t *testing.T) {
		blocks, text := ThreadParent(choices, true)
		golden(t, "thread_parent", message{Text: text, Blocks: blocks})
	})
	meta := ModalMeta{Ref: RefOf(fields), Channel: "C0123", MessageTS: "1700000000.000100"}
	t.Run("modal_fields", func(t *testing.T) { golden(t, "modal_fields", AnswerModal(slackCard(fields), meta)) })
	t.Run("modal_free_text", func(t *testing.T) { golden(t, "modal_free_text", AnswerModal(slackCard(free), meta)) })
	t.Run("modal_long", func(t *testing.T) { golden(t, "modal_long", AnswerModal(slackCard(long), meta)) })
	t.Run("modal_decline", func(t *testing.T) { golden(t, "modal_decline", DeclineModal(slackCard(choices), meta)) })
	t.Run("modal_deny", func(t *testing.T) { golden(t, "modal_deny", DenyModal(slackCard(approval), meta)) })
}

func TestLongTextPointsToTheConsole(t *testing.T) {
	q := baseQ()
	q.Question = strings.Repeat("x", bridge.MaxQuestionText)
	// In the channel: a note naming the button, never a link.
	blocks, _ := QuestionMessage(slackCard(q))
	sec := blocks[0].(*slack.SectionBlock)
	if !strings.HasSuffix(sec.Text.Text, "… _(cut short: *Open in console* shows the whole text)_") {
		t.Fatalf("long question lost its pointer to the console: ...%s", sec.Text.Text[len(sec.Text.Text)-200:])
	}
	if n := utf8.RuneCountInString(sec.Text.Text); n > MaxSectionText {
		t.Fatalf("section of %d characters", n)
	}
	if consoleAction(t, blocks) != ActionConsole {
		t.Fatalf("long question without the console button")
	}
	// In a modal, which only its opener sees: their own link.
	m := AnswerModal(slackCard(q), ModalMeta{Ref: RefOf(q)})
	if s := m.Blocks.BlockSet[0].(*slack.SectionBlock).Text.Text; !strings.HasSuffix(s, "… <"+console+"|Read the whole text in the console>") {
		t.Fatalf("modal lost the opener's console link: ...%s", s[len(s)-200:])
	}
	// Without the console: cut, and said so.
	c := slackCard(q)
	c.Console, c.ConsoleURL = false, ""
	blocks, _ = QuestionMessage(c)
	if s := blocks[0].(*slack.SectionBlock).Text.Text; !strings.HasSuffix(s, "… _(cut short)_") {
		t.Fatalf("long question without console: ...%s", s[len(s)-200:])
	}
	// Short text: no note, not cut.
	blocks, _ = QuestionMessage(slackCard(baseQ()))
	if s := blocks[0].(*slack.SectionBlock).Text.Text; s != "*Question from acme-support*\nWhich colour should the report use?" {
		t.Fatalf("short question rendered as %q", s)
	}
}

// consoleAction returns the action id of the one "Open in console" button
// in blocks ("" for none), after checking its block id is the card's Ref.
func consoleAction(t *testing.T, blocks []slack.Block) string {
	t.Helper()
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var bs []map[string]any
	if err := json.Unmarshal(raw, &bs); err != nil {
		t.Fatal(err)
	}
	found := ""
	for _, b := range bs {
		var els []any
		if e, ok := b["elements"].([]any); ok && b["type"] == "actions" {
			els = e
		}
		if a, ok := b["accessory"]; ok {
			els = append(els, a)
		}
		for _, e := range els {
			el := e.(map[string]any)
			if el["type"] != "button" || el["text"].(map[string]any)["text"] != ConsoleButtonText {
				continue
			}
			if found != "" {
				t.Fatalf("two console buttons")
			}
			if _, isURL := el["url"]; isURL {
				t.Fatalf("console button is a URL button: %v", el)
			}
			found, _ = el["action_id"].(string)
			if _, err := ParseClick(b["block_id"].(string), found, fmt.Sprint(el["value"]), ""); err != nil {
				t.Fatalf("console button does not parse: %v", err)
			}
		}
	}
	return found
}

func TestChannelMessagesOfferTheConsoleByButtonOnly(t *testing.T) {
	choices := baseQ()
	choices.Choices = []string{"red", "blue"}
	long := baseQ()
	long.Question = strings.Repeat("long & <detailed> ", 400)
	approval := baseQ()
	approval.Kind = bridge.KindApproval
	approval.Proposal = &bridge.Proposal{Summary: []string{"x"}}
	ev := &bridge.Event{Type: bridge.EventAnswered, ByName: "kevin", AnswerText: "blue"}
	type rendered struct {
		name   string
		blocks []slack.Block
		text   string
		action string
	}
	var all []rendered
	for _, q := range []*bridge.Question{choices, long, approval, baseQ()} {
		b, txt := QuestionMessage(slackCard(q))
		all = append(all, rendered{"card " + q.Question[:10], b, txt, ActionConsole})
		b, txt = SettledMessage(slackCard(q), OutcomeLine(ev, q))
		all = append(all, rendered{"settled " + q.Question[:10], b, txt, ActionConsole})
	}
	b, txt := ThreadParent(choices, true)
	all = append(all, rendered{"thread parent", b, txt, ActionConsoleJob})
	for _, r := range all {
		if got := consoleAction(t, r.blocks); got != r.action {
			t.Errorf("%s: console button %q, want %q", r.name, got, r.action)
		}
		raw, _ := json.Marshal(message{Text: r.text, Blocks: r.blocks})
		for _, bad := range []string{"/console/", "slack:channel", "sig=", "https://"} {
			if strings.Contains(string(raw), bad) {
				t.Errorf("%s carries %q: %s", r.name, bad, raw)
			}
		}
	}
	// No console configured: no button anywhere.
	for _, q := range []*bridge.Question{choices, long, approval} {
		c := slackCard(q)
		c.Console, c.ConsoleURL = false, ""
		b, _ := QuestionMessage(c)
		s, _ := SettledMessage(c, OutcomeLine(ev, q))
		p, _ := ThreadParent(q, false)
		for _, blocks := range [][]slack.Block{b, s, p} {
			if got := consoleAction(t, blocks); got != "" {
				t.Errorf("console button %q without a console", got)
			}
		}
	}
}

func TestEscapesUserText(t *testing.T) {
	q := baseQ()
	q.Question = "Ping <!channel> & <@U999>?"
	blocks, _ := QuestionMessage(slackCard(q))
	if s := blocks[0].(*slack.SectionBlock).Text.Text; s != "*Question from acme-support*\nPing &lt;!channel&gt; &amp; &lt;@U999&gt;?" {
		t.Fatalf("user text not escaped: %q", s)
	}
}

// TestNotificationTextIsEscaped checks the top-level text of every
// message, which Slack reads as mrkdwn and notifications show, carries
// the agent's words escaped: no mention or link markup of theirs.
func TestNotificationTextIsEscaped(t *testing.T) {
	q := baseQ()
	q.Question = "Ping <!channel> & open <https://evil.example|the report>?"
	q.Agent = "bot <!here>"
	_, pending := QuestionMessage(slackCard(q))
	_, settled := SettledMessage(slackCard(q), "Answered by <@U0KEV>")
	_, parent := ThreadParent(q, false)
	for name, c := range map[string]struct{ got, want string }{
		"pending": {pending, "Question from bot &lt;!here&gt;: Ping &lt;!channel&gt; &amp; open &lt;https://evil.example|the report&gt;?"},
		"settled": {settled, "Question from bot &lt;!here&gt;: Ping &lt;!channel&gt; &amp; open &lt;https://evil.example|the report&gt;? — Answered by <@U0KEV>"},
		"parent":  {parent, "bot &lt;!here&gt; needs input on job " + q.JobID},
	} {
		if c.got != c.want {
			t.Errorf("%s text = %q\nwant %q", name, c.got, c.want)
		}
	}
}

func TestOutcomeLines(t *testing.T) {
	q := baseQ()
	ap := baseQ()
	ap.Kind = bridge.KindApproval
	cases := []struct {
		ev   bridge.Event
		q    *bridge.Question
		want string
	}{
		{bridge.Event{Type: bridge.EventAnswered, By: "slack:U0KEV", ByName: "kevin", AnswerText: "blue"}, q, "Answered by @kevin: blue"},
		{bridge.Event{Type: bridge.EventDeclined, By: "slack:U0KEV", ByName: "kevin", Comment: "ask Ana"}, q, "Declined by @kevin: ask Ana"},
		{bridge.Event{Type: bridge.EventDeclined, By: "cli:bob"}, q, "Declined by `cli:bob`"},
		{bridge.Event{Type: bridge.EventDeclined, By: "slack:U0KEV", Comment: "<!here> & co"}, q, "Declined by <@U0KEV>: &lt;!here&gt; &amp; co"},
		{bridge.Event{Type: bridge.EventTimedOut, Text: "Nobody answered within 4:00:00."}, q, "Nobody answered within 4:00:00"},
		{bridge.Event{Type: bridge.EventTimedOut, Text: "Nobody answered within 4:00:00."}, nil, "Nobody answered within 4:00:00"},
		{bridge.Event{Type: bridge.EventSuperseded}, q, "Superseded by a newer version of this task"},
		{bridge.Event{Type: bridge.EventCancelled}, q, "Cancelled"},
		{bridge.Event{Type: bridge.EventDeliveryFailed, State: bridge.StateFailed}, q, "Failed: askbridge could not deliver this question"},
		{bridge.Event{Type: bridge.EventAnswered, ByName: "kevin", Answer: json.RawMessage(`"approved"`)}, ap, "Approved (not yet executed) by @kevin"},
		{bridge.Event{Type: bridge.EventAnswered, ByName: "kevin", Answer: json.RawMessage(`"denied"`), Comment: "too much"}, ap, "Denied by @kevin: too much"},
	}
	for _, c := range cases {
		if got := OutcomeLine(&c.ev, c.q); got != c.want {
			t.Errorf("%s: %q, want %q", c.ev.Type, got, c.want)
		}
	}
}

// TestTextSizeMatchesTheJSON checks the direct count of a card's text
// (knownTextSize) gives what Slack's JSON holds, for every kind of card.
func TestTextSizeMatchesTheJSON(t *testing.T) {
	choices := baseQ()
	choices.Choices = []string{"red", "blue", "green"}
	many := baseQ()
	for i := range 30 {
		many.Choices = append(many.Choices, fmt.Sprintf("choice %d — ünïcode", i))
	}
	fields := baseQ()
	fields.Fields = allFields()
	approval := baseQ()
	approval.Kind = bridge.KindApproval
	approval.Proposal = &bridge.Proposal{ID: "p-1", Summary: []string{"Refund €40", "Close the ticket"}}
	free := baseQ()
	known := 0
	for _, q := range []*bridge.Question{choices, many, fields, approval, free} {
		for _, console := range []bool{true, false} {
			c := slackCard(q)
			c.Console = console
			asked, _ := QuestionMessage(c)
			settled, _ := SettledMessage(c, "Answered by <@U0KEV>: blue")
			for _, b := range append(asked, settled...) {
				n, ok := knownTextSize(b)
				if !ok {
					raw, _ := json.Marshal(b)
					t.Errorf("%s block not counted directly (sized through its JSON, slowly): %s", b.BlockType(), raw)
					continue
				}
				known++
				if want := jsonTextSize(b); n != want {
					raw, _ := json.Marshal(b)
					t.Errorf("%s block: counted %d characters, its JSON holds %d: %s", b.BlockType(), n, want, raw)
				}
			}
		}
	}
	if known < 40 {
		t.Fatalf("only %d blocks counted directly; the cards' blocks should all be", known)
	}
}

// TestFitEscaped checks a text is cut only when it does not fit whole, and
// then leaves room for what follows a cut.
func TestFitEscaped(t *testing.T) {
	for _, c := range []struct {
		name        string
		in          string
		limit, room int
		want        string
		cut         bool
	}{
		{"fits", "abcdef", 6, 3, "abcdef", false},
		{"fits with entities", "a&b", 7, 3, "a&amp;b", false},
		{"one over", "abcdefg", 6, 3, "ab…", true},
		{"never inside an entity", "ab<cdefgh", 8, 3, "ab…", true},
		{"trailing space dropped", "a bcdefgh", 5, 2, "a…", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, cut := fitEscaped(c.in, c.limit, c.room)
			if got != c.want || cut != c.cut {
				t.Fatalf("fitEscaped(%q, %d, %d) = %q, %v; want %q, %v", c.in, c.limit, c.room, got, cut, c.want, c.cut)
			}
		})
	}
}

// BenchmarkQuestionMessage is the card of a question with three choices,
// as the asking path draws one for each question.
func BenchmarkQuestionMessage(b *testing.B) {
	q := baseQ()
	q.Choices = []string{"red", "blue", "green"}
	c := slackCard(q)
	b.ReportAllocs()
	for b.Loop() {
		QuestionMessage(c)
	}
}
