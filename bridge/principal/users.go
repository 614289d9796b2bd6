package principal

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Spec says what a credential is for.
type Spec struct {
	Kind string
	// Name is the credential's name: unique, and its inbox prefix
	// (_INBOX.<name>.). A person's name is their identity (cli:alice).
	Name string
	// Tenant is an agent's tenant.
	Tenant string
	// ActsFor is the owner every question an agent asks has.
	ActsFor string
	// Expires ends the credential; zero never.
	Expires time.Time
	// InProcessOnly limits it to connections inside the service's process.
	InProcessOnly bool
}

// Issued is a minted credential: the .creds file's text and the public
// key NATS knows the user by.
type Issued struct {
	Creds    []byte
	JWT      string
	Seed     string
	UserKey  string
	IssuedAt int64
}

// tags carry what the runtime reads back from a credential (Principal).
// NATS lower-cases tags, so values are hex.
const (
	tagKind    = "askbridge-kind:"
	tagTenant  = "askbridge-tenant:"
	tagActsFor = "askbridge-acts-for:"
)

// InboxPrefix is the only inbox a credential may read its replies on.
func InboxPrefix(name string) string { return "_INBOX." + name }

// CheckName says what is wrong with a credential name, or nil: it must be
// one NATS subject token, since it is the inbox prefix.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("a credential needs a name")
	case len(name) > 64:
		return fmt.Errorf("name %q: at most 64 characters", name)
	case strings.ContainsAny(name, ".*> \t\r\n\"'\\/"):
		return fmt.Errorf("name %q: letters, digits, '-', '_', ':' and '@' only", name)
	}
	return nil
}

// Mint issues a credential of s.Kind, signed by the account it belongs to:
// with the account's own key, or, for an operator's own account, with the
// account's signing key, the credential naming its account.
func (k *Keys) Mint(s Spec) (*Issued, error) {
	if err := CheckName(s.Name); err != nil {
		return nil, err
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("principal: make a user key: %w", err)
	}
	uc := jwt.NewUserClaims(pub(user))
	// Its IssuedAt is set by Encode: when it is signed.
	uc.Name = s.Name
	if !s.Expires.IsZero() {
		uc.Expires = s.Expires.Unix()
	}
	uc.Tags.Add(tagKind + hex.EncodeToString([]byte(s.Kind)))
	var account nkeys.KeyPair
	switch s.Kind {
	case KindAgent:
		if s.Tenant == "" {
			return nil, errors.New("an agent's credential needs a tenant")
		}
		account = k.Agents
		uc.Tags.Add(tagTenant + hex.EncodeToString([]byte(s.Tenant)))
		if s.ActsFor != "" {
			if k.Acting == nil {
				return nil, errors.New("these keys have no account for agents that act for a person yet: start the service once with them (or run askbridge creds nats-config), then mint it again")
			}
			account = k.Acting
			uc.Tags.Add(tagActsFor + hex.EncodeToString([]byte(s.ActsFor)))
		}
		uc.Permissions = agentPermissions(s.Name, s.Tenant)
	case KindPerson:
		account = k.People
		uc.Permissions = personPermissions(s.Name)
	case KindAdmin:
		account = k.Service
	default:
		return nil, fmt.Errorf("principal: no kind of credential %q", s.Kind)
	}
	if s.InProcessOnly {
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeInProcess)
	}
	signer := account
	if sk := k.signers[pub(account)]; sk != nil {
		signer, uc.IssuerAccount = sk, pub(account)
	}
	token, err := uc.Encode(signer)
	if err != nil {
		return nil, fmt.Errorf("principal: sign credential %s: %w", s.Name, err)
	}
	seed, err := user.Seed()
	if err != nil {
		return nil, fmt.Errorf("principal: credential %s: %w", s.Name, err)
	}
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		return nil, fmt.Errorf("principal: credential %s: %w", s.Name, err)
	}
	return &Issued{Creds: creds, JWT: token, Seed: string(seed), UserKey: pub(user), IssuedAt: uc.IssuedAt}, nil
}

// AgentAPI are the request/reply operations an agent may call, for its
// own tenant only: show, queue and trace, and resumes (the job's recorded
// outcomes, which bridge/agent Await reads instead of the stream).
var AgentAPI = []string{"show", "queue", "trace", "resumes"}

// agentPermissions: publish the tenant's questions, cancels, execution
// reports and notices; ask its gate; the read-only API calls of AgentAPI
// for its own tenant; read its events and resumes live; and replies on
// its own inbox. Nothing else.
func agentPermissions(name, tenant string) jwt.Permissions {
	var p jwt.Permissions
	for _, s := range append(slices.Clone(AgentPublishes), "gate") {
		p.Pub.Allow.Add("ask.v1." + s + "." + tenant + ".>")
	}
	for _, op := range AgentAPI {
		p.Pub.Allow.Add("ask.v1.api." + op)
	}
	p.Sub.Allow.Add("ask.v1.event."+tenant+".>", "ask.v1.resume."+tenant+".>", InboxPrefix(name)+".>")
	return p
}

// personPermissions: answer attempts and API requests, which the runtime
// takes as the person's whatever their bodies say, and replies on the
// person's own inbox.
func personPermissions(name string) jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add("ask.v1.answer.>", "ask.v1.api.>")
	p.Sub.Allow.Add(InboxPrefix(name) + ".>")
	return p
}

// ReadCreds reads the name and kind of the credential in a .creds file,
// for the inbox prefix its holder must use. It reads no secret.
func ReadCreds(path string) (name, kind string, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("credentials %s: %w", path, err)
	}
	token, err := jwt.ParseDecoratedJWT(raw)
	if err != nil {
		return "", "", fmt.Errorf("credentials %s: not a NATS credentials file", path)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return "", "", fmt.Errorf("credentials %s: not a NATS credentials file", path)
	}
	for _, t := range uc.Tags {
		if strings.HasPrefix(t, tagKind) {
			kind = unhex(t[len(tagKind):])
		}
	}
	return uc.Name, kind, nil
}

// AccountOf is the name of the account a credential of kind is a user
// of; acting is an agent's that acts for a person.
func AccountOf(kind string, acting bool) string {
	switch {
	case kind == KindAgent && acting:
		return AccountActing
	case kind == KindAgent:
		return AccountAgents
	case kind == KindPerson:
		return AccountPeople
	}
	return AccountService
}
