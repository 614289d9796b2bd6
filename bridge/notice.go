package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of a notice (docs/contract.md, "Notices"): a card shows each
// part whole on Slack and Discord.
const (
	MaxNoticeBytes      = 16 << 10
	MaxNoticeName       = 200  // dependency, operation, agent
	MaxNoticeCapability = 500  // required_capability
	MaxNoticeText       = 1000 // safe_fallback, operator_message
)

// NoticeCodes are the failure codes a notice may carry: the typed
// failures of docs/contract.md. QuestionTimedOut is not one: a question's
// timeout is its resume, never a notice.
var NoticeCodes = []string{CodeCapabilityUnavailable, CodeAccessDenied, CodeReferenceUnresolved,
	CodeSourceUnreliable, CodeInputMissing}

// DecodeNotice reads a notice published on ask.v1.notice.<tenant>.<job>
// and checks it against that subject's tenant and job: a body without a
// tenant or job takes the subject's. Members it does not know are
// ignored; a member of the wrong type is named, and the rest still read.
// Every error is a *ValidationError whose problems name the field; they
// never echo a value unmasked. A valid notice comes back masked
// (MaskNotice).
func DecodeNotice(data []byte, tenant, job string) (*Notice, error) {
	if len(data) > MaxNoticeBytes {
		return nil, problem("notice: is %d bytes; at most %d are accepted", len(data), MaxNoticeBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, problem("notice: is empty: send a JSON object")
	}
	var n Notice
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&n); err != nil {
		if !isTypeError(err) {
			return nil, problem("notice: is not a JSON object: %s", jsonProblem(err))
		}
		n = Notice{}
		errs, derr := decodeMembers(data, &n)
		if derr != nil {
			return nil, problem("notice: is not a JSON object: %s", jsonProblem(derr))
		}
		ve := &ValidationError{}
		for _, e := range errs {
			// The failure's keys are the notice's own: not Failure.code.
			ve.add("%s", strings.TrimPrefix(jsonProblem(e.err), "Failure."))
		}
		return &n, ve
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return &n, problem("notice: has trailing data after the JSON object")
	}
	if n.Tenant == "" {
		n.Tenant = tenant
	}
	if n.JobID == "" {
		n.JobID = job
	}
	ve := &ValidationError{}
	if n.Tenant != tenant {
		ve.add("tenant: %s does not match the subject's %s", shownValue(n.Tenant), shownValue(tenant))
	}
	if n.JobID != job {
		ve.add("job_id: %s does not match the subject's %s", shownValue(n.JobID), shownValue(job))
	}
	if err := ValidateNotice(&n); err != nil {
		var more *ValidationError
		errors.As(err, &more)
		ve.Problems = append(ve.Problems, more.Problems...)
	}
	if err := ve.orNil(); err != nil {
		return &n, err
	}
	MaskNotice(&n)
	return &n, nil
}

// ValidateNotice checks a notice's ids, code and texts. Its problems name
// the field and never echo a text unmasked.
func ValidateNotice(n *Notice) error {
	ve := &ValidationError{}
	for _, t := range []struct{ what, v string }{{"tenant", n.Tenant}, {"job_id", n.JobID}} {
		if t.v == "" {
			ve.add("%s: is required", t.what)
		} else if !ValidToken(t.v) {
			ve.add("%s: %s must be 1 to 64 letters, digits, '-' or '_'", t.what, shownValue(t.v))
		}
	}
	if n.NoticeID != "" && !ValidToken(n.NoticeID) {
		ve.add("notice_id: %s must be 1 to 64 letters, digits, '-' or '_'", shownValue(n.NoticeID))
	}
	switch {
	case n.Code == "":
		ve.add("code: is required: one of %s", strings.Join(NoticeCodes, ", "))
	case !slices.Contains(NoticeCodes, n.Code):
		ve.add("code: must be one of %s, not %s", strings.Join(NoticeCodes, ", "), shownValue(n.Code))
	}
	for _, t := range []struct {
		what, v  string
		required bool
		max      int
	}{
		{"dependency", n.Dependency, true, MaxNoticeName},
		{"operation", n.Operation, true, MaxNoticeName},
		{"agent", n.Agent, false, MaxNoticeName},
		{"required_capability", n.RequiredCapability, false, MaxNoticeCapability},
		{"safe_fallback", n.SafeFallback, false, MaxNoticeText},
		{"operator_message", n.OperatorMessage, false, MaxNoticeText},
	} {
		switch {
		case t.required && strings.TrimSpace(t.v) == "":
			ve.add("%s: is required", t.what)
		case utf8.RuneCountInString(t.v) > t.max:
			ve.add("%s: must be at most %d characters", t.what, t.max)
		case !utf8.ValidString(t.v):
			ve.add("%s: is not valid UTF-8", t.what)
		}
	}
	return ve.orNil()
}

// shownValue is a value as a refusal may quote it: masked and short.
func shownValue(s string) string { return fmt.Sprintf("%q", Truncate(MaskSecrets(s), 40)) }

// MaskNotice masks every text of n (MaskSecrets): what an agent reports
// may carry a provider's raw text, and is stored, shown and logged.
func MaskNotice(n *Notice) {
	for _, p := range []*string{&n.Agent, &n.Dependency, &n.Operation, &n.RequiredCapability, &n.SafeFallback, &n.OperatorMessage} {
		*p = MaskSecrets(*p)
	}
}
