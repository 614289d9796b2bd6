package principal

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// signingKeys are, by account, the signing keys whose users are the
	// account's (an operator's own accounts).
	signingKeys map[string][]string
}

// NewVerifier trusts credentials signed by the accounts' keys (public
// keys) of agents, of agents acting for a person, and of people.
func NewVerifier(agentsAccount, actingAccount, peopleAccount string) *Verifier {
	return &Verifier{agents: agentsAccount, acting: actingAccount, people: peopleAccount}
}

// Verifier is the Verifier of credentials these keys issue: for an
// operator's own accounts, those signed by the accounts' signing keys.
func (k *Keys) Verifier() *Verifier {
	v := NewVerifier(pub(k.Agents), pub(k.Acting), pub(k.People))
	v.signingKeys = k.signingKeys
	return v
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
	// A user signed by a signing key names its account; the key must be
	// one of that account's.
	account := uc.Issuer
	if uc.IssuerAccount != "" && uc.IssuerAccount != uc.Issuer {
		if !slices.Contains(v.signingKeys[uc.IssuerAccount], uc.Issuer) {
			return nil, fmt.Errorf("principal: credential %q was signed by a key that is not a signing key of askbridge's agents' or people's accounts", uc.Name)
		}
		account = uc.IssuerAccount
	}
	kind := ""
	switch {
	case (account == v.agents && ci.Account == v.agents) || (account == v.acting && ci.Account == v.acting):
		kind = KindAgent
	case account == v.people && ci.Account == v.people:
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
