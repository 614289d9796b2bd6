package bridge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a proposal and of an execution report (docs/contract.md).
const (
	MaxProposalArguments = 8 << 10
	MaxExecutionDetail   = 2000
)

// Refusal reasons of approvals (docs/contract.md, "Approvals").
const (
	// RefusedSelfApproval: the question's owner may not approve it
	// (the policy's forbid_self_approval).
	RefusedSelfApproval = "self_approval"
	// RefusedAlreadyApproved: this person's approval is already counted.
	RefusedAlreadyApproved = "already_approved"
	// RefusedExpired: the proposal's expires_at has passed.
	RefusedExpired = "proposal_expired"
)

var (
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
)

// UnmarshalJSON reads a proposal; an expires_at that is not a time is kept
// aside for ValidateQuestion to name, instead of failing the whole
// question with a parser's message.
func (p *Proposal) UnmarshalJSON(data []byte) error {
	type plain Proposal
	var aux struct {
		plain
		ExpiresAt json.RawMessage `json:"expires_at"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*p = Proposal(aux.plain)
	p.badExpiry = ""
	raw := bytes.TrimSpace(aux.ExpiresAt)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.badExpiry = fmt.Sprintf("proposal.expires_at: must be a time such as 2026-12-02T17:00:00Z, not %s", jsonValueWord(raw))
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		p.badExpiry = fmt.Sprintf("proposal.expires_at: %q is not a time such as 2026-12-02T17:00:00Z", Truncate(s, 40))
		return nil
	}
	p.ExpiresAt = t
	return nil
}

// jsonValueWord names the kind of a JSON value in a person's words.
func jsonValueWord(raw []byte) string {
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "text"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	}
	return "a number"
}

// validateProposal checks an approval's proposal beyond its id and
// summary: the action it would run, its arguments, amount, currency and
// expiry. That expires_at has not already passed is checked at intake,
// which knows the time.
func validateProposal(ve *ValidationError, p *Proposal) {
	if err := checkProposalID("proposal.id", p.ID); err != nil && strings.TrimSpace(p.ID) != "" {
		ve.add("%s", err)
	}
	if strings.TrimSpace(p.Action) == "" {
		ve.add("proposal.action: is required for an approval: name the tool it would run (refund, send_report)")
	} else if err := CheckTool("proposal.action", p.Action); err != nil {
		ve.add("%s", err)
	}
	if args := bytes.TrimSpace(p.Arguments); len(args) > 0 && string(args) != "null" {
		switch {
		case args[0] != '{' || !json.Valid(args):
			ve.add("proposal.arguments: must be a JSON object of the action's parameters, not %s", jsonValueWord(args))
		case len(args) > MaxProposalArguments:
			ve.add("proposal.arguments: are %d bytes of JSON; at most %d (8 KiB)", len(args), MaxProposalArguments)
		}
	}
	if p.Amount != nil {
		switch a := *p.Amount; {
		case math.IsNaN(a) || math.IsInf(a, 0):
			ve.add("proposal.amount: must be a finite number")
		case a < 0:
			ve.add("proposal.amount: must not be negative, got %s", formatNumber(a))
		}
		if p.Currency == "" {
			ve.add("proposal.currency: is required with an amount: a three-letter ISO 4217 code such as USD")
		}
	}
	if p.Currency != "" && !currencyPattern.MatchString(p.Currency) {
		ve.add("proposal.currency: %q must be a three-letter ISO 4217 code in capitals, such as USD or EUR", Truncate(p.Currency, 20))
	}
	if p.badExpiry != "" {
		ve.add("%s", p.badExpiry)
	}
}

// checkProposalID checks a proposal id as the gate reads one: at most
// MaxProposalID bytes of text, no control characters or surrounding spaces.
func checkProposalID(what, id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return fmt.Errorf("%s: is required", what)
	case len(id) > MaxProposalID:
		return fmt.Errorf("%s: is %d bytes; at most %d", what, len(id), MaxProposalID)
	case !utf8.ValidString(id) || strings.TrimSpace(id) != id || hasControl(id):
		return fmt.Errorf("%s: %q is not a proposal id: no control characters or surrounding spaces", what, Truncate(id, 40))
	}
	return nil
}

// CheckProposalAt refuses a proposal whose expires_at is not after now:
// nobody could decide it.
func CheckProposalAt(p *Proposal, now time.Time) error {
	if p == nil || p.ExpiresAt.IsZero() || p.ExpiresAt.After(now) {
		return nil
	}
	return problem("proposal.expires_at: %s has already passed (it is now %s): nobody could approve it",
		p.ExpiresAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
}

// ProposalExpiredText says a proposal expired before it was decided: the
// text of the timed_out outcome and event of its approval.
func ProposalExpiredText(id string, at time.Time) string {
	return fmt.Sprintf("The proposal %s expired at %s before it was approved.", id, at.UTC().Format(time.RFC3339))
}

// DecidedProposalText refuses a question naming a proposal id that was
// decided before: a proposal is decided once, ever.
func DecidedProposalText(id, state string) string {
	return fmt.Sprintf("proposal.id: %s was already %s; a proposal is decided once: propose again under a new id", id, state)
}

// ValidateExecution checks an execution report against docs/contract.md;
// every problem names its field.
func ValidateExecution(e *Execution) error {
	ve := &ValidationError{}
	for _, t := range []struct{ what, v string }{{"tenant", e.Tenant}, {"job_id", e.JobID}} {
		if err := CheckToken(t.what, t.v); err != nil {
			ve.add("%s", err)
		}
	}
	if err := checkProposalID("proposal_id", e.ProposalID); err != nil {
		ve.add("%s", err)
	}
	switch e.Result {
	case ResultSucceeded, ResultFailed:
	case "":
		ve.add("result: is required: succeeded or failed")
	default:
		ve.add("result: must be succeeded or failed, not %q", Truncate(e.Result, 40))
	}
	if n := utf8.RuneCountInString(e.Detail); n > MaxExecutionDetail {
		ve.add("detail: must be at most %d characters, got %d", MaxExecutionDetail, n)
	}
	if !utf8.ValidString(e.Detail) {
		ve.add("detail: must be UTF-8 text")
	}
	return ve.orNil()
}

// DecodeExecution reads and validates an execution report; its errors are
// in the reporter's words, naming the field.
func DecodeExecution(data []byte) (*Execution, error) {
	if len(data) > 4*MaxExecutionDetail+4096 {
		return nil, problem("execution: is %d bytes; at most %d are accepted", len(data), 4*MaxExecutionDetail+4096)
	}
	var e Execution
	if err := json.Unmarshal(data, &e); err != nil {
		if isTypeError(err) {
			return nil, problem("%s", jsonProblem(err))
		}
		return nil, problem("execution: is not a JSON object: %s", jsonProblem(err))
	}
	if err := ValidateExecution(&e); err != nil {
		return &e, err
	}
	return &e, nil
}

// ApprovalsText is "1 of 2 approvals: kevin": how many of the approvals a
// proposal needs it has, and whose, by name where known.
func ApprovalsText(approvals []Approval, required int) string {
	s := fmt.Sprintf("%d of %d approvals", len(approvals), max(required, 1))
	if len(approvals) == 0 {
		return s
	}
	names := make([]string, len(approvals))
	for i, a := range approvals {
		names[i] = cmp.Or(a.Person, a.ByName, a.By)
	}
	return s + ": " + strings.Join(names, ", ")
}

// JoinOr lists words as a person would: "admin or slack:U0FIN",
// "a, b or c".
func JoinOr(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// ExecutedText says what the agent reported of an executed proposal.
func ExecutedText(id, result, detail string) string {
	what := "was executed"
	if result == ResultFailed {
		what = "failed to execute"
	}
	if detail = strings.TrimSpace(detail); detail == "" {
		return fmt.Sprintf("The proposal %s %s.", id, what)
	}
	return fmt.Sprintf("The proposal %s %s: %s", id, what, sentence(detail))
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
