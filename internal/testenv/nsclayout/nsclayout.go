// Package nsclayout lays out askbridge's accounts as an operator who runs
// NATS with nsc keeps them (docs/deploy.md, "The same layout with nsc"):
// the operator's key and the accounts' own keys stay with the test, each
// account's JWT lists a signing key, and Export writes what nsc exports
// for askbridge, each account's JWT and its signing key's seed, for
// `askbridge creds import-keys`.
package nsclayout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/askbridge/askbridge/bridge/principal"
)

// Layout is an operator's NATS accounts for askbridge.
type Layout struct {
	operator nkeys.KeyPair
	opJWT    string
	system   string
	// Accounts are the accounts' claims by name (ASKBRIDGE, AGENTS,
	// ACTING, PEOPLE, SYS), as the operator signed them.
	Accounts map[string]*jwt.AccountClaims
	// Signing are the signing keys by account name (not SYS's).
	Signing map[string]nkeys.KeyPair
	// Own are the accounts' own keys by name, which the operator keeps.
	Own map[string]nkeys.KeyPair
}

// New makes the operator, its accounts with the imports and exports
// askbridge's accounts have, and a signing key for each.
func New(t testing.TB) *Layout {
	t.Helper()
	// The accounts' layout is askbridge's own operator's: the same
	// exports, imports and JetStream limits as the docs' nsc commands.
	own, err := principal.LoadOrCreateKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var o server.Options
	if err := own.Configure(&o, nil); err != nil {
		t.Fatal(err)
	}
	l := &Layout{operator: own.Operator, system: o.SystemAccount, Accounts: map[string]*jwt.AccountClaims{},
		Signing: map[string]nkeys.KeyPair{}, Own: map[string]nkeys.KeyPair{}}
	if l.opJWT, err = o.TrustedOperators[0].Encode(own.Operator); err != nil {
		t.Fatal(err)
	}
	for _, acc := range []nkeys.KeyPair{own.System, own.Service, own.Agents, own.Acting, own.People} {
		key, _ := acc.PublicKey()
		token, err := o.AccountResolver.Fetch(key)
		if err != nil {
			t.Fatal(err)
		}
		ac, err := jwt.DecodeAccountClaims(token)
		if err != nil {
			t.Fatal(err)
		}
		if ac.Name != principal.AccountSystem {
			sk, err := nkeys.CreateAccount()
			if err != nil {
				t.Fatal(err)
			}
			skPub, _ := sk.PublicKey()
			ac.SigningKeys.Add(skPub)
			l.Signing[ac.Name] = sk
		}
		l.Accounts[ac.Name], l.Own[ac.Name] = ac, acc
	}
	return l
}

// JWT is the account's JWT as the operator signs it now.
func (l *Layout) JWT(t testing.TB, name string) string {
	t.Helper()
	token, err := l.Accounts[name].Encode(l.operator)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// Configure sets a server's options to trust the operator, with every
// account's JWT in a memory resolver.
func (l *Layout) Configure(t testing.TB, o *server.Options) {
	t.Helper()
	op, err := jwt.DecodeOperatorClaims(l.opJWT)
	if err != nil {
		t.Fatal(err)
	}
	res := &server.MemAccResolver{}
	for name, ac := range l.Accounts {
		if err := res.Store(ac.Subject, l.JWT(t, name)); err != nil {
			t.Fatal(err)
		}
	}
	o.TrustedOperators, o.SystemAccount, o.AccountResolver = []*jwt.OperatorClaims{op}, l.system, res
}

// WriteJWT writes the account's JWT into dir as NAME.jwt, decorated, as
// nsc describe account NAME --raw --output-file does.
func (l *Layout) WriteJWT(t testing.TB, dir, name string) {
	t.Helper()
	decorated, err := jwt.DecorateJWT(l.JWT(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".jwt"), decorated, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Export writes into dir what nsc exports for `askbridge creds
// import-keys`: NAME.jwt, each account's decorated JWT (nsc describe
// account NAME --raw --output-file), and <public key>.nk, each signing
// key's seed (nsc export keys).
func (l *Layout) Export(t testing.TB, dir string) {
	t.Helper()
	for name, sk := range l.Signing {
		l.WriteJWT(t, dir, name)
		WriteSeed(t, dir, sk)
	}
}

// WriteSeed writes a key's seed into dir as nsc export keys does.
func WriteSeed(t testing.TB, dir string, kp nkeys.KeyPair) string {
	t.Helper()
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := kp.PublicKey()
	path := filepath.Join(dir, key+".nk")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Identity is the account's own key, which the operator keeps.
func (l *Layout) Identity(name string) string { return l.Accounts[name].Subject }
