package principal

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Principal is who published a message, as its credential says.
type Principal struct {
	Kind    string
	Name    string
	Tenant  string
	ActsFor string
	UserKey string
	// IssuedAt and Expires are Unix seconds; Expires 0 never.
	IssuedAt int64
	Expires  int64
}

// Identity is who a person's credential acts as: its name.
func (p *Principal) Identity() string { return p.Name }

// ErrUnstamped is From's error for a message that did not cross an
// import from the agents' or people's account.
var ErrUnstamped = errors.New("principal: the message carries no credential")

// Verifier reads the credential the server stamped on a message that
// crossed from the agents' or people's account (the Nats-Request-Info
// header, which the server sets and a client cannot).
type Verifier struct {
	agents, acting, people string
}

// NewVerifier trusts credentials signed by the accounts' keys (public
// keys) of agents, of agents acting for a person, and of people.
func NewVerifier(agentsAccount, actingAccount, peopleAccount string) *Verifier {
	return &Verifier{agents: agentsAccount, acting: actingAccount, people: peopleAccount}
}

// Verifier is the Verifier of credentials these keys issue.
func (k *Keys) Verifier() *Verifier {
	return NewVerifier(pub(k.Agents), pub(k.Acting), pub(k.People))
}

// credentialOf is what names a message's credential: the stamp NATS put
// on it, which is the same for every message of a connection (but for
// its round-trip time, which changes now and then).
func credentialOf(h nats.Header) string { return h.Get(server.ClientInfoHdr) }

// From reads the principal that published a message with header h.
func (v *Verifier) From(h nats.Header) (*Principal, error) {
	raw := h.Get(server.ClientInfoHdr)
	if raw == "" {
		return nil, ErrUnstamped
	}
	var ci server.ClientInfo
	if err := json.Unmarshal([]byte(raw), &ci); err != nil {
		return nil, fmt.Errorf("principal: unreadable %s: %w", server.ClientInfoHdr, err)
	}
	if ci.Jwt == "" {
		return nil, ErrUnstamped
	}
	uc, err := jwt.DecodeUserClaims(ci.Jwt)
	if err != nil {
		return nil, fmt.Errorf("principal: unreadable credential: %w", err)
	}
	kind := ""
	switch {
	case (uc.Issuer == v.agents && ci.Account == v.agents) || (uc.Issuer == v.acting && ci.Account == v.acting):
		kind = KindAgent
	case uc.Issuer == v.people && ci.Account == v.people:
		kind = KindPerson
	default:
		return nil, fmt.Errorf("principal: credential %q was not issued for askbridge's agents or people", uc.Name)
	}
	p := &Principal{Kind: kind, Name: uc.Name, UserKey: uc.Subject, IssuedAt: uc.IssuedAt, Expires: uc.Expires}
	for _, t := range uc.Tags {
		switch {
		case strings.HasPrefix(t, tagTenant):
			p.Tenant = unhex(t[len(tagTenant):])
		case strings.HasPrefix(t, tagActsFor):
			p.ActsFor = unhex(t[len(tagActsFor):])
		}
	}
	if kind == KindAgent && p.Tenant == "" {
		return nil, fmt.Errorf("principal: agent credential %q names no tenant", uc.Name)
	}
	return p, nil
}

func unhex(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		return ""
	}
	return string(b)
}
