package card

import (
	"strings"
	"time"

	"github.com/askbridge/askbridge/bridge"
)

// Labels of a notice card's parts, in the order every front-end shows
// them (docs/contract.md, "Notices").
const (
	LabelFailure           = "Failure"
	LabelAttempted         = "Attempted"
	LabelMissingCapability = "Missing capability"
	LabelCanStillDo        = "What I can still do"
	LabelUnblock           = "What would unblock"
)

// NoticeLabels are the five parts' labels in order.
var NoticeLabels = []string{LabelFailure, LabelAttempted, LabelMissingCapability, LabelCanStillDo, LabelUnblock}

// Notice is what a person sees of a notice: a failure an agent met that
// is not a question. It has no controls: nobody answers a notice.
type Notice struct {
	Tenant   string
	JobID    string
	NoticeID string
	Code     string
	Title    string
	// Parts are the five parts, each under its label, in NoticeLabels'
	// order; each has text.
	Parts []Section
	At    time.Time
}

// codeWords names each failure code in words.
var codeWords = map[string]string{
	bridge.CodeCapabilityUnavailable: "Capability unavailable",
	bridge.CodeAccessDenied:          "Access denied",
	bridge.CodeReferenceUnresolved:   "Reference unresolved",
	bridge.CodeSourceUnreliable:      "Source unreliable",
	bridge.CodeInputMissing:          "Input missing",
}

// Texts of parts the notice left empty.
const (
	NoCapabilityNamed = "None named."
	NoFallbackNamed   = "The agent named nothing it can still do."
	// RetryMayPass and RetryWontHelp say retryable in words.
	RetryMayPass  = "Perhaps nothing: it may work if the agent tries again later."
	RetryWontHelp = "Trying again as things stand will not help."
)

// NewNotice computes the card of a notice. Every text is masked again
// (bridge.MaskNotice): the runtime masked it, and a card must not show a
// secret whatever reached it.
func NewNotice(in bridge.Notice) Notice {
	n := in
	bridge.MaskNotice(&n)
	c := Notice{Tenant: n.Tenant, JobID: n.JobID, NoticeID: n.NoticeID, Code: n.Code, At: n.At}
	c.Title = "Failure in job " + n.JobID
	if a := strings.TrimSpace(n.Agent); a != "" {
		c.Title = a + " met a failure in job " + n.JobID
	}
	failure := codeText(n.Code)
	if m := strings.TrimSpace(n.OperatorMessage); m != "" {
		failure += "\n" + m
	}
	c.Parts = []Section{
		{Label: LabelFailure, Text: failure},
		{Label: LabelAttempted, Text: attempted(n.Operation, n.Dependency)},
		{Label: LabelMissingCapability, Text: orText(n.RequiredCapability, NoCapabilityNamed)},
		{Label: LabelCanStillDo, Text: orText(n.SafeFallback, NoFallbackNamed)},
		{Label: LabelUnblock, Text: unblock(&n)},
	}
	return c
}

// Part is the text under label, "" when the card has no such part.
func (c Notice) Part(label string) string {
	for _, p := range c.Parts {
		if p.Label == label {
			return p.Text
		}
	}
	return ""
}

// codeText is "Access denied (ACCESS_DENIED)".
func codeText(code string) string {
	if w, ok := codeWords[code]; ok {
		return w + " (" + code + ")"
	}
	return code
}

func attempted(operation, dependency string) string {
	operation, dependency = strings.TrimSpace(operation), strings.TrimSpace(dependency)
	switch {
	case operation == "":
		return dependency
	case dependency == "":
		return operation
	}
	return operation + " on " + dependency
}

func orText(s, none string) string {
	if strings.TrimSpace(s) == "" {
		return none
	}
	return strings.TrimSpace(s)
}

// unblock says what would let the agent go on: when the failure is
// retryable, perhaps nothing; otherwise who must change what, from the
// capability it names or its code.
func unblock(n *bridge.Notice) string {
	if n.Retryable {
		return RetryMayPass
	}
	dep := strings.TrimSpace(n.Dependency)
	var need string
	switch capability := strings.TrimSpace(n.RequiredCapability); {
	case capability != "":
		need = "Someone giving the agent " + capability + " on " + dep + "."
	case n.Code == bridge.CodeAccessDenied:
		need = "Someone granting the agent access to " + dep + "."
	case n.Code == bridge.CodeInputMissing:
		need = "Someone providing the input " + dep + " lacks."
	case n.Code == bridge.CodeReferenceUnresolved:
		need = "Someone correcting the reference the agent gave " + dep + "."
	case n.Code == bridge.CodeSourceUnreliable:
		need = dep + " working reliably again."
	default:
		need = "Someone making " + strings.TrimSpace(n.Operation) + " available on " + dep + "."
	}
	return need + " " + RetryWontHelp
}
