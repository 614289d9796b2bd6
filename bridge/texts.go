package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The sentences an agent reads on its resume subject. They are part of the
// public contract: change them only deliberately.

// AnsweredText is "The answer: blue" or "The answer: {...}".
func AnsweredText(value []byte) string {
	var s string
	if err := jsonUnmarshalString(value, &s); err == nil {
		return "The answer: " + s
	}
	var compact bytes.Buffer
	if json.Compact(&compact, value) == nil {
		return "The answer: " + string(unescapeHTML(compact.Bytes()))
	}
	return "The answer: " + string(bytes.TrimSpace(value))
}

// unescapeHTML turns the HTML-safe escapes encoding/json writes for "<",
// ">" and "&" back into the characters, so that the agent reads
// {"dept":"R&D"} as it would from any other JSON encoder. Other escapes
// (an escaped backslash before "u003c" included) are kept as they are.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch strings.ToLower(string(b[i+2 : i+6])) {
			case "003c":
				out = append(out, '<')
				i += 5
				continue
			case "003e":
				out = append(out, '>')
				i += 5
				continue
			case "0026":
				out = append(out, '&')
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, kept whole
		i++
	}
	return out
}

// DeniedText is what the agent reads when an approval is denied.
func DeniedText(reason string) string {
	if reason = strings.TrimSpace(reason); reason == "" {
		return "The answer: denied"
	}
	return "The answer: denied. Reason: " + sentence(reason)
}

// DeclinedText is "slack:U0KEV (kevin) declined to answer: ask Ana."
func DeclinedText(by, byName, reason string) string {
	who := DisplayIdentity(by, byName)
	if reason = strings.TrimSpace(reason); reason == "" {
		return who + " declined to answer."
	}
	return who + " declined to answer: " + sentence(reason)
}

// TimedOutText is "Nobody answered within 4:00:00."
func TimedOutText(timeout time.Duration) string {
	return "Nobody answered within " + FormatTimeout(timeout) + "."
}

// CancelledText says a question was cancelled, with the reason when given.
func CancelledText(reason string) string {
	if reason = strings.TrimSpace(reason); reason == "" {
		return "The question was cancelled."
	}
	return "The question was cancelled: " + sentence(reason)
}

// RetiredText is what a retired question's card and resume say:
// "No longer needed: the customer changed the subject."
func RetiredText(reason string) string {
	return RetiredPrefix + sentence(strings.TrimSpace(reason))
}

// ImplicitlyAnsweredText is what an implicitly answered question's card and
// resume say: "Answered in conversation: “ship it friday”."
func ImplicitlyAnsweredText(evidence string) string {
	return ImplicitlyAnsweredPrefix + "“" + strings.TrimSpace(evidence) + "”."
}

// How the texts of retired and implicitly answered questions begin.
const (
	RetiredPrefix            = "No longer needed: "
	ImplicitlyAnsweredPrefix = "Answered in conversation: "
)

// CancelText is the sentence of a cancel of the given status (Cancel.Status).
func CancelText(status, reason, evidence string) string {
	switch status {
	case CancelRetired:
		return RetiredText(reason)
	case CancelImplicitlyAnswered:
		return ImplicitlyAnsweredText(evidence)
	}
	return CancelledText(reason)
}

// SupersededText says a newer task version replaced the question.
func SupersededText(newVersion int64) string {
	return fmt.Sprintf("The question was superseded by task version %d.", newVersion)
}

// NotPendingText is what a person trying to answer a question that no
// longer waits is told, and the refusal's reason: who answered or declined
// it and when, that it timed out or was cancelled, or (stale) that a newer
// task version replaced it. state is the question's state; a question
// that failed on its timeout (on_timeout: fail) is told as timed_out.
// The runtime refuses late answers in these words, and a front-end that
// knows a question ended (a settled card's form) says them itself.
func NotPendingText(state, by, byName string, at time.Time, version int64) (reason, text string) {
	when := at.UTC().Format(time.RFC3339)
	switch state {
	case StateAnswered:
		text = fmt.Sprintf("This question was already answered by %s at %s.", DisplayIdentity(by, byName), when)
	case StateDeclined:
		text = fmt.Sprintf("This question was already declined by %s at %s.", DisplayIdentity(by, byName), when)
	case StateTimedOut:
		text = fmt.Sprintf("This question timed out at %s; nobody answered it in time.", when)
	case StateCancelled:
		text = fmt.Sprintf("This question was cancelled at %s.", when)
	case StateSuperseded:
		return RefusedStale, fmt.Sprintf(
			"This answer is stale: the question belongs to task version %d, which a newer version of the task replaced at %s.", version, when)
	default:
		text = fmt.Sprintf("This question is no longer waiting for an answer (%s at %s).", state, when)
	}
	return RefusedNotPending, text
}

// EndedText is NotPendingText for the event that ended a question
// (answered, declined, timed_out, cancelled, superseded, or
// delivery_failed): what a front-end that saw the question end tells a
// person who tries to answer it after, in the runtime's words.
func EndedText(eventType, by, byName string, at time.Time, version int64) string {
	_, text := NotPendingText(EndedState(eventType), by, byName, at, version)
	return text
}

// InvalidText says why a question was refused.
func InvalidText(err error) string {
	return "The question was refused: " + sentence(err.Error())
}

// DisplayIdentity is "slack:U0KEV (kevin)", or the identity alone when the
// name adds nothing.
func DisplayIdentity(id, name string) string {
	_, user, _ := strings.Cut(id, ":")
	if name == "" || name == user || name == id {
		return id
	}
	return id + " (" + name + ")"
}

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	switch s[len(s)-1] {
	case '.', '!', '?':
		return s
	}
	return s + "."
}

func jsonUnmarshalString(b []byte, s *string) error { return json.Unmarshal(b, s) }

// RestrictedReaders names, in a person's words, who may read a restricted
// question: the people it waits for (Question.WaitsFor), each drawn by
// mention, and admins, who stand for owners too. Every front-end and the
// runtime's refusals say it the same way.
func RestrictedReaders(people []string, mention func(identity string) string) string {
	if len(people) == 0 {
		return "admins"
	}
	names := make([]string, len(people))
	for i, id := range people {
		names[i] = mention(id)
	}
	return strings.Join(names, ", ") + " and admins"
}

// RestrictedNotice is the sentence shown in place of a restricted
// question's content to someone who may not read it.
func RestrictedNotice(readers string) string {
	return "A restricted question waits for " + readers + "; only they may read it."
}

// Truncate cuts s to at most n characters, ending a cut text with "…".
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return strings.TrimRightFunc(string(r[:n-1]), unicode.IsSpace) + "…"
}

// DelegatedText is "slack:U0KEV (kevin) asked slack:U0DANA to answer."
func DelegatedText(by, byName, to string) string {
	return DisplayIdentity(by, byName) + " asked " + to + " to answer."
}

// SnoozedText tells a snoozer when they are reminded next, in loc (UTC
// when nil), or that the question times out first: a snooze never moves
// the timeout.
func SnoozedText(until, deadline time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	at := until.In(loc).Format("Mon 2 Jan 15:04 MST")
	if !deadline.IsZero() && !until.Before(deadline) {
		return "You will not be reminded of this question again: it times out at " +
			deadline.In(loc).Format("Mon 2 Jan 15:04 MST") + ", before " + at + "."
	}
	return "I'll remind you of this question at " + at + ". Others are reminded as before, and it still times out at " +
		deadline.In(loc).Format("Mon 2 Jan 15:04 MST") + "."
}
