package principal

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// Account names, as NATS shows them.
const (
	AccountService = "ASKBRIDGE"
	AccountAgents  = "AGENTS"
	AccountActing  = "ACTING"
	AccountPeople  = "PEOPLE"
	AccountSystem  = "SYS"
)

// IntakePrefix is where what agents and people publish reaches the
// service account: ask.v1.question.acme.job-1 published by an agent
// arrives as askbridge.in.agent.question.acme.job-1, stamped by the
// server with the agent's credential (the Nats-Request-Info header).
const IntakePrefix = "askbridge.in"

// Kinds of credential.
const (
	KindAgent  = "agent"
	KindPerson = "person"
	KindAdmin  = "admin"
)

// agentImports are the subjects an agent publishes to, as they are named
// in the contract. An agent acting for a person crosses into the service
// account with each under IntakePrefix.agent.
var agentImports = append(slices.Clone(AgentPublishes), "gate", "api")

// agentDirect are the subjects an agent that acts for no one publishes
// to straight into the service account: the subject names the tenant,
// its permissions allow only its own, and the body is the agent's to say,
// so nothing is left for the intake to check or stamp.
var agentDirect = []string{"question", "executed", "notice", "gate"}

// agentStamped are the subjects of an agent that acts for no one that
// cross the intake all the same: the API, whose requests name their
// tenant in the body, and cancels, whose by, roles and reply_to only a
// front-end may set (a person's /ask cancel), and which the stream could
// not tell from a front-end's.
var agentStamped = []string{"cancel", "api"}

// AgentPublishes are the durable subjects an agent publishes to.
var AgentPublishes = []string{"question", "cancel", "executed", "notice"}

// personImports are the subjects a person publishes to.
var personImports = []string{"answer", "api"}

// accountClaims are the claims of every account, revocations included.
// revoked maps a user's public key to the time its credentials were
// revoked (JWT revocations: credentials issued before it are refused).
func (k *Keys) accountClaims(revoked map[string]int64) ([]*jwt.AccountClaims, error) {
	svc := jwt.NewAccountClaims(pub(k.Service))
	svc.Name = AccountService
	svc.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	add := func(e *jwt.Export) { svc.Exports.Add(e) }
	add(&jwt.Export{Name: "agents' intake", Subject: jwt.Subject(IntakePrefix + "." + KindAgent + ".>"), Type: jwt.Service})
	add(&jwt.Export{Name: "people's intake", Subject: jwt.Subject(IntakePrefix + "." + KindPerson + ".>"), Type: jwt.Service})
	for _, what := range agentDirect {
		add(&jwt.Export{Name: "agents' " + what, Subject: jwt.Subject("ask.v1." + what + ".>"), Type: jwt.Service})
	}
	add(&jwt.Export{Name: "events", Subject: "ask.v1.event.>", Type: jwt.Stream})
	add(&jwt.Export{Name: "resumes", Subject: "ask.v1.resume.>", Type: jwt.Stream})
	add(&jwt.Export{Name: "inboxes", Subject: "_INBOX.>", Type: jwt.Stream})

	agents := jwt.NewAccountClaims(pub(k.Agents))
	agents.Name = AccountAgents
	for _, what := range agentDirect {
		agents.Imports.Add(&jwt.Import{Account: pub(k.Service), Subject: jwt.Subject("ask.v1." + what + ".>"), Type: jwt.Service})
	}
	for _, what := range agentStamped {
		agents.Imports.Add(intakeImport(pub(k.Service), KindAgent, what))
	}
	agentStreams(agents, pub(k.Service))

	acting := jwt.NewAccountClaims(pub(k.Acting))
	acting.Name = AccountActing
	for _, what := range agentImports {
		acting.Imports.Add(intakeImport(pub(k.Service), KindAgent, what))
	}
	agentStreams(acting, pub(k.Service))

	people := jwt.NewAccountClaims(pub(k.People))
	people.Name = AccountPeople
	for _, s := range personImports {
		people.Imports.Add(intakeImport(pub(k.Service), KindPerson, s))
	}
	people.Imports.Add(&jwt.Import{Account: pub(k.Service), Subject: "_INBOX.>", Type: jwt.Stream})

	sys := jwt.NewAccountClaims(pub(k.System))
	sys.Name = AccountSystem

	all := []*jwt.AccountClaims{sys, svc, agents, people}
	if k.Acting != nil {
		all = append(all, acting)
	}
	for _, ac := range all[1:] {
		ac.Revocations = jwt.RevocationList{}
		for user, at := range revoked {
			ac.Revocations[user] = at
		}
	}
	return all, nil
}

// agentStreams imports what an agent reads: events, resumes and replies.
func agentStreams(ac *jwt.AccountClaims, service string) {
	for _, s := range []string{"ask.v1.event.>", "ask.v1.resume.>", "_INBOX.>"} {
		ac.Imports.Add(&jwt.Import{Account: service, Subject: jwt.Subject(s), Type: jwt.Stream})
	}
}

// intakeImport brings the contract's subject ask.v1.<what>.> into an
// account; publishing there reaches the service account under
// IntakePrefix.<kind>.<what>.>, stamped with the publisher's credential.
func intakeImport(service, kind, what string) *jwt.Import {
	return &jwt.Import{
		Account:      service,
		Subject:      jwt.Subject(IntakePrefix + "." + kind + "." + what + ".>"),
		LocalSubject: jwt.RenamingSubject("ask.v1." + what + ".>"),
		Type:         jwt.Service,
		Share:        true,
	}
}

// accountJWTs signs every account's claims with the operator key.
func (k *Keys) accountJWTs(revoked map[string]int64) (map[string]string, error) {
	claims, err := k.accountClaims(revoked)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(claims))
	for _, ac := range claims {
		token, err := ac.Encode(k.Operator)
		if err != nil {
			return nil, fmt.Errorf("principal: sign account %s: %w", ac.Name, err)
		}
		out[ac.Subject] = token
	}
	return out, nil
}

// Configure sets the server options that make the embedded server trust
// only credentials askbridge issued: operator mode, with the accounts
// held in memory (their revocations are pushed with Revoke).
func (k *Keys) Configure(o *server.Options, revoked map[string]int64) error {
	op := jwt.NewOperatorClaims(pub(k.Operator))
	op.Name = "askbridge"
	op.SystemAccount = pub(k.System)
	opJWT, err := op.Encode(k.Operator)
	if err != nil {
		return fmt.Errorf("principal: sign the operator: %w", err)
	}
	opClaims, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		return fmt.Errorf("principal: read the operator: %w", err)
	}
	accounts, err := k.accountJWTs(revoked)
	if err != nil {
		return err
	}
	res := &server.MemAccResolver{}
	for pubKey, token := range accounts {
		if err := res.Store(pubKey, token); err != nil {
			return fmt.Errorf("principal: keep account %s: %w", pubKey, err)
		}
	}
	o.TrustedOperators = []*jwt.OperatorClaims{opClaims}
	o.SystemAccount = pub(k.System)
	o.AccountResolver = res
	return nil
}

// Apply pushes the accounts, with revoked's revocations, to a running
// server: connections of a revoked credential are closed at once, and
// new ones refused.
func (k *Keys) Apply(s *server.Server, revoked map[string]int64) error {
	claims, err := k.accountClaims(revoked)
	if err != nil {
		return err
	}
	for _, ac := range claims[1:] {
		token, err := ac.Encode(k.Operator)
		if err != nil {
			return fmt.Errorf("principal: sign account %s: %w", ac.Name, err)
		}
		decoded, err := jwt.DecodeAccountClaims(token)
		if err != nil {
			return fmt.Errorf("principal: read account %s: %w", ac.Name, err)
		}
		if r := s.AccountResolver(); r != nil {
			if err := r.Store(ac.Subject, token); err != nil {
				return fmt.Errorf("principal: keep account %s: %w", ac.Name, err)
			}
		}
		acc, err := s.LookupAccount(ac.Subject)
		if err != nil {
			return fmt.Errorf("principal: account %s: %w", ac.Name, err)
		}
		s.UpdateAccountClaims(acc, decoded)
	}
	return nil
}

// ServerConfig is the part of a nats-server configuration that makes a
// NATS cluster trust askbridge's credentials, as the embedded server does:
// the operator, the system account, and every account's JWT preloaded in
// a memory resolver (docs/deploy.md, "Accounts and credentials"). Each
// node includes it; it holds no secret.
func (k *Keys) ServerConfig(revoked map[string]int64) (string, error) {
	op := jwt.NewOperatorClaims(pub(k.Operator))
	op.Name = "askbridge"
	op.SystemAccount = pub(k.System)
	opJWT, err := op.Encode(k.Operator)
	if err != nil {
		return "", fmt.Errorf("principal: sign the operator: %w", err)
	}
	claims, err := k.accountClaims(revoked)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# askbridge's accounts: made by `askbridge creds nats-config`; include it in every node's configuration.\n")
	fmt.Fprintf(&b, "operator: %s\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n", opJWT, pub(k.System))
	for _, ac := range claims {
		token, err := ac.Encode(k.Operator)
		if err != nil {
			return "", fmt.Errorf("principal: sign account %s: %w", ac.Name, err)
		}
		fmt.Fprintf(&b, "  # %s\n  %s: %s\n", ac.Name, ac.Subject, token)
	}
	b.WriteString("}\n")
	return b.String(), nil
}
