package blockkit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
)

// Long content within Slack's limits: many answerers, long options and a
// long proposal keep what a person needs to tell them apart.

// TestManyAnswerersKeepTheDeadline: a question may name any number of
// answerers; the card's context line lists some, says how many more, and
// always keeps the deadline, with no mention cut in half.
func TestManyAnswerersKeepTheDeadline(t *testing.T) {
	for _, n := range []int{1, 10, 11, 150, 400} {
		q := baseQ()
		q.Answerers = nil
		for i := range n {
			q.Answerers = append(q.Answerers, fmt.Sprintf("slack:U%020d", i))
		}
		if err := bridge.ValidateQuestion(q); err != nil {
			t.Fatal(err)
		}
		blocks, txt := QuestionMessage(slackCard(q))
		slackAccepts(t, fmt.Sprint(n, " answerers"), message{Text: txt, Blocks: blocks}, "message")
		raw, _ := json.Marshal(blocks)
		var bs []map[string]any
		_ = json.Unmarshal(raw, &bs)
		line := ""
		for _, b := range bs {
			if b["type"] == "context" {
				s := b["elements"].([]any)[0].(map[string]any)["text"].(string)
				if strings.Contains(s, "Who may answer: ") {
					line = s
				}
			}
		}
		if !strings.Contains(line, "Deadline: "+SlackDate(deadline)) {
			t.Errorf("%d answerers: the deadline is lost: ...%s", n, line[max(0, len(line)-120):])
		}
		if strings.Count(line, "<") != strings.Count(line, ">") {
			t.Errorf("%d answerers: a mention is cut: ...%s", n, line[max(0, len(line)-120):])
		}
		if !strings.Contains(line, fmt.Sprintf("<@U%020d>", 0)) {
			t.Errorf("%d answerers: the first is not named: %s", n, line)
		}
		if more := n - 10; more > 0 && !strings.Contains(line, fmt.Sprintf(", %d more, ", more)) {
			t.Errorf("%d answerers: does not say how many more: ...%s", n, line[max(0, len(line)-120):])
		}
	}
}

// optionTexts returns the option texts of every select, radio and checkbox
// group in v, one list per element.
func optionTexts(t *testing.T, v any) [][]string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var root any
	_ = json.Unmarshal(raw, &root)
	var out [][]string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if opts, ok := x["options"].([]any); ok {
				var texts []string
				for _, o := range opts {
					texts = append(texts, o.(map[string]any)["text"].(map[string]any)["text"].(string))
				}
				out = append(out, texts)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(root)
	return out
}

// TestLongOptionsStayTellable: choices longer than Slack's 75-character
// option text that differ only after it must not show as the same option
// (a person could not tell which one they pick), in the card's menu and in
// a form's radio buttons, menus and checkboxes.
func TestLongOptionsStayTellable(t *testing.T) {
	stem := "Deploy release 2.3.1 to the production cluster in eu-west-1, then notify the on-call team and "
	tails := []string{"keep 10% canary for an hour", "keep 50% canary for an hour", "roll out to all nodes at once",
		"wait for the change board", "skip the canary entirely", "roll back if errors exceed 1%"}
	var choices []string
	for _, tl := range tails {
		choices = append(choices, stem+tl)
	}
	choices = append(choices, "Do nothing", stem[:80]+" (short)", stem[:80]+" (long)")
	card := baseQ()
	card.Choices = choices
	form := baseQ()
	form.Fields = []bridge.Field{
		{Name: "radio", Kind: bridge.FieldChoice, Options: choices[:3]},
		{Name: "menu", Kind: bridge.FieldChoice, Options: choices},
		{Name: "boxes", Kind: bridge.FieldMultiChoice, Options: choices[:4]},
		{Name: "multi", Kind: bridge.FieldMultiChoice, Options: append(choices, "a", "b")},
	}
	for _, q := range []*bridge.Question{card, form} {
		if err := bridge.ValidateQuestion(q); err != nil {
			t.Fatal(err)
		}
	}
	blocks, _ := QuestionMessage(Card{Question: card})
	m := AnswerModal(Card{Question: form}, ModalMeta{Ref: RefOf(form)})
	lists := append(optionTexts(t, blocks), optionTexts(t, m)...)
	// The card's choices and overflow menu (Ask someone else, Remind me
	// later), and the form's four fields.
	if len(lists) != 6 {
		t.Fatalf("%d option lists, want 6", len(lists))
	}
	for _, texts := range lists {
		seen := map[string]bool{}
		for _, s := range texts {
			if n := utf8.RuneCountInString(s); n > MaxOptionText {
				t.Errorf("option text of %d characters: %q", n, s)
			}
			if seen[s] {
				t.Errorf("two options show as %q", s)
			}
			seen[s] = true
		}
	}
	// Short options are shown whole, long ones from their start.
	if got := optionTexts(t, blocks)[0]; got[6] != "Do nothing" || !strings.HasPrefix(got[0], "Deploy release") {
		t.Errorf("options shown as %q", got)
	}
}

// blockText counts the characters of every text in blocks (text objects,
// option texts, placeholders, labels), as msg_blocks_too_long counts them.
func blockText(blocks []any) int {
	n := 0
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if s, ok := x["text"].(string); ok {
				n += utf8.RuneCountInString(s)
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(blocks)
	return n
}

// TestLongApprovalKeepsItsProposal: when a card's texts together are too
// long for one Slack message, the question and the proposal keep their
// room and the context gives way; every cut says so.
func TestLongApprovalKeepsItsProposal(t *testing.T) {
	q := edgeQuestions(t)["long approval"]
	blocks, _ := QuestionMessage(slackCard(q))
	heads := map[string]int{"*Approval requested by ": 2900, "*Proposal*": 2900, "*Context:*": 400}
	texts := map[string]string{}
	for _, b := range blocks {
		if s, ok := b.(*slack.SectionBlock); ok && s.Text != nil {
			for head := range heads {
				if strings.HasPrefix(s.Text.Text, head) {
					texts[head] = s.Text.Text
				}
			}
		}
	}
	for head, min := range heads {
		s, ok := texts[head]
		switch {
		case !ok:
			t.Errorf("no %s section", head)
		case utf8.RuneCountInString(s) < min:
			t.Errorf("%s cut to %d characters, want at least %d", head, utf8.RuneCountInString(s), min)
		case !strings.HasSuffix(s, messageCut(true)):
			t.Errorf("%s cut without saying so: ...%s", head, s[len(s)-80:])
		}
	}
}
