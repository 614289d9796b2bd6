package bridge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// decodeEach decodes the JSON object data into v, leaving out every member
// that does not decode on its own, so a member of the wrong type costs only
// itself: encoding/json stops at the first error a custom unmarshaler
// returns, which would leave the members after it (the question id, the
// task version) unread. It returns the first member's error, in the
// object's order. It is for the error path: a valid body decodes with
// json.Unmarshal.
func decodeEach[T any](data []byte, v *T) error {
	errs, err := decodeMembers(data, v)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs[0].err
	}
	return nil
}

// memberError is a member that decodeMembers left out, and why.
type memberError struct {
	key string
	raw json.RawMessage
	err error
}

// decodeMembers is decodeEach returning every member it left out, in the
// object's order; err is for data that is not a JSON object of members.
func decodeMembers[T any](data []byte, v *T) ([]memberError, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, json.Unmarshal(data, v) // not an object: its own error
	}
	var out []memberError
	kept := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		member, _ := json.Marshal(map[string]json.RawMessage{key: raw})
		var probe T
		if err := json.Unmarshal(member, &probe); err != nil {
			out = append(out, memberError{key: key, raw: raw, err: err})
			continue
		}
		kept[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	rest, _ := json.Marshal(kept)
	if err := json.Unmarshal(rest, v); err != nil {
		return nil, err
	}
	return out, nil
}

// isTypeError reports whether err is a JSON value of the wrong type for
// its field, rather than text that is not JSON at all.
func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && te.Field != ""
}

// partialError is a body that decoded but for values of the wrong type.
type partialError struct{ problem string }

func (e *partialError) Error() string { return e.problem }

// IsPartial reports whether err, from DecodeAttempt, left the rest of the
// attempt decoded.
func IsPartial(err error) bool {
	var pe *partialError
	return errors.As(err, &pe)
}

// DecodeAttempt reads an answer attempt. A value of the wrong type ("by":
// 12345) gives an error IsPartial accepts, in the proposer's words, with
// everything else decoded, so the runtime can refuse the attempt to whoever
// sent it; text that is not a JSON object gives any other error.
func DecodeAttempt(data []byte, a *AnswerAttempt) error {
	// Its UnmarshalJSON straight away: json.Unmarshal would scan the
	// whole text once more before handing it over (the runtime decodes
	// every attempt).
	err := a.UnmarshalJSON(data)
	if err == nil || !isTypeError(err) {
		return err
	}
	*a = AnswerAttempt{}
	_ = decodeEach(data, a)
	return &partialError{problem: jsonProblem(err)}
}

// fieldSettings are the keys of a field, as docs/contract.md lists them.
var fieldSettings = []string{"name", "kind", "label", "description", "required", "options",
	"min", "max", "integer", "max_length", "multiline", "date_time"}

// decodeQuestionJSON decodes the first JSON value of data into a question
// and returns what follows it. A misspelt key ("choises", "maximum" for
// max) would otherwise ask another question, or leave a field unchecked,
// without a word: unknown names each key a question or a field does not
// have. A question without one costs no second reading: the decoder
// refuses unknown keys, and only then is data read again.
func decodeQuestionJSON(data []byte) (q Question, rest []byte, unknown []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(&q)
	if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
		// Keys the decoder does not know may sit deeper (a route's), where
		// they are let be; unknownKeys names those of the question and its
		// fields.
		unknown = unknownKeys(data)
		q = Question{}
		dec = json.NewDecoder(bytes.NewReader(data))
		err = dec.Decode(&q)
	}
	if err != nil {
		return q, nil, unknown, err
	}
	return q, data[dec.InputOffset():], unknown, nil
}

// questionKeys are the keys of a question: its JSON names, as
// docs/contract.md lists them.
var questionKeys = jsonNames(reflect.TypeFor[Question]())

// jsonNames are the JSON names of struct type t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		names = append(names, cmp.Or(name, f.Name))
	}
	return names
}

// unknownKeys names each key of the question in data that is not a key
// of a question, then each key of its fields that is not a setting of a
// field: a misspelt one ("choises", "maximum") would otherwise be
// dropped without a word, and the question asked as another. Keys match
// without regard to case, as encoding/json matches them.
func unknownKeys(data []byte) []string {
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) != nil {
		return nil
	}
	var out []string
	for _, k := range unknown(raw, questionKeys) {
		out = append(out, fmt.Sprintf("%q is not a key of a question%s", k, didYouMean(k, questionKeys)))
	}
	var fields []map[string]json.RawMessage
	if f, ok := raw["fields"]; !ok || json.Unmarshal(f, &fields) != nil {
		return out
	}
	for i, f := range fields {
		for _, k := range unknown(f, fieldSettings) {
			out = append(out, fmt.Sprintf("fields[%d]: %q is not a setting of a field (%s)", i, k, strings.Join(fieldSettings, ", ")))
		}
	}
	return out
}

// unknown is the keys of m that are not among known, sorted.
func unknown(m map[string]json.RawMessage, known []string) []string {
	var keys []string
	for k := range m {
		if !slices.ContainsFunc(known, func(s string) bool { return strings.EqualFold(s, k) }) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// didYouMean is `: did you mean "choices"?` for the known key closest to
// key, when one is within two edits of it; else a pointer to the list.
func didYouMean(key string, known []string) string {
	best, dist := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < dist {
			best, dist = k, d
		}
	}
	if best == "" {
		return " (docs/contract.md lists them)"
	}
	return fmt.Sprintf(": did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
