package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AnswerError is why an attempt does not fit its question. Reason is
// RefusedWrongKind or RefusedInvalid; Fields holds per-field problems.
type AnswerError struct {
	Reason string
	Text   string
	Fields map[string]string
}

func (e *AnswerError) Error() string { return e.Text }

// Approval answers as the agent reads them.
const (
	Approved = "approved"
	Denied   = "denied"
)

// CheckedAnswer is an attempt that fits its question.
type CheckedAnswer struct {
	// Action is answer, decline, approve or deny (never empty).
	Action string
	// Value is the canonical JSON of the answer (nil for a decline).
	Value json.RawMessage
	// Display is the answer as a person reads it ("blue", "on: 2026-10-20, copies: 2").
	Display string
}

// CheckAnswer checks an attempt's kind and value against its question: the
// one validator that the runtime, the modals and the console all use.
func CheckAnswer(q *Question, action string, answer json.RawMessage, comment string) (*CheckedAnswer, *AnswerError) {
	wrongKind := func(format string, args ...any) *AnswerError {
		return &AnswerError{Reason: RefusedWrongKind, Text: fmt.Sprintf(format, args...)}
	}
	if utf8.RuneCountInString(comment) > MaxCommentText {
		return nil, &AnswerError{Reason: RefusedInvalid, Text: fmt.Sprintf("comment: must be at most %d characters", MaxCommentText)}
	}
	if len(answer) > MaxAnswerBytes {
		return nil, &AnswerError{Reason: RefusedInvalid, Text: fmt.Sprintf("answer: must be at most %d bytes", MaxAnswerBytes)}
	}
	present := hasValue(answer) && !isEmptyString(answer)
	if action == "" {
		action = ActionAnswer
	}
	switch action {
	case ActionDecline:
		if present {
			return nil, wrongKind("A decline can't carry an answer: send the answer, or decline with a reason.")
		}
		return &CheckedAnswer{Action: ActionDecline}, nil
	case ActionApprove, ActionDeny:
		if !q.IsApproval() {
			return nil, wrongKind("This is a question, not an approval: answer it instead of approving or denying.")
		}
		return approval(action), nil
	case ActionAnswer:
	default:
		return nil, wrongKind("action: must be answer, decline, approve or deny, not %q", action)
	}
	if q.IsApproval() {
		// docs/contract.md: an approval takes approve/deny only; an answer sent to
		// it is refused. Front-ends map typed words with ApprovalAction.
		return nil, wrongKind("This is an approval: approve or deny it, or decline to answer.")
	}
	if !present && (len(q.Fields) > 0 || len(q.Choices) > 0) {
		// Empty counts as missing, as for a field: not as a wrong choice.
		return nil, &AnswerError{Reason: RefusedInvalid, Text: "answer: is required"}
	}
	if !hasValue(answer) {
		return nil, &AnswerError{Reason: RefusedInvalid, Text: "answer: is required"}
	}
	switch {
	case len(q.Fields) > 0:
		return checkFields(q.Fields, answer)
	case len(q.Choices) > 0:
		s, ok := stringValue(answer)
		if ok {
			if c, found := matchOption(q.Choices, s); found {
				return textAnswer(c), nil
			}
		}
		return nil, &AnswerError{Reason: RefusedInvalid, Text: "answer: must be one of: " + strings.Join(q.Choices, ", ")}
	default:
		s, ok := stringValue(answer)
		if !ok {
			return nil, &AnswerError{Reason: RefusedInvalid, Text: "answer: must be text"}
		}
		if strings.TrimSpace(s) == "" {
			return nil, &AnswerError{Reason: RefusedInvalid, Text: "answer: is required"}
		}
		return textAnswer(s), nil
	}
}

// ApprovalAction reads what a person typed to an approval ("approve",
// "deny too risky") as the approve or deny action and its reason, for the
// CLI and slash commands; ok is false for anything else. Any white space
// ends the word ("deny" and a reason on the next line).
func ApprovalAction(text string) (action, comment string, ok bool) {
	word, rest := strings.TrimSpace(text), ""
	if i := strings.IndexFunc(word, unicode.IsSpace); i >= 0 {
		word, rest = word[:i], word[i:]
	}
	switch strings.ToLower(word) {
	case "approve", Approved, "yes":
		return ActionApprove, strings.TrimSpace(rest), true
	case "deny", Denied, "no":
		return ActionDeny, strings.TrimSpace(rest), true
	}
	return "", "", false
}

func approval(action string) *CheckedAnswer {
	v := Approved
	if action == ActionDeny {
		v = Denied
	}
	raw, _ := json.Marshal(v)
	return &CheckedAnswer{Action: action, Value: raw, Display: v}
}

func textAnswer(s string) *CheckedAnswer {
	raw, _ := json.Marshal(s)
	return &CheckedAnswer{Action: ActionAnswer, Value: raw, Display: s}
}

func hasValue(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// stringValue reads a JSON string, or a bare number or bool as its text.
func stringValue(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
}

// matchOption finds s among options: exactly, else ignoring case and
// surrounding space, returning the option as written by the asker.
func matchOption(options []string, s string) (string, bool) {
	if slices.Contains(options, s) {
		return s, true
	}
	t := strings.TrimSpace(s)
	for _, o := range options {
		if strings.EqualFold(strings.TrimSpace(o), t) {
			return o, true
		}
	}
	return "", false
}

func checkFields(fields []Field, answer json.RawMessage) (*CheckedAnswer, *AnswerError) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(answer, &obj); err != nil {
		// A CLI or slash command may send the object as a string.
		var s string
		if json.Unmarshal(answer, &s) != nil || json.Unmarshal([]byte(s), &obj) != nil || obj == nil {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.Name
			}
			return nil, &AnswerError{Reason: RefusedInvalid, Text: "answer: must be an object with the fields " + strings.Join(names, ", ")}
		}
	}
	ve := &ValidationError{}
	known := map[string]bool{}
	var out bytes.Buffer
	var display []string
	out.WriteByte('{')
	for _, f := range fields {
		known[f.Name] = true
		raw, ok := obj[f.Name]
		if !ok || !hasValue(raw) || isEmptyString(raw) || isEmptyList(raw) {
			if f.Required {
				ve.addField(f.Name, "is required")
			}
			continue
		}
		v, shown, problem := checkField(&f, raw)
		if problem != "" {
			ve.addField(f.Name, "%s", problem)
			continue
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		name, _ := json.Marshal(f.Name)
		out.Write(name)
		out.WriteByte(':')
		out.Write(v)
		display = append(display, f.Name+": "+shown)
	}
	out.WriteByte('}')
	var extra []string
	for name := range obj {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		ve.addField(name, "is not a field of this question")
	}
	if len(ve.Problems) > 0 {
		return nil, &AnswerError{Reason: RefusedInvalid, Text: ve.Error(), Fields: ve.Fields}
	}
	return &CheckedAnswer{Action: ActionAnswer, Value: out.Bytes(), Display: strings.Join(display, ", ")}, nil
}

func isEmptyString(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) == ""
}

// isEmptyList reports an empty JSON list: a multi-select with nothing picked
// is no answer for that field, like an empty text box.
func isEmptyList(raw json.RawMessage) bool {
	var l []json.RawMessage
	return json.Unmarshal(raw, &l) == nil && len(l) == 0
}

// checkField returns the canonical JSON of one field's value and its text,
// or a problem in words.
func checkField(f *Field, raw json.RawMessage) (json.RawMessage, string, string) {
	switch f.Kind {
	case FieldText:
		return checkText(f, raw)
	case FieldNumber:
		return checkNumber(f, raw)
	case FieldChoice:
		s, ok := stringValue(raw)
		if ok {
			if o, found := matchOption(f.Options, s); found {
				v, _ := json.Marshal(o)
				return v, o, ""
			}
		}
		return nil, "", "must be one of: " + strings.Join(f.Options, ", ")
	case FieldMultiChoice:
		return checkMultiChoice(f, raw)
	case FieldDate:
		return checkDate(f, raw)
	case FieldToggle:
		return checkToggle(raw)
	}
	return nil, "", "has an unknown kind"
}

func checkText(f *Field, raw json.RawMessage) (json.RawMessage, string, string) {
	s, ok := stringValue(raw)
	if !ok {
		return nil, "", "must be text"
	}
	if f.MaxLength > 0 && utf8.RuneCountInString(s) > f.MaxLength {
		return nil, "", fmt.Sprintf("must be at most %d characters", f.MaxLength)
	}
	if !f.Multiline && strings.ContainsAny(s, "\r\n") {
		return nil, "", "must be a single line"
	}
	v, _ := json.Marshal(s)
	return v, s, ""
}

func checkNumber(f *Field, raw json.RawMessage) (json.RawMessage, string, string) {
	n, ok := numberValue(raw)
	if !ok {
		return nil, "", "must be a number"
	}
	if !keptExactly(raw, n) {
		// 12345678901234567890 would reach the agent as ...67000.
		return nil, "", "has more digits than can be kept exactly: at most 15 significant digits"
	}
	if f.Integer && n != math.Trunc(n) {
		return nil, "", "must be a whole number"
	}
	if f.Min != nil && n < *f.Min {
		return nil, "", "must be at least " + formatNumber(*f.Min)
	}
	if f.Max != nil && n > *f.Max {
		return nil, "", "must be at most " + formatNumber(*f.Max)
	}
	if n == 0 {
		n = 0 // not -0
	}
	s := formatNumber(n)
	return json.RawMessage(s), s, ""
}

// checkMultiChoice takes a list of options, or one option, or options
// typed as "red, green" in a CLI or slash command.
func checkMultiChoice(f *Field, raw json.RawMessage) (json.RawMessage, string, string) {
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		s, ok := stringValue(raw)
		if !ok {
			return nil, "", "must be a list of: " + strings.Join(f.Options, ", ")
		}
		list = []string{s}
		if _, found := matchOption(f.Options, s); !found && strings.Contains(s, ",") {
			list = strings.Split(s, ",")
		}
	}
	var picked []string
	for _, s := range list {
		o, found := matchOption(f.Options, s)
		if !found {
			return nil, "", fmt.Sprintf("%q is not one of: %s", s, strings.Join(f.Options, ", "))
		}
		if !slices.Contains(picked, o) {
			picked = append(picked, o)
		}
	}
	if len(picked) == 0 && f.Required {
		return nil, "", "is required"
	}
	if picked == nil {
		picked = []string{}
	}
	v, _ := json.Marshal(picked)
	return v, strings.Join(picked, ", "), ""
}

func checkToggle(raw json.RawMessage) (json.RawMessage, string, string) {
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		s, _ := stringValue(raw)
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "on", "1":
			b = true
		case "false", "no", "off", "0":
			b = false
		default:
			return nil, "", "must be yes or no"
		}
	}
	if b {
		return json.RawMessage("true"), "yes", ""
	}
	return json.RawMessage("false"), "no", ""
}

func numberValue(raw json.RawMessage) (float64, bool) {
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	s = strings.TrimSpace(s)
	if !decimalNumber.MatchString(s) {
		// ParseFloat also reads 0x1p2, 1_0, Inf: not what a person means.
		return 0, false
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, false
	}
	return n, true
}

// decimalNumber is a number written as text the way JSON and people write
// one: digits with an optional sign, decimal point and exponent.
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// keptExactly reports whether n, as the agent will read it, is the number
// written in raw: a float64 holds about 15 significant digits, and a longer
// number would change without a word.
func keptExactly(raw json.RawMessage, n float64) bool {
	lit := strings.TrimSpace(string(raw))
	var s string
	if json.Unmarshal(raw, &s) == nil {
		lit = strings.TrimSpace(s)
	}
	given, _, err := big.ParseFloat(lit, 10, 512, big.ToNearestEven)
	if err != nil {
		return true // not a plain decimal literal: numberValue read it
	}
	kept, _, err := big.ParseFloat(strconv.FormatFloat(n, 'g', -1, 64), 10, 512, big.ToNearestEven)
	return err == nil && given.Cmp(kept) == 0
}

// maxUnixSeconds is 9999-12-31T23:59:59Z: RFC 3339 has four-digit years.
const maxUnixSeconds = 253402300799

// Date and date-time layouts accepted from forms and people.
var dateTimeLayouts = []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04"}

func checkDate(f *Field, raw json.RawMessage) (json.RawMessage, string, string) {
	s, ok := stringValue(raw)
	if !ok {
		return nil, "", "must be a date"
	}
	s = strings.TrimSpace(s)
	if f.DateTime && s != "" && strings.Trim(s, "0123456789") == "" {
		// Unix seconds: Slack's datetimepicker sends them.
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil || secs > maxUnixSeconds {
			return nil, "", "must be a date and time before the year 10000"
		}
		t := time.Unix(secs, 0).UTC().Format(time.RFC3339)
		v, _ := json.Marshal(t)
		return v, t, ""
	}
	if !f.DateTime {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, "", "must be a date as YYYY-MM-DD"
		}
		out := d.Format(time.DateOnly)
		v, _ := json.Marshal(out)
		return v, out, ""
	}
	for _, layout := range dateTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			// RFC3339Nano keeps the fraction of a second typed (as .75),
			// and writes none where there was none.
			out := t.UTC().Format(time.RFC3339Nano)
			if layout == time.RFC3339 {
				out = t.Format(time.RFC3339Nano)
			}
			v, _ := json.Marshal(out)
			return v, out, ""
		}
	}
	return nil, "", "must be a date and time as YYYY-MM-DDTHH:MM"
}

// curlyQuotes are the double quotes keyboards put in for " (phones and
// macOS by default, "smart punctuation").
var curlyQuotes = strings.NewReplacer("\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u201f", `"`, "\u2033", `"`, "\uff02", `"`)

// TypedObject reads the JSON object a person typed for a question's
// fields in a slash command. An object typed with curly quotes
// ({“copies”: 2}), which is not JSON, is read with straight ones; quotes
// inside a valid object are left alone.
func TypedObject(arg string) (json.RawMessage, bool) {
	if !strings.HasPrefix(arg, "{") {
		return nil, false
	}
	if json.Valid([]byte(arg)) {
		return json.RawMessage(arg), true
	}
	if fixed := curlyQuotes.Replace(arg); fixed != arg && json.Valid([]byte(fixed)) {
		return json.RawMessage(fixed), true
	}
	return nil, false
}
