package bridge

import "time"

// StatsRequest asks ask.v1.api.stats for the counts of questions by state
// and the clarification measures of the questions asked since Since
// (docs/contract.md, "Clarification metrics"). An empty body, as before,
// is the default: every tenant, the last 7 days.
type StatsRequest struct {
	// Since is how far back: a duration such as 7d, 24h or 90m.
	Since string `json:"since,omitempty"`
	// Tenant limits the measures to one tenant.
	Tenant string `json:"tenant,omitempty"`
	// As is the person asking (the intake sets it on a person's request):
	// they see the figures of the tenants they hold a role in only.
	As string `json:"as,omitempty"`
}

// DefaultStatsSince is the window of a stats request that names none.
const DefaultStatsSince = 7 * 24 * time.Hour

// ReopenWindow is how soon after an answer a new question on the same job
// counts as a reopen.
const ReopenWindow = 10 * time.Minute

// Clarification is the measures of the questions asked in [Since, Until):
// Total over all of them, and one group per tenant and agent.
type Clarification struct {
	Since  time.Time               `json:"since"`
	Until  time.Time               `json:"until"`
	Total  ClarificationMeasures   `json:"total"`
	Groups []ClarificationMeasures `json:"groups"`
}

// ClarificationMeasures are the standard clarification measures of one
// group of questions. Rates are fractions of Asked (0 when nothing was
// asked); times are seconds from asked to answered.
type ClarificationMeasures struct {
	Tenant string `json:"tenant,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Asked  int64  `json:"asked"`
	// By how each question stands now.
	Answered   int64 `json:"answered"`
	Declined   int64 `json:"declined"`
	TimedOut   int64 `json:"timed_out"`
	Cancelled  int64 `json:"cancelled"`
	Superseded int64 `json:"superseded"`
	Failed     int64 `json:"failed"`
	Pending    int64 `json:"pending"`
	// Repeated: asked again for a missing_field the job already had
	// answered. Reopened: asked within ReopenWindow of an answer on the job.
	Repeated        int64   `json:"repeated"`
	Reopened        int64   `json:"reopened"`
	ResolutionRate  float64 `json:"resolution_rate"`
	DeclineRate     float64 `json:"decline_rate"`
	AbandonmentRate float64 `json:"abandonment_rate"`
	RepetitionRate  float64 `json:"repetition_rate"`
	ReopenRate      float64 `json:"reopen_rate"`
	TimeToAnswerP50 float64 `json:"time_to_answer_p50_seconds"`
	TimeToAnswerP90 float64 `json:"time_to_answer_p90_seconds"`
	// GateRefusals counts the gate's refusals in the window by code;
	// PrematureActionsBlocked those that held back an action (every code
	// but allowed, invalid and unavailable).
	GateRefusals            map[string]int64 `json:"gate_refusals"`
	PrematureActionsBlocked int64            `json:"premature_actions_blocked"`
}
