package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a question, from docs/contract.md and the chat platforms.
const (
	MaxFields        = 20
	MaxFieldsJSON    = 16 << 10
	MaxQuestionBytes = 64 << 10
	MaxQuestionText  = 10000
	MaxChoices       = 100
	MaxChoiceText    = 200
	MaxOptions       = 100
	MaxTimeout       = 90 * 24 * time.Hour
	MaxAnswerBytes   = 64 << 10
	MaxCommentText   = 2000
)

var fieldNamePattern = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// ValidationError lists every problem found, each in the asker's words
// ("copies: must be at most 9").
type ValidationError struct {
	Problems []string
	// Fields maps a field name to its problem, for inline form errors.
	Fields map[string]string
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

func (e *ValidationError) add(format string, args ...any) {
	e.Problems = append(e.Problems, fmt.Sprintf(format, args...))
}

func (e *ValidationError) addField(name, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, dup := e.Fields[name]; !dup {
		e.Fields[name] = msg
	}
	e.Problems = append(e.Problems, name+": "+msg)
}

func (e *ValidationError) orNil() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}

// DecodeQuestion parses and validates a question as published by an agent.
// Every error it returns is a *ValidationError whose problems are in the
// asker's words ("timeout: \"banana\" is not a duration such as 30m, 4h or 2d",
// "fields[1].min: must be a number, not text").
//
// The returned question is nil only when nothing could be decoded (the body
// is empty, too large or not JSON). When a value had the wrong JSON type, or
// the question failed validation, it returns what it could decode, so the
// refusal can be addressed to the agent's resume subject.
func DecodeQuestion(data []byte) (*Question, error) {
	if len(data) > maxQuestionInput {
		return nil, problem("question: is %d bytes; at most %d are accepted", len(data), MaxQuestionBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, problem("question: is empty: send a JSON object")
	}
	q, rest, unknown, err := decodeQuestionJSON(data)
	if err != nil {
		if isTypeError(err) {
			// Decode the rest, so the refusal reaches the agent's question
			// and names every problem, not the first alone.
			q = Question{}
			return &q, decodeQuestionPartly(data, &q)
		}
		return nil, problem("question: is not a JSON object: %s", jsonProblem(err))
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return &q, problem("question: has trailing data after the JSON object")
	}
	err = ValidateQuestion(&q)
	if len(unknown) > 0 {
		ve := &ValidationError{Problems: unknown}
		var rest *ValidationError
		if errors.As(err, &rest) {
			ve.Problems = append(ve.Problems, rest.Problems...)
		}
		err = ve
	}
	if err != nil {
		return &q, err
	}
	if p := q.Proposal; p != nil && string(bytes.TrimSpace(p.Arguments)) == "null" {
		p.Arguments = nil // as if absent
	}
	if e := q.Escalation; e != nil && !e.Off && len(e.Steps) == 0 {
		// The default ladder asked for in words (true, "on"): kept as if
		// absent, so the stored question and its events never carry an
		// escalation that names nothing.
		q.Escalation = nil
	}
	return &q, nil
}

// decodeQuestionPartly decodes a question holding values of the wrong
// type into q, leaving those out (a field's element by element), and
// names each of them and every other problem the rest of the question
// has, less those that follow from a value left out ("proposal: is
// required" after "proposal.summary: must be a list of text").
func decodeQuestionPartly(data []byte, q *Question) error {
	ve := &ValidationError{}
	var leftOut []leftOutValue
	report := func(at string, err error) {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			switch field := strings.TrimPrefix(te.Field, "plain."); {
			case at == "":
				te.Field = field
			case field != "":
				te.Field = at + "." + field
			default:
				te.Field = at
			}
		}
		ve.add("%s", jsonProblem(err))
	}
	members, err := decodeMembers(data, q)
	if err != nil {
		return problem("%s", jsonProblem(err))
	}
	for _, m := range members {
		var elems []json.RawMessage
		if m.key != "fields" || json.Unmarshal(m.raw, &elems) != nil {
			report("", m.err)
			leftOut = append(leftOut, leftOutValue{path: m.key})
			continue
		}
		q.Fields = make([]Field, len(elems))
		for i, raw := range elems {
			at := fmt.Sprintf("fields[%d]", i)
			errs, err := decodeMembers(raw, &q.Fields[i])
			if err != nil {
				report(at, err)
				leftOut = append(leftOut, leftOutValue{path: at})
			}
			for _, e := range errs {
				report(at, e.err)
				leftOut = append(leftOut, leftOutValue{path: at + "." + e.key, field: q.Fields[i].Name, key: e.key})
			}
		}
	}
	ve.Problems = append(ve.Problems, unknownKeys(data)...)
	var rest *ValidationError
	if errors.As(ValidateQuestion(q), &rest) {
		for _, p := range rest.Problems {
			if !followsFromAny(p, leftOut) {
				ve.Problems = append(ve.Problems, p)
			}
		}
	}
	return ve.orNil()
}

// leftOutValue is a value decodeQuestionPartly left out: its path, and
// for a field's setting the field's name and the setting's key, by which
// the field's problems name it ("copies: min 3 is greater than max 1").
type leftOutValue struct {
	path, field, key string
}

// followsFromAny reports whether problem is about one of the values left
// out: at its path or inside it, or a problem of its field naming its key.
func followsFromAny(problem string, values []leftOutValue) bool {
	for _, v := range values {
		if rest, ok := strings.CutPrefix(problem, v.path); ok && rest != "" && strings.ContainsRune(":.[ ", rune(rest[0])) {
			return true
		}
		if rest, ok := strings.CutPrefix(problem, v.field+": "); ok && v.field != "" && hasWord(rest, v.key) {
			return true
		}
	}
	return false
}

// hasWord reports whether word stands in text on its own (not inside
// max_length for max). Setting keys are ASCII, as \b reads words.
func hasWord(text, word string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(word) + `\b`).MatchString(text)
}

// maxQuestionInput bounds what DecodeQuestion reads. The limit a question
// must meet is MaxQuestionBytes of compact JSON, checked by ValidateQuestion
// whatever the encoding: the same question escaped differently ("\u003c"
// for "<", as encoding/json writes it) or spaced out stays acceptable.
const maxQuestionInput = 8 * MaxQuestionBytes

// compactSize is the length of q as compact JSON without HTML escaping.
func compactSize(q *Question) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(q) != nil {
		return 0
	}
	return b.Len() - 1 // Encode adds a newline
}

func problem(format string, args ...any) *ValidationError {
	ve := &ValidationError{}
	ve.add(format, args...)
	return ve
}

// JSONProblem says what is wrong with JSON that did not decode, in the
// words the question's refusals use: the field's JSON path and the kind of
// value expected ("limit: must be a whole number, not text").
func JSONProblem(err error) string { return jsonProblem(err) }

// jsonProblem turns a decoding error into words a person can read: the
// field's JSON path and the kind of value expected, never Go type names.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got := te.Value
		switch {
		case got == "string":
			got = "text"
		case strings.HasPrefix(got, "number "):
			got = strings.TrimPrefix(got, "number ")
		case got == "bool":
			got = "true or false"
		case got == "array":
			got = "a list"
		case got == "object":
			got = "an object"
		case got == "number":
			got = "a number"
		}
		if te.Field == "" {
			return "expected an object, not " + got
		}
		// Types with their own UnmarshalJSON decode through a local type
		// named plain, which encoding/json puts in the field's path.
		te.Field = strings.ReplaceAll(strings.TrimPrefix(te.Field, "plain."), ".plain.", ".")
		if te.Type == reflect.TypeFor[Escalation]() {
			return fmt.Sprintf("%s: must be \"off\", a list of steps or an object {\"off\", \"steps\"}, not %s", te.Field, got)
		}
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && jsonKindWord(te.Type) == "a whole number" {
			if f, err := strconv.ParseFloat(n, 64); err == nil && f == math.Trunc(f) {
				if math.Abs(f) < 1<<63 {
					return fmt.Sprintf("%s: must be a whole number written without a decimal point or exponent, not %s", te.Field, n)
				}
				return fmt.Sprintf("%s: %s is too large", te.Field, n)
			}
		}
		return fmt.Sprintf("%s: must be %s, not %s", te.Field, jsonKindWord(te.Type), got)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends before the JSON is complete"
	}
	return err.Error()
}

// jsonKindWord names what a Go type expects, in JSON words.
func jsonKindWord(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "a list of text"
		}
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another kind of value"
}

// ValidateQuestion checks a question against docs/contract.md's limits. It fills
// nothing in; defaults are read through the accessor methods.
func ValidateQuestion(q *Question) error {
	ve := &ValidationError{}
	for _, t := range []struct{ what, v string }{
		{"tenant", q.Tenant}, {"job_id", q.JobID}, {"question_id", q.QuestionID},
	} {
		if err := CheckToken(t.what, t.v); err != nil {
			ve.add("%s", err)
		}
	}
	if q.TaskVersion < 0 {
		ve.add("task_version: must not be negative")
	}
	switch q.Kind {
	case "", KindQuestion, KindApproval:
	default:
		ve.add("kind: must be question or approval, not %q", q.Kind)
	}
	text := strings.TrimSpace(q.Question)
	switch {
	case text == "":
		ve.add("question: is required: write it for a person who has not seen the conversation")
	case utf8.RuneCountInString(q.Question) > MaxQuestionText:
		ve.add("question: must be at most %d characters", MaxQuestionText)
	}
	if len(q.Choices) > 0 && len(q.Fields) > 0 {
		ve.add("choices and fields: give one or the other, not both")
	}
	if q.IsApproval() {
		if len(q.Choices) > 0 || len(q.Fields) > 0 {
			ve.add("kind: an approval takes approve or deny only, so it has no choices or fields")
		}
		switch {
		case q.Proposal == nil:
			ve.add("proposal: is required for an approval")
		case strings.TrimSpace(q.Proposal.ID) == "":
			ve.add("proposal.id: is required")
		case len(q.Proposal.Summary) == 0:
			ve.add("proposal.summary: needs at least one line")
		}
		if q.Proposal != nil {
			validateProposal(ve, q.Proposal)
		}
	} else if q.Proposal != nil {
		ve.add("proposal: only an approval carries a proposal")
	}
	validateChoices(ve, q.Choices)
	validateFields(ve, q.Fields)
	validateTools(ve, "blocked_tools", q.BlockedTools)
	validateTools(ve, "allowed_tools", q.AllowedTools)
	if q.Timeout != "" {
		if _, err := ParseTimeout(q.Timeout); err != nil {
			ve.add("timeout: %s", err)
		}
	}
	switch q.OnTimeout {
	case "", OnTimeoutContinue, OnTimeoutFail:
	default:
		ve.add("on_timeout: must be continue or fail, not %q", q.OnTimeout)
	}
	for i, a := range q.Answerers {
		if err := CheckAnswerer(a); err != nil {
			ve.add("answerers[%d]: %s", i, err)
		}
	}
	if len(q.Delegations) > 0 {
		ve.add("delegations: are recorded by askbridge when someone asks another person to answer; a question may not set them")
	}
	if q.Owner != "" {
		if err := CheckIdentity(q.Owner); err != nil {
			ve.add("owner: %s", err)
		}
	}
	if q.Priority != "" && PriorityRank(q.Priority) < 0 {
		ve.add("priority: must be blocking, high, medium or low, not %q", Truncate(q.Priority, 40))
	}
	switch q.Visibility {
	case "", VisibilityTenant, VisibilityRestricted:
	default:
		ve.add("visibility: must be tenant or restricted, not %q", q.Visibility)
	}
	if q.Route != nil {
		if q.Route.Slack != nil && q.Route.Slack.Channel == "" && q.Route.Slack.ThreadTS != "" {
			ve.add("route.slack.channel: is required with thread_ts")
		}
	}
	validateEscalation(ve, q)
	if n := compactSize(q); n > MaxQuestionBytes {
		ve.add("question: is %d bytes as JSON; at most %d are accepted", n, MaxQuestionBytes)
	}
	return ve.orNil()
}

func validateChoices(ve *ValidationError, choices []string) {
	if len(choices) > MaxChoices {
		ve.add("choices: at most %d, got %d", MaxChoices, len(choices))
	}
	for i, c := range choices {
		switch {
		case strings.TrimSpace(c) == "":
			ve.add("choices[%d]: must not be empty", i)
		case utf8.RuneCountInString(c) > MaxChoiceText:
			ve.add("choices[%d]: must be at most %d characters", i, MaxChoiceText)
		case sameOptionBefore(choices, i):
			ve.add("choices[%d]: %q is listed twice", i, c)
		}
	}
}

// sameOptionBefore reports whether options[i] is listed earlier, compared
// as answers are matched (ignoring case and surrounding space): a person
// typing it could not pick one of the two.
func sameOptionBefore(options []string, i int) bool {
	t := strings.TrimSpace(options[i])
	for _, o := range options[:i] {
		if strings.EqualFold(strings.TrimSpace(o), t) {
			return true
		}
	}
	return false
}

func validateFields(ve *ValidationError, fields []Field) {
	if len(fields) == 0 {
		return
	}
	if len(fields) > MaxFields {
		ve.add("fields: at most %d, got %d", MaxFields, len(fields))
	}
	if raw, err := plainJSON(fields); err == nil && len(raw) > MaxFieldsJSON {
		ve.add("fields: are %d bytes of JSON together; at most %d (16 KiB)", len(raw), MaxFieldsJSON)
	}
	seen := map[string]bool{}
	for i, f := range fields {
		name := f.Name
		if !fieldNamePattern.MatchString(name) {
			ve.add("fields[%d].name: %q must be 1 to 64 lower-case letters, digits and _", i, name)
			name = fmt.Sprintf("fields[%d]", i)
		} else if seen[name] {
			ve.add("%s: the name is used by two fields", name)
		}
		seen[f.Name] = true
		choiceKind := f.Kind == FieldChoice || f.Kind == FieldMultiChoice
		switch f.Kind {
		case FieldText, FieldNumber, FieldChoice, FieldMultiChoice, FieldDate, FieldToggle:
		case "":
			ve.add("%s: kind is required (text, number, choice, multi-choice, date or toggle)", name)
		default:
			ve.add("%s: kind must be text, number, choice, multi-choice, date or toggle, not %q", name, f.Kind)
		}
		if choiceKind {
			if len(f.Options) == 0 {
				ve.add("%s: a %s field needs options", name, f.Kind)
			}
			if len(f.Options) > MaxOptions {
				ve.add("%s: at most %d options, got %d", name, MaxOptions, len(f.Options))
			}
			for j, o := range f.Options {
				switch {
				case strings.TrimSpace(o) == "":
					ve.add("%s: options[%d] must not be empty", name, j)
				case utf8.RuneCountInString(o) > MaxChoiceText:
					ve.add("%s: options[%d] must be at most %d characters", name, j, MaxChoiceText)
				case sameOptionBefore(f.Options, j):
					ve.add("%s: option %q is listed twice", name, o)
				}
			}
		} else if len(f.Options) > 0 {
			ve.add("%s: only choice and multi-choice fields take options", name)
		}
		if f.Kind != FieldNumber && (f.Min != nil || f.Max != nil || f.Integer) {
			ve.add("%s: min, max and integer apply to number fields only", name)
		}
		if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
			ve.add("%s: min %s is greater than max %s", name, formatNumber(*f.Min), formatNumber(*f.Max))
		}
		for _, p := range []*float64{f.Min, f.Max} {
			if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
				ve.add("%s: min and max must be finite numbers", name)
			}
		}
		if f.Kind != FieldText && (f.MaxLength != 0 || f.Multiline) {
			ve.add("%s: max_length and multiline apply to text fields only", name)
		}
		if f.MaxLength < 0 {
			ve.add("%s: max_length must not be negative", name)
		}
		if f.Kind != FieldDate && f.DateTime {
			ve.add("%s: date_time applies to date fields only", name)
		}
		if utf8.RuneCountInString(f.Label) > 200 {
			ve.add("%s: label must be at most 200 characters", name)
		}
		if utf8.RuneCountInString(f.Description) > 1000 {
			ve.add("%s: description must be at most 1000 characters", name)
		}
	}
}

func validateEscalation(ve *ValidationError, q *Question) {
	e := q.Escalation
	if e == nil {
		return
	}
	for _, p := range e.unknown {
		ve.add("%s", p)
	}
	if !e.Off && len(e.Steps) == 0 && !e.asDefault && len(e.unknown) == 0 {
		ve.add(`escalation: names no steps: give steps such as [{"at": 0.5, "to": "owner"}], false with escalation_reason to turn reminders off, or leave it out for the default ladder`)
	}
	if e.Off {
		if strings.TrimSpace(q.EscalationReason) == "" {
			ve.add("escalation_reason: is required to turn the escalation ladder off")
		}
		if len(e.Steps) > 0 {
			ve.add("escalation: give steps or turn it off, not both")
		}
		return
	}
	last := 0.0
	for i, s := range e.Steps {
		if !(s.At > 0 && s.At < 1) {
			ve.add("escalation.steps[%d].at: must be a fraction of the timeout between 0 and 1", i)
		} else if s.At <= last {
			ve.add("escalation.steps[%d].at: steps must climb in order", i)
		} else {
			last = s.At
		}
		switch s.To {
		case TargetAnswerers, TargetOwner, TargetAdmins:
		default:
			ve.add("escalation.steps[%d].to: must be answerers, owner or admins, not %q", i, s.To)
		}
	}
	if len(e.Steps) > 10 {
		ve.add("escalation.steps: at most 10")
	}
}

var identityPattern = regexp.MustCompile(`^(slack|discord|console|cli):[A-Za-z0-9._@-]{1,128}$`)

// CheckIdentity checks an identity such as slack:U0123 or cli:alice.
func CheckIdentity(id string) error {
	if !identityPattern.MatchString(id) {
		return fmt.Errorf("%q must be slack:<user>, discord:<user>, console:<user> or cli:<user>", id)
	}
	return nil
}

// ParseTimeout parses a question timeout: a Go duration ("90s", "4h",
// "1h30m"), a number of days ("2d"), or days and a duration ("1d12h").
func ParseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, rest, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 30m, 4h or 2d", s)
		}
		if n > int(MaxTimeout/(24*time.Hour)) {
			// Checked before multiplying, which could overflow.
			return 0, fmt.Errorf("%q must be at most 90 days", s)
		}
		d = time.Duration(n) * 24 * time.Hour
		if rest != "" {
			more, err := time.ParseDuration(rest)
			if err != nil || more < 0 || rest[0] == '+' {
				return 0, fmt.Errorf("%q is not a duration such as 30m, 4h or 2d", s)
			}
			if more > MaxTimeout {
				return 0, fmt.Errorf("%q must be at most 90 days", s)
			}
			d += more
		}
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 30m, 4h or 2d", s)
		}
	}
	if d < time.Second {
		return 0, fmt.Errorf("%q must be at least one second", s)
	}
	if d > MaxTimeout {
		return 0, fmt.Errorf("%q must be at most 90 days", s)
	}
	return d, nil
}

// FormatTimeout writes a duration as the agent reads it: 4:00:00,
// 0:00:04, 1 day, 2:00:00.
func FormatTimeout(d time.Duration) string {
	d = d.Round(time.Second)
	if d < 0 {
		d = 0
	}
	days := int64(d / (24 * time.Hour))
	d -= time.Duration(days) * 24 * time.Hour
	h := int64(d / time.Hour)
	m := int64(d%time.Hour) / int64(time.Minute)
	s := int64(d%time.Minute) / int64(time.Second)
	clock := fmt.Sprintf("%d:%02d:%02d", h, m, s)
	switch days {
	case 0:
		return clock
	case 1:
		return "1 day, " + clock
	default:
		return fmt.Sprintf("%d days, %s", days, clock)
	}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// plainJSON is json.Marshal without HTML escaping: sizes are measured as
// an agent writes the JSON ("<" is one byte, not the six of "\u003c").
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
