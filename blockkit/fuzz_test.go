package blockkit

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/bridge"
)

// checkRefusal: a refusal is an ErrBadRef with readable words, whatever
// the garbage it quotes.
func checkRefusal(t *testing.T, in string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !strings.HasPrefix(err.Error(), ErrBadRef.Error()) {
		t.Fatalf("%q: error %q is not an ErrBadRef", in, err)
	}
	if utf8.ValidString(in) && !utf8.ValidString(err.Error()) {
		t.Fatalf("%q: the error %q is not valid UTF-8 although the input is", in, err)
	}
}

// FuzzParseRef: parsing never panics; a parsed reference is canonical (it
// prints back to exactly its input) with valid tokens and version; and a
// reference built from parts parses back to itself exactly when its parts
// are valid.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{
		"acme.job-1.q-1.3", "acme.job-1.q_1.42", "a.b.c.0", "acme.job-0a9dc2d1.q-75eaf712.9223372036854775807",
		"", "acme.job.q", "acme.job.q.3.4", "acme.job.q.-1", "acme.job.q.03", "acme.jo b.q.3",
		"acme..q.3", "acme.job.q.x", "acme.job.q.+3", "acme.job.q.-0", "acme.job.q.9223372036854775808",
		strings.Repeat("a", 65) + ".j.q.1", "ÉTÉ.j.q.1",
	} {
		f.Add(s, "acme", "job-1", "q-1", int64(3))
	}
	f.Fuzz(func(t *testing.T, s, tenant, job, question string, version int64) {
		r, err := ParseRef(s)
		checkRefusal(t, s, err)
		if err == nil {
			if r.String() != s {
				t.Fatalf("%q parsed as %+v, which prints as %q", s, r, r.String())
			}
			if !bridge.ValidToken(r.Tenant) || !bridge.ValidToken(r.JobID) || !bridge.ValidToken(r.QuestionID) || r.Version < 0 {
				t.Fatalf("%q parsed as invalid %+v", s, r)
			}
		}
		built := Ref{Tenant: tenant, JobID: job, QuestionID: question, Version: version}
		valid := bridge.ValidToken(tenant) && bridge.ValidToken(job) && bridge.ValidToken(question) && version >= 0
		got, err := ParseRef(built.String())
		if valid && (err != nil || got != built) {
			t.Fatalf("%+v encoded as %q decodes to %+v, %v", built, built.String(), got, err)
		}
		if !valid && err == nil {
			t.Fatalf("invalid %+v encoded as %q is accepted as %+v", built, built.String(), got)
		}
	})
}

// FuzzParseClick: a block action parses without panicking; an accepted
// one names its question through the block id exactly, has one of the
// known actions, an index in range, and a choice button carries its value.
func FuzzParseClick(f *testing.F) {
	bid := ActionsBlockID(Ref{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Version: 3})
	for _, c := range [][4]string{
		{bid, "choice.1", "blue", ""}, {bid, "select", "", "7"}, {bid, "answer", "answer", ""},
		{bid, "decline", "", ""}, {bid, "approve", "", ""}, {bid, "deny", "", ""},
		{bid, "choice.01", "blue", ""}, {bid, "choice.1", "", ""}, {bid, "choice.-1", "x", ""},
		{bid, "select", "", "abc"}, {bid, "select", "", "99999999999999999999"}, {bid, "delete", "", ""},
		{"other.acme.job-1.q-1.3", "answer", "", ""}, {"ask.acme.job-1.q-1", "answer", "", ""},
		{"ask.acme.job-1.q-1.3", "choice.24", "Dark Red", ""}, {"ask.", "choice.", "", ""},
		{bid, "console", "console", ""}, {bid, "console.job", "console.job", ""}, {bid, "console.", "", ""},
	} {
		f.Add(c[0], c[1], c[2], c[3])
	}
	f.Fuzz(func(t *testing.T, blockID, actionID, value, selected string) {
		c, err := ParseClick(blockID, actionID, value, selected)
		checkRefusal(t, blockID+actionID+value+selected, err)
		if err != nil {
			if c != (Click{}) {
				t.Fatalf("a refused click carries %+v", c)
			}
			return
		}
		if ActionsBlockID(c.Ref) != blockID {
			t.Fatalf("block %q parsed as %+v", blockID, c.Ref)
		}
		if c.Index < 0 || c.Index >= bridge.MaxChoices {
			t.Fatalf("index %d out of range", c.Index)
		}
		switch c.Action {
		case ActionAnswer, ActionDecline, ActionApprove, ActionDeny, ActionConsole, ActionConsoleJob:
			if c.Action != actionID || c.Index != 0 || c.Choice != "" {
				t.Fatalf("action %q parsed as %+v", actionID, c)
			}
		case Choose:
			if actionID == ActionSelect {
				if c.Choice != "" || selected == "" {
					t.Fatalf("select %q parsed as %+v", selected, c)
				}
			} else if c.Choice != value || value == "" || actionID != actionChoice+strings.TrimPrefix(actionID, actionChoice) {
				t.Fatalf("button %q/%q parsed as %+v", actionID, value, c)
			}
		default:
			t.Fatalf("unknown action %q accepted from %q", c.Action, actionID)
		}
	})
}

// FuzzParseModalMeta: private_metadata parses without panicking; accepted
// metadata is canonical (prints back to its input) and its channel and ts
// pass the adapter's own checks; metadata built from valid parts round-trips.
func FuzzParseModalMeta(f *testing.F) {
	for _, s := range []string{
		"acme.job-1.q-1.3|C0123|1700000000.000100", "acme.job-1.q-1.3||", "acme.job-1.q-1.3|D0ABC|",
		"", "acme.job-1.q-1.3", "acme.job-1.q-1.3|c0123|1.2", "acme.job-1.q-1.3|C1|1.2|x",
		"acme.job-1.q-1.3|C1|abc", "x|C1|1.2", "acme.job-1.q-1.3|C1|.", "acme.job-1.q-1.3|C1|1234567890123.1",
	} {
		f.Add(s, "C0123", "1700000000.000100")
	}
	f.Fuzz(func(t *testing.T, s, channel, ts string) {
		m, err := ParseModalMeta(s)
		checkRefusal(t, s, err)
		if err == nil {
			if m.String() != s {
				t.Fatalf("%q parsed as %+v, which prints as %q", s, m, m.String())
			}
			if !slackID(m.Channel) || !slackTS(m.MessageTS) {
				t.Fatalf("%q accepted a bad channel or ts: %+v", s, m)
			}
		}
		built := ModalMeta{Ref: Ref{Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Version: 3}, Channel: channel, MessageTS: ts}
		got, err := ParseModalMeta(built.String())
		if slackID(channel) && slackTS(ts) && (err != nil || got != built) {
			t.Fatalf("%+v encoded as %q decodes to %+v, %v", built, built.String(), got, err)
		}
		if err == nil && got != built {
			t.Fatalf("%+v encoded as %q decodes to another meta %+v", built, built.String(), got)
		}
	})
}

// FuzzAnswerFromState: a submitted modal's state, as Slack sends it,
// always reads back as JSON the validator can judge: an object of the
// question's own fields (a typed number is never dropped), or a string
// for a free-text question. Whatever it is, checking it never panics.
func FuzzAnswerFromState(f *testing.F) {
	for _, s := range []string{
		`{"values":{"f.title":{"v":{"type":"plain_text_input","value":"Q3 report"}},"f.copies":{"v":{"type":"number_input","value":"2"}},` +
			`"f.colour":{"v":{"type":"static_select","selected_option":{"value":"1"}}},"f.parts":{"v":{"type":"checkboxes","selected_options":[{"value":"0"},{"value":"2"}]}},` +
			`"f.on":{"v":{"type":"datepicker","selected_date":"2026-10-20"}},"f.at":{"v":{"type":"datetimepicker","selected_date_time":1792504980}},` +
			`"f.urgent":{"v":{"type":"checkboxes","selected_options":[{"value":"yes"}]}}}}`,
		`{"values":{"f.copies":{"v":{"type":"number_input","value":"NaN"}},"f.budget":{"v":{"type":"number_input","value":"-Inf"}}}}`,
		`{"values":{"f.copies":{"v":{"type":"number_input","value":"1e999"}},"f.colour":{"v":{"selected_option":{"value":"07"}}}}}`,
		`{"values":{"answer":{"v":{"type":"plain_text_input","value":"blue"}}}}`,
		`{"values":{"reason":{"v":{"value":"  ask Ana  "}}}}`,
		`{"values":null}`, `{}`, `null`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	withFields := baseQ()
	withFields.Fields = allFields()
	free := baseQ()
	for _, q := range []*bridge.Question{withFields, free} {
		if err := bridge.ValidateQuestion(q); err != nil {
			f.Fatalf("fuzz question invalid: %v", err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, fields bool) {
		var st slack.ViewState
		if json.Unmarshal(data, &st) != nil {
			return // slack-go refuses it before it reaches us
		}
		q := free
		if fields {
			q = withFields
		}
		raw := AnswerFromState(q, &st)
		_ = ReasonFromState(&st)
		if !fields {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatalf("free-text answer %q is not a JSON string: %v", raw, err)
			}
		} else {
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
				t.Fatalf("answer %q of state %s is not a JSON object: %v", raw, data, err)
			}
			for name := range obj {
				if !slices.ContainsFunc(q.Fields, func(f bridge.Field) bool { return f.Name == name }) {
					t.Fatalf("answer %s names %q, not a field", raw, name)
				}
			}
			for _, fd := range q.Fields {
				if fd.Kind != bridge.FieldNumber {
					continue
				}
				if v := st.Values[FieldBlockID(fd.Name)][InputAction].Value; strings.TrimSpace(v) != "" && obj[fd.Name] == nil {
					t.Fatalf("number %q typed in %s was dropped: %s", v, fd.Name, raw)
				}
			}
		}
		if got, aerr := bridge.CheckAnswer(q, bridge.ActionAnswer, raw, ""); aerr != nil {
			_ = ModalErrors(q, CallbackAnswer, aerr)
		} else if !json.Valid(got.Value) {
			t.Fatalf("accepted value %q is not JSON", got.Value)
		}
	})
}

func TestNonFiniteNumberIsRefusedByItsField(t *testing.T) {
	q := baseQ()
	q.Fields = []bridge.Field{{Name: "copies", Kind: bridge.FieldNumber}, {Name: "note", Kind: bridge.FieldText}}
	for _, v := range []string{"NaN", "inf", "-Infinity", "+Inf"} {
		raw := AnswerFromState(q, state(map[string]slack.BlockAction{"f.copies": {Value: v}, "f.note": {Value: "keep me"}}))
		_, aerr := bridge.CheckAnswer(q, bridge.ActionAnswer, raw, "")
		if aerr == nil || aerr.Fields["copies"] == "" || !strings.Contains(string(raw), `"note":"keep me"`) {
			t.Errorf("%q read as %s, refused with %+v; want the note kept and copies refused", v, raw, aerr)
		}
	}
}
