package console

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// Names of the console form's own inputs. A field's input is named
// fieldPrefix + the field's name; field names are lower-case letters,
// digits and '_', so they never collide with these.
const (
	inputNonce       = "nonce"
	inputToken       = "csrf"
	inputAction      = "action"
	inputTaskVersion = "task_version"
	inputAnswer      = "answer"
	inputComment     = "comment"
	fieldPrefix      = "f."
)

// formInput is what a person submitted, kept to fill the form again when
// the answer is refused.
type formInput url.Values

func (in formInput) get(name string) string {
	if v := in[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (in formInput) has(name, value string) bool {
	for _, v := range in[name] {
		if v == value {
			return true
		}
	}
	return false
}

// answerFromForm turns a submitted form into the answer JSON an attempt
// carries, as the question's kind needs: an object keyed by field name for
// typed fields, a string for choices and free text, nothing for approvals
// and declines. It does not judge the values: bridge.CheckAnswer does.
func answerFromForm(q *bridge.Question, action string, form url.Values) json.RawMessage {
	if action != bridge.ActionAnswer || q.IsApproval() {
		return nil
	}
	if len(q.Fields) == 0 {
		s := strings.ReplaceAll(form.Get(inputAnswer), "\r\n", "\n")
		if strings.TrimSpace(s) == "" {
			return nil
		}
		raw, _ := json.Marshal(s)
		return raw
	}
	obj := map[string]any{}
	for _, f := range q.Fields {
		name := fieldPrefix + f.Name
		switch f.Kind {
		case bridge.FieldMultiChoice:
			var picked []string
			for _, v := range form[name] {
				if v != "" {
					picked = append(picked, v)
				}
			}
			if len(picked) > 0 {
				obj[f.Name] = picked
			}
		case bridge.FieldToggle:
			// An unticked checkbox sends nothing: that is "no".
			obj[f.Name] = form.Get(name) == "true"
		default:
			v := form.Get(name)
			switch {
			case f.Kind != bridge.FieldText:
				v = strings.TrimSpace(v)
			case f.Multiline:
				// Browsers send textarea line breaks as CRLF.
				v = strings.ReplaceAll(v, "\r\n", "\n")
			}
			// Text is kept as typed, as Slack's form and the CLI keep it; a
			// blank one counts as missing.
			if strings.TrimSpace(v) != "" {
				obj[f.Name] = v
			}
		}
	}
	raw, _ := json.Marshal(obj)
	return raw
}

// problems splits an AnswerError into messages by input: field names for
// typed fields, "answer" and "comment" for the rest, "" for the question
// as a whole.
func problems(ae *bridge.AnswerError) map[string]string {
	out := map[string]string{}
	if len(ae.Fields) > 0 {
		for name, msg := range ae.Fields {
			out[name] = msg
		}
		return out
	}
	for _, key := range []string{inputAnswer, inputComment} {
		if msg, ok := strings.CutPrefix(ae.Text, key+": "); ok {
			out[key] = msg
			return out
		}
	}
	out[""] = ae.Text
	return out
}
