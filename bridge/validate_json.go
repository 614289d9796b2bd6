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
)

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
