package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// The escalation ladder's shape in a question (docs/contract.md, "The
// escalation ladder"): its JSON spellings and the steps it climbs.

// Escalation reshapes the ladder. Off turns it off (EscalationReason then
// says why); Steps replaces the default steps.
type Escalation struct {
	Off   bool         `json:"off,omitempty"`
	Steps []LadderStep `json:"steps,omitempty"`

	// asDefault records that the JSON asked for the default ladder in
	// words (true, "on", "default", {"off": false}) or by {}; unknown
	// lists the keys of its objects that are not settings of the ladder
	// or of a step. ValidateQuestion refuses a ladder that is neither off,
	// nor steps, nor such a default: an empty list, {"of": true}.
	asDefault bool
	unknown   []string
}

// UnmarshalJSON reads the ladder's shape: the object {"off": true} or
// {"steps": [...]}, and the shorter spellings an agent is likely to write:
// false, "off" or "none" turn the ladder off (escalation_reason still says
// why); true, "on" or "default" keep the default; a list gives the steps.
func (e *Escalation) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil // as if absent: the default ladder
	}
	var b bool
	var s string
	switch {
	case json.Unmarshal(data, &b) == nil:
		*e = Escalation{Off: !b, asDefault: b}
		return nil
	case json.Unmarshal(data, &s) == nil:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "off", "none", "false":
			*e = Escalation{Off: true}
			return nil
		case "on", "default", "true":
			*e = Escalation{asDefault: true}
			return nil
		}
		return &json.UnmarshalTypeError{Value: "string", Type: reflect.TypeFor[Escalation]()}
	}
	trimmed := bytes.TrimSpace(data)
	if !bytes.HasPrefix(trimmed, []byte("[")) && !bytes.HasPrefix(trimmed, []byte("{")) {
		return &json.UnmarshalTypeError{Value: "number", Type: reflect.TypeFor[Escalation]()}
	}
	if bytes.HasPrefix(trimmed, []byte("[")) {
		var steps []LadderStep
		if err := json.Unmarshal(data, &steps); err != nil {
			return err
		}
		*e = Escalation{Steps: steps, unknown: unknownStepKeys(data, "escalation")}
		return nil
	}
	type plain Escalation
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*e = Escalation(p)
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(data, &obj)
	// {} reshapes nothing: what a client sends for an empty settings
	// object, as absent.
	e.asDefault = len(obj) == 0
	for key, raw := range obj {
		switch {
		case strings.EqualFold(key, "off"):
			e.asDefault = !e.Off
		case strings.EqualFold(key, "steps"):
			e.unknown = append(e.unknown, unknownStepKeys(raw, "escalation.steps")...)
		default:
			e.unknown = append(e.unknown, fmt.Sprintf("escalation: %q is not a setting of the ladder (off, steps)", key))
		}
	}
	slices.Sort(e.unknown)
	return nil
}

// unknownStepKeys names the keys of a JSON list of steps that are not
// at or to (encoding/json would drop them without a word).
func unknownStepKeys(data []byte, path string) []string {
	var steps []map[string]json.RawMessage
	_ = json.Unmarshal(data, &steps)
	var out []string
	for i, step := range steps {
		keys := slices.Sorted(maps.Keys(step))
		for _, key := range keys {
			if !strings.EqualFold(key, "at") && !strings.EqualFold(key, "to") {
				out = append(out, fmt.Sprintf("%s[%d]: %q is not a setting of a step (at, to)", path, i, key))
			}
		}
	}
	return out
}

// Ladder step targets.
const (
	TargetAnswerers = "answerers"
	TargetOwner     = "owner"
	TargetAdmins    = "admins"
)

// LadderStep is one rung: at a fraction of the timeout, remind a target.
type LadderStep struct {
	// At is the fraction of the timeout elapsed, in (0,1).
	At float64 `json:"at"`
	// To is answerers, owner or admins.
	To string `json:"to"`
}

// DefaultLadder is docs/contract.md's default ladder: answerers at ¼, owner at ½, admins at ¾.
var DefaultLadder = []LadderStep{
	{At: 0.25, To: TargetAnswerers},
	{At: 0.5, To: TargetOwner},
	{At: 0.75, To: TargetAdmins},
}

// Ladder returns the steps this question climbs (none when turned off).
func (q *Question) Ladder() []LadderStep {
	if q.Escalation == nil {
		return DefaultLadder
	}
	if q.Escalation.Off {
		return nil
	}
	if len(q.Escalation.Steps) == 0 {
		return DefaultLadder
	}
	return q.Escalation.Steps
}
