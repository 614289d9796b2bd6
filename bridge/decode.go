package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
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
