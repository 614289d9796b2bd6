// Package blockkit renders askbridge questions as Slack Block Kit: the card
// posted in a job's thread, the modals that collect typed answers, and the
// reading of a submitted modal back into an answer. It is pure: no network,
// no NATS, no clock except what the caller passes in.
//
// The identifiers it puts on blocks and actions (block ids, action ids,
// values, callback ids, private_metadata) only tell the adapter which
// question a click is about. They come back from Slack unauthenticated
// beyond Slack's request signature, so they are parsed strictly and never
// trusted for authorization: the runtime decides who may answer.
package blockkit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// Ref binds a card, a click or a modal to one question at one task version.
// Its text form "tenant.job.question.version" is compact (tokens cannot
// contain dots) and fits Slack's 255-character block and action ids.
type Ref = bridge.Ref

// RefOf is the reference of a question as asked.
func RefOf(q *bridge.Question) Ref {
	return Ref{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, Version: q.TaskVersion}
}

// ErrBadRef is returned for identifiers that are not askbridge's.
var ErrBadRef = errors.New("blockkit: not an askbridge reference")

// ParseRef reads the text form strictly: four parts, valid tokens, a
// non-negative version without sign or leading zeros.
func ParseRef(s string) (Ref, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return Ref{}, fmt.Errorf("%w: %q", ErrBadRef, clip(s))
	}
	for _, p := range parts[:3] {
		if !bridge.ValidToken(p) {
			return Ref{}, fmt.Errorf("%w: %q", ErrBadRef, clip(s))
		}
	}
	v, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || v < 0 || strconv.FormatInt(v, 10) != parts[3] {
		return Ref{}, fmt.Errorf("%w: bad version in %q", ErrBadRef, clip(s))
	}
	return Ref{Tenant: parts[0], JobID: parts[1], QuestionID: parts[2], Version: v}, nil
}

// clip keeps error messages short when a client sends garbage.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Action ids on the card. A choice button's id carries its index so that
// every button in the actions block has its own id, as Slack requires.
const (
	ActionAnswer  = "answer"  // opens the answer modal (free text or fields)
	ActionDecline = "decline" // opens the decline modal
	ActionApprove = "approve" // approves an approval at once
	ActionDeny    = "deny"    // opens the deny modal (asks for a reason)
	ActionSelect  = "select"  // static_select of choices; option value is the index
	actionChoice  = "choice." // + index: a choice button; value is the choice text
	// ActionConsole asks for a console link to the question, minted for the
	// person who clicked (card and settled card).
	ActionConsole = "console"
	// ActionConsoleJob asks for a console link to the question's job,
	// minted for the person who clicked (thread parent).
	ActionConsoleJob = "console.job"
)

// actionsPrefix starts the block id of the card's actions block; the rest is the Ref.
const actionsPrefix = "ask."

// ActionsBlockID is the block id of a question's actions block.
func ActionsBlockID(r Ref) string { return actionsPrefix + r.String() }

// Click is what a card button or select means, before anyone checks that
// the clicker may do it.
type Click struct {
	Ref Ref
	// Action is ActionAnswer, ActionDecline, ActionApprove, ActionDeny,
	// ActionConsole, ActionConsoleJob, or "choose" for a choice button or
	// select.
	Action string
	// Index is the chosen choice's index (for "choose").
	Index int
	// Choice is the choice text a button carried (empty for a select, whose
	// option carries only the index).
	Choice string
	// Snooze is Remind me later's length (ActionSnooze).
	Snooze string
}

// Choose is Click.Action for a picked choice.
const Choose = "choose"

// ParseClick reads a block action strictly. value is the button's value;
// selected is the selected option's value of a select (else empty).
func ParseClick(blockID, actionID, value, selected string) (Click, error) {
	rest, ok := strings.CutPrefix(blockID, actionsPrefix)
	if !ok {
		return Click{}, fmt.Errorf("%w: block %q", ErrBadRef, clip(blockID))
	}
	ref, err := ParseRef(rest)
	if err != nil {
		return Click{}, err
	}
	c := Click{Ref: ref}
	switch actionID {
	case ActionAnswer, ActionDecline, ActionApprove, ActionDeny, ActionConsole, ActionConsoleJob:
		c.Action = actionID
	case ActionMore:
		return parseMore(c, selected)
	case ActionSelect:
		i, err := parseIndex(selected)
		if err != nil {
			return Click{}, err
		}
		c.Action, c.Index = Choose, i
	default:
		idx, ok := strings.CutPrefix(actionID, actionChoice)
		if !ok {
			return Click{}, fmt.Errorf("%w: action %q", ErrBadRef, clip(actionID))
		}
		i, err := parseIndex(idx)
		if err != nil {
			return Click{}, err
		}
		if value == "" {
			return Click{}, fmt.Errorf("%w: choice button without a value", ErrBadRef)
		}
		c.Action, c.Index, c.Choice = Choose, i, value
	}
	return c, nil
}

func parseIndex(s string) (int, error) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= bridge.MaxChoices || strconv.Itoa(i) != s {
		return 0, fmt.Errorf("%w: option %q", ErrBadRef, clip(s))
	}
	return i, nil
}

// Modal callback ids.
const (
	CallbackAnswer  = "ask.answer"
	CallbackDecline = "ask.decline"
	CallbackDeny    = "ask.deny"
)

// ModalMeta is a modal's private_metadata: the question and the card the
// modal was opened from, so a refusal can reach the person in that channel.
type ModalMeta struct {
	Ref       Ref
	Channel   string
	MessageTS string
}

// String is "ref|channel|ts", well under Slack's 3000 characters.
func (m ModalMeta) String() string { return m.Ref.String() + "|" + m.Channel + "|" + m.MessageTS }

// ParseModalMeta reads private_metadata strictly.
func ParseModalMeta(s string) (ModalMeta, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 3 {
		return ModalMeta{}, fmt.Errorf("%w: metadata %q", ErrBadRef, clip(s))
	}
	ref, err := ParseRef(parts[0])
	if err != nil {
		return ModalMeta{}, err
	}
	if !slackID(parts[1]) || !slackTS(parts[2]) {
		return ModalMeta{}, fmt.Errorf("%w: metadata %q", ErrBadRef, clip(s))
	}
	return ModalMeta{Ref: ref, Channel: parts[1], MessageTS: parts[2]}, nil
}

// slackID accepts an empty id or Slack's upper-case alphanumerics.
func slackID(s string) bool {
	if len(s) > 32 {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// slackTS accepts an empty ts or "1700000000.000100".
func slackTS(s string) bool {
	if s == "" {
		return true
	}
	a, b, ok := strings.Cut(s, ".")
	if !ok || len(a) == 0 || len(a) > 12 || len(b) == 0 || len(b) > 8 {
		return false
	}
	for _, r := range a + b {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Input block ids in modals. Field names are [a-z0-9_], so "f."+name never
// collides with the free-text and reason blocks.
const (
	BlockFreeText = "answer"
	BlockReason   = "reason"
	fieldPrefix   = "f."
	// InputAction is the action id of every modal input (one per block).
	InputAction = "v"
)

// FieldBlockID is the input block id of a typed field.
func FieldBlockID(name string) string { return fieldPrefix + name }
