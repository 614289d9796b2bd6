package bridge

import (
	"fmt"
	"regexp"
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

// ValidateQuestion checks a question against docs/contract.md's limits. It fills
// nothing in; defaults are read through the accessor methods. Its problems
// come in the order of the question's parts: who asks and what, the
// proposal, the answer's shape, the tools it gates, its timing, who may
// answer, how it is shown, its reminders, and its size.
func ValidateQuestion(q *Question) error {
	ve := &ValidationError{}
	validateHeader(ve, q)
	validateApproval(ve, q)
	validateChoices(ve, q.Choices)
	validateFields(ve, q.Fields)
	validateTools(ve, "blocked_tools", q.BlockedTools)
	validateTools(ve, "allowed_tools", q.AllowedTools)
	validateTiming(ve, q)
	validateAnswerers(ve, q)
	validatePresentation(ve, q)
	validateEscalation(ve, q)
	if n := compactSize(q); n > MaxQuestionBytes {
		ve.add("question: is %d bytes as JSON; at most %d are accepted", n, MaxQuestionBytes)
	}
	return ve.orNil()
}

// validateHeader checks what names the question and what it asks: its
// ids, task version, kind and text, and that it offers one shape of answer.
func validateHeader(ve *ValidationError, q *Question) {
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
}

// validateApproval checks that an approval, and only an approval, carries
// a proposal, and the proposal itself.
func validateApproval(ve *ValidationError, q *Question) {
	if !q.IsApproval() {
		if q.Proposal != nil {
			ve.add("proposal: only an approval carries a proposal")
		}
		return
	}
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
}

// validateTiming checks the question's timeout and what its end does.
func validateTiming(ve *ValidationError, q *Question) {
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
}

// validateAnswerers checks who the question names: its answerers and
// owner; delegations are askbridge's to record, never the asker's.
func validateAnswerers(ve *ValidationError, q *Question) {
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
}

// validatePresentation checks how and where the question is shown: its
// priority in the job's queue, who may read it, and its route.
func validatePresentation(ve *ValidationError, q *Question) {
	if q.Priority != "" && PriorityRank(q.Priority) < 0 {
		ve.add("priority: must be blocking, high, medium or low, not %q", Truncate(q.Priority, 40))
	}
	switch q.Visibility {
	case "", VisibilityTenant, VisibilityRestricted:
	default:
		ve.add("visibility: must be tenant or restricted, not %q", q.Visibility)
	}
	if q.Route != nil && q.Route.Slack != nil && q.Route.Slack.Channel == "" && q.Route.Slack.ThreadTS != "" {
		ve.add("route.slack.channel: is required with thread_ts")
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
