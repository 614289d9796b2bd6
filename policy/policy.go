// Package policy is the operator's rules for consequential actions
// (ASK_POLICY, docs/safety.md): which actions need an approved proposal,
// how many distinct people must approve, who may, and up to what amount.
// The agent proposes; the policy, not the agent, decides what needs a
// person.
package policy

import (
	"sync/atomic"

	"github.com/askbridge/askbridge/bridge"
)

// Rule is the policy of one action in one tenant.
type Rule struct {
	// RequireApproval: the gate refuses the action (approval_required)
	// unless an approved proposal for it is named.
	RequireApproval bool `yaml:"require_approval,omitempty"`
	// RequiredApprovals is how many distinct people must approve; 0 and 1
	// both mean one.
	RequiredApprovals int `yaml:"required_approvals,omitempty"`
	// ForbidSelfApproval: the question's owner may not approve
	// (refusal reason self_approval), whatever roles they hold.
	ForbidSelfApproval bool `yaml:"forbid_self_approval,omitempty"`
	// MaxAmount, when set, refuses at intake a proposal whose amount is
	// above it; Currency is the currency it is in.
	MaxAmount *float64 `yaml:"max_amount,omitempty"`
	Currency  string   `yaml:"currency,omitempty"`
	// Approvers, when set, narrow who may approve: roles (owner, admin,
	// operator) or identities (slack:U0FIN). Without it, whoever may
	// answer the question may approve.
	Approvers []string `yaml:"approvers,omitempty"`
}

// Approvals is how many distinct people must approve.
func (r Rule) Approvals() int { return max(r.RequiredApprovals, 1) }

// Tenant is the policy of one tenant.
type Tenant struct {
	Actions map[string]Rule `yaml:"actions"`
}

// Policy is a whole policy file. The zero Policy gates nothing.
type Policy struct {
	Tenants map[string]Tenant `yaml:"tenants"`
	// MCP holds the MCP front door's settings (docs/mcp.md).
	MCP *MCP `yaml:"mcp,omitempty"`
	// People links identities into persons, as ASK_PEOPLE does: roles,
	// answerers, approvals and reminders count people (docs/contract.md,
	// "People").
	People bridge.People `yaml:"people,omitempty"`
}

// MCP is the policy's mcp: section.
type MCP struct {
	// AutoAllow lists the tool uses approve_tool_use allows without
	// asking anyone: a tool (Read), or a tool with its input
	// (Bash(git status), Bash(npm test:*)).
	AutoAllow []string `yaml:"auto_allow,omitempty"`
}

// MCPAutoAllow is the policy's mcp.auto_allow, none for a nil policy.
func (p *Policy) MCPAutoAllow() []string {
	if p == nil || p.MCP == nil {
		return nil
	}
	return p.MCP.AutoAllow
}

// Rule returns the rule of an action in a tenant, and whether there is one.
func (p *Policy) Rule(tenant, action string) (Rule, bool) {
	if p == nil {
		return Rule{}, false
	}
	r, ok := p.Tenants[tenant].Actions[action]
	return r, ok
}

// Holder holds the policy in force, replaced whole on reload (SIGHUP), so
// a reader sees the old policy or the new one, never half of each. The
// zero Holder holds no policy.
type Holder struct{ p atomic.Pointer[Policy] }

// Load returns the policy in force; nil when there is none.
func (h *Holder) Load() *Policy {
	if h == nil {
		return nil
	}
	return h.p.Load()
}

// Store puts p in force.
func (h *Holder) Store(p *Policy) { h.p.Store(p) }

// Count is how many tenants and actions (rules, over all tenants) p has.
func (p *Policy) Count() (tenants, actions int) {
	if p == nil {
		return 0, 0
	}
	for _, t := range p.Tenants {
		actions += len(t.Actions)
	}
	return len(p.Tenants), actions
}
