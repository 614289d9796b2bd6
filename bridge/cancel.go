package bridge

import (
	"strings"
	"unicode/utf8"
)

// MaxCancelText bounds a retired question's reason and an implicitly
// answered question's evidence: both are shown on cards.
const MaxCancelText = 1000

// ValidateCancel checks a cancel's status, reason and evidence
// (docs/contract.md, cancel). A plain cancel (no status) is checked only
// for evidence it may not carry, so cancels that worked before still do.
// Problems are in the agent's words, as a question's are.
func ValidateCancel(c *Cancel) error {
	ve := &ValidationError{}
	reason, evidence := strings.TrimSpace(c.Reason), strings.TrimSpace(c.Evidence)
	switch c.Status {
	case "":
		if evidence != "" {
			ve.add("evidence: only a cancel with status %q carries evidence", CancelImplicitlyAnswered)
		}
		return ve.orNil()
	case CancelRetired:
		if reason == "" {
			ve.add("reason: a retired question needs a reason: say why it is no longer needed")
		}
		if evidence != "" {
			ve.add("evidence: only a cancel with status %q carries evidence; a retired one says why in reason", CancelImplicitlyAnswered)
		}
	case CancelImplicitlyAnswered:
		if evidence == "" {
			ve.add("evidence: an implicitly answered question needs the person's words that answered it")
		}
		if c.QuestionID == "" {
			ve.add("question_id: name the question the person answered: evidence answers one question, not every question of the job")
		}
	default:
		ve.add("status: must be %q or %q, got %q", CancelRetired, CancelImplicitlyAnswered, c.Status)
		return ve
	}
	if c.TaskVersion != 0 {
		ve.add("status: a cancel with a task_version supersedes older questions and takes no status")
	}
	if n := utf8.RuneCountInString(reason); n > MaxCancelText {
		ve.add("reason: must be at most %d characters, got %d", MaxCancelText, n)
	}
	if n := utf8.RuneCountInString(evidence); n > MaxCancelText {
		ve.add("evidence: must be at most %d characters, got %d", MaxCancelText, n)
	}
	return ve.orNil()
}
