package bridge

import (
	"strings"
	"testing"
)

func TestValidateCancel(t *testing.T) {
	long := strings.Repeat("é", MaxCancelText+1)
	for _, c := range []struct {
		name string
		c    Cancel
		want string // "" when valid
	}{
		{"plain", Cancel{}, ""},
		{"plain with reason", Cancel{Reason: "done"}, ""},
		{"plain with evidence", Cancel{Evidence: "yes"}, `evidence: only a cancel with status "implicitly_answered" carries evidence`},
		{"retired", Cancel{Status: CancelRetired, Reason: "the topic changed"}, ""},
		{"retired job-wide", Cancel{Status: CancelRetired, Reason: "the customer left"}, ""},
		{"retired without reason", Cancel{Status: CancelRetired, Reason: "  "},
			"reason: a retired question needs a reason: say why it is no longer needed"},
		{"retired with evidence", Cancel{Status: CancelRetired, Reason: "r", Evidence: "e"},
			`evidence: only a cancel with status "implicitly_answered" carries evidence; a retired one says why in reason`},
		{"implicit", Cancel{QuestionID: "q-1", Status: CancelImplicitlyAnswered, Evidence: "ship it friday"}, ""},
		{"implicit without evidence", Cancel{QuestionID: "q-1", Status: CancelImplicitlyAnswered},
			"evidence: an implicitly answered question needs the person's words that answered it"},
		{"implicit job-wide", Cancel{Status: CancelImplicitlyAnswered, Evidence: "yes"},
			"question_id: name the question the person answered: evidence answers one question, not every question of the job"},
		{"unknown status", Cancel{Status: "done"}, `status: must be "retired" or "implicitly_answered", got "done"`},
		{"status with version", Cancel{Status: CancelRetired, Reason: "r", TaskVersion: 2},
			"status: a cancel with a task_version supersedes older questions and takes no status"},
		{"long reason", Cancel{Status: CancelRetired, Reason: long}, "reason: must be at most 1000 characters, got 1001"},
		{"long evidence", Cancel{QuestionID: "q", Status: CancelImplicitlyAnswered, Evidence: long}, "evidence: must be at most 1000 characters, got 1001"},
	} {
		err := ValidateCancel(&c.c)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCancelTexts(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{CancelText(CancelRetired, "the customer changed the subject", ""), "No longer needed: the customer changed the subject."},
		{CancelText(CancelImplicitlyAnswered, "", " ship it friday "), "Answered in conversation: “ship it friday”."},
		{CancelText("", "called back", ""), "The question was cancelled: called back."},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
