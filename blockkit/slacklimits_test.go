package blockkit

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/askbridge/askbridge/bridge"
)

// Block Kit's documented limits (docs.slack.dev, Block Kit reference),
// counted in characters (code points) as Slack counts them. Slack refuses
// a whole message or view that breaks one (invalid_blocks, invalid_arguments).
// checkLimits in blockkit_test.go checks the golden files; slackAccepts
// checks every element and composition object askbridge renders.
func slackAccepts(t *testing.T, name string, v any, kind string) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	c := limitCheck{t: t, name: name}
	list, _ := root["blocks"].([]any)
	switch kind {
	case "message":
		c.blocks(list, 50)
		// Slack also refuses a message whose blocks hold too much text in
		// all (msg_blocks_too_long). The limit is not in the reference;
		// Slack's SDK maintainers give it as 12,000 characters of text with
		// a buffer for the blocks around it (slackapi/bolt-js#2509).
		if n := blockText(list); n > 12000 {
			c.bad("%d characters of text in all the blocks, at most 12000", n)
		}
		if s, _ := root["text"].(string); chars(s) > 40000 || strings.TrimSpace(s) == "" {
			c.bad("message text of %d characters", chars(s))
		}
	case "modal":
		c.blocks(list, 100)
		c.text("title", root["title"], 24)
		c.optText("submit", root["submit"], 24)
		c.optText("close", root["close"], 24)
		c.idLen("modal", root, "callback_id", 255)
		c.idLen("modal", root, "private_metadata", 3000)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
}

// chars counts characters as Slack does: code points.
var chars = utf8.RuneCountInString

// limitCheck checks one message or view (slackAccepts), failing t with
// each limit it breaks, named by name and where.
type limitCheck struct {
	t    *testing.T
	name string
}

func (c limitCheck) bad(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s: %s", c.name, fmt.Sprintf(format, args...))
}

// text checks a text object: present, 1..max characters, not blank.
func (c limitCheck) text(where string, o any, max int) {
	c.t.Helper()
	m, ok := o.(map[string]any)
	if !ok {
		c.bad("%s: no text object", where)
		return
	}
	s, _ := m["text"].(string)
	switch {
	case strings.TrimSpace(s) == "":
		c.bad("%s: empty text %q", where, s)
	case chars(s) > max:
		c.bad("%s: %d characters, at most %d", where, chars(s), max)
	}
}

// optText checks a text object where there is one.
func (c limitCheck) optText(where string, o any, max int) {
	c.t.Helper()
	if o != nil {
		c.text(where, o, max)
	}
}

// idLen checks the length of m's string key, where there is one.
func (c limitCheck) idLen(where string, m map[string]any, key string, max int) {
	c.t.Helper()
	if s, ok := m[key].(string); ok && chars(s) > max {
		c.bad("%s: %s of %d characters, at most %d", where, key, chars(s), max)
	}
}

// options checks an element's options: 1..max of them, each with its
// text and a value of its own.
func (c limitCheck) options(where string, el map[string]any, max int) {
	c.t.Helper()
	opts, _ := el["options"].([]any)
	if len(opts) == 0 || len(opts) > max {
		c.bad("%s: %d options, 1 to %d allowed", where, len(opts), max)
	}
	values := map[string]bool{}
	for i, o := range opts {
		om := o.(map[string]any)
		c.text(fmt.Sprintf("%s option %d", where, i), om["text"], 75)
		c.optText(fmt.Sprintf("%s option %d description", where, i), om["description"], 75)
		v, _ := om["value"].(string)
		if v == "" || chars(v) > 150 {
			c.bad("%s option %d: value of %d characters, 1 to 150", where, i, chars(v))
		}
		if values[v] {
			c.bad("%s option %d: value %q twice", where, i, v)
		}
		values[v] = true
	}
}

// number reads a number input's bound, a number in a string; false when
// there is none, or it is not a number.
func (c limitCheck) number(where string, s any) (float64, bool) {
	c.t.Helper()
	if s == nil {
		return 0, false
	}
	str, ok := s.(string)
	if !ok {
		c.bad("%s: not a string: %v", where, s)
		return 0, false
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		c.bad("%s: %q is not a number", where, str)
		return 0, false
	}
	return f, true
}

// element checks an interactive element by its type.
func (c limitCheck) element(where string, el map[string]any) {
	c.t.Helper()
	c.idLen(where, el, "action_id", 255)
	switch typ, _ := el["type"].(string); typ {
	case "button":
		c.text(where+" button", el["text"], 75)
		c.idLen(where, el, "value", 2000)
		c.idLen(where, el, "url", 3000)
	case "static_select", "multi_static_select":
		c.optText(where+" placeholder", el["placeholder"], 150)
		c.options(where, el, 100)
	case "radio_buttons", "checkboxes":
		c.options(where, el, 10)
	case "overflow":
		if opts, _ := el["options"].([]any); len(opts) < 2 {
			c.bad("%s: %d options, an overflow menu takes 2 to 5", where, len(opts))
		}
		c.options(where, el, 5)
	case "users_select":
		c.optText(where+" placeholder", el["placeholder"], 150)
	case "plain_text_input":
		c.optText(where+" placeholder", el["placeholder"], 150)
		for _, k := range []string{"max_length", "min_length"} {
			if n, ok := el[k].(float64); ok && (n < 0 || n > 3000) {
				c.bad("%s: %s %v, at most 3000", where, k, n)
			}
		}
	case "number_input":
		c.numberInput(where, el)
	case "datepicker", "datetimepicker", "timepicker":
	default:
		c.bad("%s: element type %q not checked", where, typ)
	}
}

// numberInput checks a number input's placeholder and bounds.
func (c limitCheck) numberInput(where string, el map[string]any) {
	c.t.Helper()
	c.optText(where+" placeholder", el["placeholder"], 150)
	lo, hasLo := c.number(where+" min_value", el["min_value"])
	hi, hasHi := c.number(where+" max_value", el["max_value"])
	if hasLo && hasHi && lo > hi {
		c.bad("%s: min_value %v above max_value %v", where, lo, hi)
	}
	if dec, _ := el["is_decimal_allowed"].(bool); !dec {
		for _, b := range []struct {
			v  float64
			ok bool
		}{{lo, hasLo}, {hi, hasHi}} {
			if b.ok && b.v != math.Trunc(b.v) {
				c.bad("%s: a fractional bound %v on a whole-number input", where, b.v)
			}
		}
	}
}

// blocks checks a list of at most max blocks, each by its type, and that
// no block id stands twice.
func (c limitCheck) blocks(list []any, max int) {
	c.t.Helper()
	if len(list) > max {
		c.bad("%d blocks, at most %d", len(list), max)
	}
	ids := map[string]bool{}
	for i, b := range list {
		bm := b.(map[string]any)
		where := fmt.Sprintf("block %d (%v)", i, bm["type"])
		if id, ok := bm["block_id"].(string); ok {
			c.idLen(where, bm, "block_id", 255)
			if ids[id] {
				c.bad("%s: block_id %q twice", where, id)
			}
			ids[id] = true
		}
		c.block(where, bm)
	}
}

// block checks one block by its type.
func (c limitCheck) block(where string, bm map[string]any) {
	c.t.Helper()
	switch bm["type"] {
	case "section":
		c.text(where, bm["text"], 3000)
		if f, ok := bm["fields"].([]any); ok {
			if len(f) > 10 {
				c.bad("%s: %d fields", where, len(f))
			}
			for j, x := range f {
				c.text(fmt.Sprintf("%s field %d", where, j), x, 2000)
			}
		}
		if a, ok := bm["accessory"].(map[string]any); ok {
			c.element(where+" accessory", a)
		}
	case "context":
		els, _ := bm["elements"].([]any)
		if len(els) == 0 || len(els) > 10 {
			c.bad("%s: %d elements", where, len(els))
		}
		for j, e := range els {
			c.text(fmt.Sprintf("%s element %d", where, j), e, 3000)
		}
	case "header":
		c.text(where, bm["text"], 150)
	case "actions":
		els, _ := bm["elements"].([]any)
		if len(els) == 0 || len(els) > 25 {
			c.bad("%s: %d elements", where, len(els))
		}
		actions := map[string]bool{}
		for j, e := range els {
			em := e.(map[string]any)
			c.element(fmt.Sprintf("%s element %d", where, j), em)
			if id, _ := em["action_id"].(string); actions[id] {
				c.bad("%s: action_id %q twice", where, id)
			} else {
				actions[id] = true
			}
		}
	case "input":
		c.text(where+" label", bm["label"], 2000)
		c.optText(where+" hint", bm["hint"], 2000)
		c.element(where, bm["element"].(map[string]any))
	case "divider":
	default:
		c.bad("%s: block type not checked", where)
	}
}

// edgeQuestions are questions at the edges the contract allows: each is
// accepted by bridge.ValidateQuestion.
func edgeQuestions(t *testing.T) map[string]*bridge.Question {
	t.Helper()
	long := func(unit string, n int) string {
		return strings.Repeat(unit, n/utf8.RuneCountInString(unit))
	}
	base := func() *bridge.Question {
		q := baseQ()
		q.Tenant, q.JobID, q.QuestionID = strings.Repeat("t", 64), strings.Repeat("j", 64), strings.Repeat("q", 64)
		q.TaskVersion = math.MaxInt64
		return q
	}
	out := map[string]*bridge.Question{}

	q := base()
	q.Question = long("<&>", bridge.MaxQuestionText)
	q.Context = long("🙂é", 6000)
	q.WhyItMatters = long("& ", 8000)
	q.Agent = long("<agent>", 5000)
	for i := range 100 {
		q.Answerers = append(q.Answerers, fmt.Sprintf("slack:U%031d", i))
	}
	q.Owner = "slack:" + strings.Repeat("U", 128)
	out["long everything"] = q

	q = base()
	q.Question = long("🙂", 3000)
	for i := range bridge.MaxChoices {
		q.Choices = append(q.Choices, fmt.Sprintf("%03d ", i)+long("é", 196))
	}
	out["100 long choices"] = q

	q = base()
	q.Choices = []string{"a", "b", "c", "d", "e"}
	out["five buttons"] = q

	q = base()
	q.Kind = bridge.KindApproval
	q.Question = long("approve & <deny> ", 9000)
	q.Context = long("c", 9000)
	q.WhyItMatters = long("w", 9000)
	q.Proposal = &bridge.Proposal{ID: long("<id>", bridge.MaxProposalID), Action: long("a", bridge.MaxToolName)}
	for range 500 {
		q.Proposal.Summary = append(q.Proposal.Summary, long("line & more ", 60))
	}
	out["long approval"] = q

	q = base()
	q.Question = long("x", bridge.MaxQuestionText)
	for i := range bridge.MaxFields {
		f := bridge.Field{Name: fmt.Sprintf("f%02d_", i) + strings.Repeat("n", 59), Required: i%2 == 0}
		switch i % 6 {
		case 0:
			f.Kind, f.Label, f.MaxLength, f.Multiline = bridge.FieldText, long("🙂", 200), 1<<20, true
		case 1:
			f.Kind, f.Min, f.Max, f.Integer = bridge.FieldNumber, ptr(0.5), ptr(0.7), true
		case 2:
			f.Kind, f.Options = bridge.FieldChoice, []string{long("a", 200), long("b", 200), "c"}
		case 3:
			f.Kind = bridge.FieldMultiChoice
			for j := range 11 {
				f.Options = append(f.Options, fmt.Sprintf("option %d", j))
			}
		case 4:
			f.Kind, f.DateTime = bridge.FieldDate, i%2 == 0
		case 5:
			f.Kind, f.Label = bridge.FieldToggle, long("t", 200)
		}
		f.Description = long("d", 300)
		q.Fields = append(q.Fields, f)
	}
	out["20 fields"] = q
	withWhy := *q
	withWhy.Question, withWhy.Context, withWhy.WhyItMatters = long("q", 5000), long("c", 5000), long("w", 5000)
	for i := range withWhy.Fields {
		withWhy.Fields[i].Description = ""
	}
	out["20 fields, long context"] = &withWhy

	q = base()
	q.Fields = []bridge.Field{
		{Name: "blank_label", Kind: bridge.FieldText, Label: "   ", Description: " \n "},
		{Name: "blank_toggle", Kind: bridge.FieldToggle, Label: "\t"},
		{Name: "huge", Kind: bridge.FieldNumber, Min: ptr(-1e300), Max: ptr(1e300)},
		{Name: "tiny", Kind: bridge.FieldNumber, Min: ptr(-5e-324), Max: ptr(5e-324)},
		{Name: "negzero", Kind: bridge.FieldNumber, Integer: true, Min: ptr(-0.5), Max: ptr(3)},
	}
	out["blank labels and odd numbers"] = q

	for name, q := range out {
		if err := bridge.ValidateQuestion(q); err != nil {
			t.Fatalf("%s: not a question the contract allows: %v", name, err)
		}
	}
	return out
}

// TestEdgeQuestionsRenderAsSlackAccepts renders every message and modal of
// questions at the contract's edges and checks each against Slack's limits.
func TestEdgeQuestionsRenderAsSlackAccepts(t *testing.T) {
	for name, q := range edgeQuestions(t) {
		for _, console := range []bool{true, false} {
			c := slackCard(q)
			if !console {
				c.Console, c.ConsoleURL = false, ""
			}
			n := fmt.Sprintf("%s (console %v)", name, console)
			blocks, txt := QuestionMessage(c)
			slackAccepts(t, n+" card", message{Text: txt, Blocks: blocks}, "message")
			for _, ev := range []*bridge.Event{
				{Type: bridge.EventAnswered, ByName: strings.Repeat("<k>", 30), AnswerText: strings.Repeat("🙂&", 20000)},
				{Type: bridge.EventDeclined, By: "slack:U1", Comment: strings.Repeat("<", bridge.MaxCommentText)},
			} {
				blocks, txt = SettledMessage(c, OutcomeLine(ev, q))
				slackAccepts(t, n+" settled "+ev.Type, message{Text: txt, Blocks: blocks}, "message")
			}
			blocks, txt = ThreadParent(q, console)
			slackAccepts(t, n+" thread parent", message{Text: txt, Blocks: blocks}, "message")
			meta := ModalMeta{Ref: RefOf(q), Channel: strings.Repeat("C", 32), MessageTS: "170000000000.00010000"}
			slackAccepts(t, n+" answer modal", AnswerModal(c, meta), "modal")
			slackAccepts(t, n+" decline modal", DeclineModal(c, meta), "modal")
			slackAccepts(t, n+" deny modal", DenyModal(c, meta), "modal")
		}
	}
}
