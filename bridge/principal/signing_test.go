package principal_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/askbridge/askbridge/bridge/principal"
	"github.com/askbridge/askbridge/internal/testenv/nsclayout"
	"github.com/askbridge/askbridge/internal/testenv/poll"
)

// imported is a data directory whose keys were imported from l as nsc
// exports them.
func imported(t *testing.T, l *nsclayout.Layout) (string, *principal.Keys) {
	t.Helper()
	export, data := t.TempDir(), t.TempDir()
	l.Export(t, export)
	if _, err := principal.ImportKeys(data, export); err != nil {
		t.Fatal(err)
	}
	k, err := principal.LoadKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	return data, k
}

// operatorServer is a NATS server in operator mode that trusts l's
// operator and has its accounts' JWTs, as an operator's own NATS does.
func operatorServer(t *testing.T, l *nsclayout.Layout) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	l.Configure(t, o)
	ns, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(poll.Patience) {
		t.Fatal("the server did not start")
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

func connect(t *testing.T, ns *server.Server, is *principal.Issued, name string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL(), nats.UserJWTAndSeed(is.JWT, is.Seed), nats.CustomInboxPrefix(principal.InboxPrefix(name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestMintWithAnAccountSigningKey: with the keys nsc exports (each
// account's JWT and a signing key, no operator key, no account's own
// key), askbridge mints credentials signed by the signing keys that
// name their accounts; the operator's NATS admits them, and the intake's
// verifier reads the credential NATS stamps on what a person and an
// agent acting for one publish.
func TestMintWithAnAccountSigningKey(t *testing.T) {
	l := nsclayout.New(t)
	_, k := imported(t, l)
	if k.OwnOperator() {
		t.Fatal("keys imported from nsc hold an operator key")
	}
	ns := operatorServer(t, l)
	now := time.Now()
	mint := func(s principal.Spec, account string) *principal.Issued {
		t.Helper()
		is, err := k.Mint(s)
		if err != nil {
			t.Fatal(err)
		}
		uc, err := jwt.DecodeUserClaims(is.JWT)
		if err != nil {
			t.Fatal(err)
		}
		sk, _ := l.Signing[account].PublicKey()
		if uc.Issuer != sk || uc.IssuerAccount != l.Identity(account) {
			t.Fatalf("%s: issued by %s for %s, want the signing key %s for the account %s", s.Name, uc.Issuer, uc.IssuerAccount, sk, l.Identity(account))
		}
		return is
	}
	admin := connect(t, ns, mint(principal.Spec{Kind: principal.KindAdmin, Name: "askbridge"}, principal.AccountService), "askbridge")
	intake, err := admin.SubscribeSync(principal.IntakePrefix + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	person := connect(t, ns, mint(principal.Spec{Kind: principal.KindPerson, Name: "cli:alice"}, principal.AccountPeople), "cli:alice")
	acting := connect(t, ns, mint(principal.Spec{Kind: principal.KindAgent, Name: "bot", Tenant: "acme", ActsFor: "cli:ana"}, principal.AccountActing), "bot")
	plain := connect(t, ns, mint(principal.Spec{Kind: principal.KindAgent, Name: "plain-bot", Tenant: "acme"}, principal.AccountAgents), "plain-bot")

	g := principal.NewGuard(k.Verifier(), nil)
	for _, c := range []struct {
		nc      *nats.Conn
		subject string
		want    principal.Principal
	}{
		{person, "ask.v1.answer.acme.job-1.q-1", principal.Principal{Kind: principal.KindPerson, Name: "cli:alice"}},
		{acting, "ask.v1.question.acme.job-1", principal.Principal{Kind: principal.KindAgent, Name: "bot", Tenant: "acme", ActsFor: "cli:ana"}},
		{plain, "ask.v1.api.show", principal.Principal{Kind: principal.KindAgent, Name: "plain-bot", Tenant: "acme"}},
	} {
		if err := c.nc.Publish(c.subject, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		m, err := intake.NextMsg(poll.Patience)
		if err != nil {
			t.Fatalf("%s: what %s published never crossed to the intake: %v", c.want.Name, c.subject, err)
		}
		p, err := g.Check(nats.Header(m.Header), now)
		if err != nil {
			t.Fatalf("%s: the intake refused it: %v", c.want.Name, err)
		}
		if p.Kind != c.want.Kind || p.Name != c.want.Name || p.Tenant != c.want.Tenant || p.ActsFor != c.want.ActsFor {
			t.Fatalf("the intake read %+v, want %+v", p, c.want)
		}
	}
}

// TestAnUnknownSigningKeyIsRefused: a credential signed by a key that is
// no signing key of its account, though it names the account, is
// refused by the operator's NATS and by the intake's verifier.
func TestAnUnknownSigningKeyIsRefused(t *testing.T) {
	l := nsclayout.New(t)
	_, k := imported(t, l)
	ns := operatorServer(t, l)
	rogue, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	userKey, _ := user.PublicKey()
	uc := jwt.NewUserClaims(userKey)
	uc.Name, uc.IssuerAccount = "cli:root", l.Identity(principal.AccountPeople)
	uc.Pub.Allow.Add("ask.v1.answer.>")
	token, err := uc.Encode(rogue)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	if _, err := nats.Connect(ns.ClientURL(), nats.UserJWTAndSeed(token, string(seed))); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("NATS admitted a credential of an unknown signing key: %v", err)
	}
	ci, _ := json.Marshal(server.ClientInfo{Account: l.Identity(principal.AccountPeople), Jwt: token})
	_, err = k.Verifier().From(nats.Header{server.ClientInfoHdr: []string{string(ci)}})
	if err == nil || !strings.Contains(err.Error(), `"cli:root" was signed by a key that is not a signing key`) {
		t.Fatalf("the verifier took a credential of an unknown signing key: %v", err)
	}
}

// TestImportKeysRefusesWhatIsMissingOrTooMuch: each refusal names the
// account and the file, and says what nsc command gives what is missing;
// no seed is ever in one, and nothing is written.
func TestImportKeysRefusesWhatIsMissingOrTooMuch(t *testing.T) {
	l := nsclayout.New(t)
	skPeople, _ := l.Signing[principal.AccountPeople].PublicKey()
	// another signing key listed in an account's JWT, with its seed
	another := func(dir, account string, scoped bool) {
		kp, _ := nkeys.CreateAccount()
		key, _ := kp.PublicKey()
		sks := l.Accounts[account].SigningKeys
		if scoped {
			scope := jwt.NewUserScope()
			scope.Key = key
			scope.Template.Pub.Allow.Add(">")
			sks.AddScopedSigner(scope)
		} else {
			sks.Add(key)
		}
		l.WriteJWT(t, dir, account)
		delete(sks, key)
		nsclayout.WriteSeed(t, dir, kp)
	}
	for _, c := range []struct {
		name  string
		edit  func(dir string)
		wants []string
	}{
		{"no JWT", func(dir string) { os.Remove(filepath.Join(dir, "ACTING.jwt")) },
			[]string{"holds no JWT of the account ACTING", "nsc describe account ACTING --raw --output-file " + "DIR/ACTING.jwt"}},
		{"no signing key", func(dir string) { os.Remove(filepath.Join(dir, skPeople+".nk")) },
			[]string{"holds no signing key of the account PEOPLE", "nsc edit account PEOPLE --sk generate", "nsc export keys --accounts --account PEOPLE --filter KEY --dir DIR"}},
		{"an account's own key", func(dir string) { nsclayout.WriteSeed(t, dir, l.Own[principal.AccountAgents]) },
			[]string{"is the own key of the account AGENTS", "keep the account's own key away from it"}},
		{"the operator's key", func(dir string) {
			op, _ := nkeys.CreateOperator()
			nsclayout.WriteSeed(t, dir, op)
		}, []string{"is the operator key O", "keep the operator's keys away from it"}},
		{"an unknown key", func(dir string) {
			other, _ := nkeys.CreateAccount()
			nsclayout.WriteSeed(t, dir, other)
		}, []string{"which is no signing key of the accounts ASKBRIDGE, AGENTS, ACTING or PEOPLE"}},
		{"two signing keys", func(dir string) { another(dir, principal.AccountAgents, false) },
			[]string{"are both signing keys of the account AGENTS: keep one"}},
		{"a scoped signing key", func(dir string) { another(dir, principal.AccountPeople, true) },
			[]string{"of the account PEOPLE, which is scoped", "give the account a signing key without a scope"}},
		{"two JWTs of an account", func(dir string) {
			raw, _ := os.ReadFile(filepath.Join(dir, "AGENTS.jwt"))
			os.WriteFile(filepath.Join(dir, "agents-again.jwt"), raw, 0o600)
		}, []string{"are both the JWT of the account AGENTS: keep one"}},
	} {
		dir := t.TempDir()
		l.Export(t, dir)
		c.edit(dir)
		data := t.TempDir()
		_, err := principal.ImportKeys(data, dir)
		if err == nil {
			t.Errorf("%s: imported", c.name)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), dir, "DIR")
		for _, want := range c.wants {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %s; want it to say %q", c.name, msg, want)
			}
		}
		seeds, _ := filepath.Glob(filepath.Join(dir, "*.nk"))
		for _, path := range seeds {
			if seed, _ := os.ReadFile(path); strings.Contains(msg, strings.TrimSpace(string(seed))) {
				t.Errorf("%s: the refusal holds a seed", c.name)
			}
		}
		if _, err := principal.LoadKeys(data); !errors.Is(err, principal.ErrNoKeys) {
			t.Errorf("%s: a refused import wrote keys: %v", c.name, err)
		}
	}
}

// TestKeyFileMissingAKeyIsRefused: a key file written by hand, or kept
// half, is refused naming the key it lacks, never showing a seed.
func TestKeyFileMissingAKeyIsRefused(t *testing.T) {
	l := nsclayout.New(t)
	data, _ := imported(t, l)
	path := filepath.Join(data, principal.KeysFile)
	importedFile, _ := os.ReadFile(path)
	own := t.TempDir()
	if _, err := principal.LoadOrCreateKeys(own); err != nil {
		t.Fatal(err)
	}
	ownFile, _ := os.ReadFile(filepath.Join(own, principal.KeysFile))
	for _, c := range []struct {
		name string
		file []byte
		edit func(kf map[string]any)
		want string
	}{
		{"an imported file without an account", importedFile, func(kf map[string]any) { delete(kf, "people") },
			`holds no key of the "people" account`},
		{"an imported account without its signing key", importedFile, func(kf map[string]any) { delete(kf["agents"].(map[string]any), "signing_seed") },
			`the "agents" account has no "signing_seed"`},
		{"an imported account whose signing seed is the account's public key", importedFile, func(kf map[string]any) {
			a := kf["agents"].(map[string]any)
			a["signing_seed"] = a["account"]
		}, `the "agents" account's "signing_seed" is not an account signing key's seed`},
		{"an imported file with askbridge's own operator", importedFile, func(kf map[string]any) {
			var o map[string]any
			json.Unmarshal(ownFile, &o)
			kf["operator"] = o["operator"]
		}, "holds askbridge's own operator key and signing keys of an operator's own accounts"},
		{"askbridge's own file without the operator", ownFile, func(kf map[string]any) { delete(kf, "operator") },
			`holds no "operator" key`},
		{"askbridge's own file without an account", ownFile, func(kf map[string]any) { delete(kf, "agents") },
			`holds no "agents" key`},
	} {
		var kf map[string]any
		if err := json.Unmarshal(c.file, &kf); err != nil {
			t.Fatal(err)
		}
		c.edit(kf)
		raw, _ := json.Marshal(kf)
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := principal.LoadKeys(data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want it to say %s", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), `"S`) || strings.Contains(err.Error(), " SA") || strings.Contains(err.Error(), " SO") {
			t.Errorf("%s: the refusal may show a seed: %v", c.name, err)
		}
	}
}

// TestImportKeysAgain: the same accounts may be imported again (a new
// signing key); another operator's accounts do not replace the keys
// every credential so far was issued with.
func TestImportKeysAgain(t *testing.T) {
	l := nsclayout.New(t)
	data, _ := imported(t, l)
	// The operator gives AGENTS a new signing key and retires the old one.
	fresh, _ := nkeys.CreateAccount()
	key, _ := fresh.PublicKey()
	old, _ := l.Signing[principal.AccountAgents].PublicKey()
	l.Accounts[principal.AccountAgents].SigningKeys = jwt.SigningKeys{}
	l.Accounts[principal.AccountAgents].SigningKeys.Add(key)
	l.Signing[principal.AccountAgents] = fresh
	again := t.TempDir()
	l.Export(t, again)
	out, err := principal.ImportKeys(data, again)
	if err != nil {
		t.Fatalf("the same accounts imported again: %v", err)
	}
	if out[1].Name != principal.AccountAgents || out[1].SigningKey != key || key == old {
		t.Fatalf("imported %+v, want AGENTS signed with %s", out, key)
	}
	k, err := principal.LoadKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	is, err := k.Mint(principal.Spec{Kind: principal.KindAgent, Name: "bot", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if uc, _ := jwt.DecodeUserClaims(is.JWT); uc == nil || uc.Issuer != key {
		t.Fatalf("minted with %v, want the new signing key", uc)
	}

	other := nsclayout.New(t)
	dir := t.TempDir()
	other.Export(t, dir)
	if _, err := principal.ImportKeys(data, dir); err == nil || !strings.Contains(err.Error(), "holds the keys of other accounts (ASKBRIDGE is A") {
		t.Fatalf("another operator's accounts replaced the keys: %v", err)
	}
	if _, err := principal.ImportKeys(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
}
