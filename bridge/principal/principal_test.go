package principal

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestKeysAreTheOwnersAlone: the keys are made once, kept mode 0600 in a
// 0700 folder, and read back the same.
func TestKeysAreTheOwnersAlone(t *testing.T) {
	dir := t.TempDir()
	k, err := LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{filepath.Join(dir, KeysFile): 0o600, filepath.Dir(filepath.Join(dir, KeysFile)): 0o700} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", path, err, st.Mode().Perm(), want)
		}
	}
	again, err := LoadOrCreateKeys(dir)
	if err != nil || pub(again.Agents) != pub(k.Agents) || pub(again.Operator) != pub(k.Operator) {
		t.Fatalf("keys read back differ: %v", err)
	}
	if _, err := LoadKeys(t.TempDir()); err != ErrNoKeys {
		t.Fatalf("LoadKeys of an empty folder: %v", err)
	}
}

// stamp is the Nats-Request-Info header NATS puts on a message a user of
// account acc published across a shared import.
func stamp(t *testing.T, issued *Issued, acc string) nats.Header {
	t.Helper()
	ci, _ := json.Marshal(server.ClientInfo{Account: acc, Jwt: issued.JWT})
	return nats.Header{server.ClientInfoHdr: []string{string(ci)}}
}

// TestVerifierReadsWhatTheCredentialSays, and nothing a credential of
// other keys says.
func TestVerifierReadsWhatTheCredentialSays(t *testing.T) {
	k, err := LoadOrCreateKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	agent, err := k.Mint(Spec{Kind: KindAgent, Name: "bot", Tenant: "Acme", ActsFor: "slack:U0OWNER"})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(k.Verifier(), nil)
	p, err := g.Check(stamp(t, agent, pub(k.Acting)), now)
	if err != nil || p.Kind != KindAgent || p.Name != "bot" || p.Tenant != "Acme" || p.ActsFor != "slack:U0OWNER" {
		t.Fatalf("agent: %+v, %v", p, err)
	}
	if _, err := g.Check(stamp(t, agent, pub(k.People)), now); err == nil {
		t.Error("an agent's credential read as a person's")
	}
	other, _ := LoadOrCreateKeys(t.TempDir())
	forged, _ := other.Mint(Spec{Kind: KindPerson, Name: "cli:root"})
	if _, err := g.Check(stamp(t, forged, pub(k.People)), now); err == nil {
		t.Error("a credential of other keys was taken")
	}
	if _, err := g.Check(nats.Header{}, now); err != ErrUnstamped {
		t.Errorf("an unstamped message: %v", err)
	}
	if _, err := g.Check(stamp(t, agent, pub(k.Agents)), now); err == nil {
		t.Error("a credential acting for a person read from the account of agents that act for no one")
	}
	// Revoked as `askbridge creds revoke` does, once it is issued: the
	// JWT's issue time is when it was signed, which may be the second
	// after now.
	g.SetRevoked(map[string]int64{agent.UserKey: agent.IssuedAt})
	if _, err := g.Check(stamp(t, agent, pub(k.Acting)), now); err == nil || !strings.Contains(err.Error(), `"bot" is revoked`) {
		t.Errorf("a revoked credential: %v", err)
	}
	short, _ := k.Mint(Spec{Kind: KindPerson, Name: "cli:ana", Expires: now.Add(time.Hour)})
	if _, err := g.Check(stamp(t, short, pub(k.People)), now.Add(2*time.Hour)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired credential: %v", err)
	}
}

// TestMintedCredentialsAreStandard: a .creds file nats.go reads, whose
// user JWT carries the permissions of its kind.
func TestMintedCredentialsAreStandard(t *testing.T) {
	k, _ := LoadOrCreateKeys(t.TempDir())
	issued, err := k.Mint(Spec{Kind: KindAgent, Name: "bot", Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bot.creds")
	if err := os.WriteFile(path, issued.Creds, 0o600); err != nil {
		t.Fatal(err)
	}
	name, kind, err := ReadCreds(path)
	if err != nil || name != "bot" || kind != KindAgent {
		t.Fatalf("ReadCreds: %q %q %v", name, kind, err)
	}
	uc, err := jwt.DecodeUserClaims(issued.JWT)
	if err != nil {
		t.Fatal(err)
	}
	if !uc.Pub.Allow.Contains("ask.v1.question.acme.>") || uc.Pub.Allow.Contains("ask.v1.answer.>") || !uc.Sub.Allow.Contains("_INBOX.bot.>") {
		t.Fatalf("agent permissions: %+v", uc.Permissions)
	}
	for _, bad := range []string{"", "a.b", "a b", "a*", strings.Repeat("x", 65)} {
		if _, err := k.Mint(Spec{Kind: KindPerson, Name: bad}); err == nil {
			t.Errorf("minted a credential named %q", bad)
		}
	}
}

// TestRegisterNamesOnce: a live name is refused, a revoked one may be
// reused, and revoking an unknown name lists the live ones.
func TestRegisterNamesOnce(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRegister(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := r.Add(Entry{Name: "bot", Kind: KindAgent, UserKey: "U1"}, now); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(Entry{Name: "bot", Kind: KindAgent, UserKey: "U2"}, now); err == nil {
		t.Fatal("a live name was issued twice")
	}
	if err := r.Revoke("nobody", now); err == nil || !strings.Contains(err.Error(), "issued: bot") {
		t.Fatalf("revoke of an unknown name: %v", err)
	}
	if err := r.Revoke("bot", now); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(Entry{Name: "bot", Kind: KindAgent, UserKey: "U3"}, now); err != nil {
		t.Fatalf("a revoked name could not be reused: %v", err)
	}
	if err := r.Save(); err != nil {
		t.Fatal(err)
	}
	back, err := OpenRegister(dir)
	if err != nil || len(back.Entries) != 2 || back.Revocations()["U1"] != now.Unix() {
		t.Fatalf("read back: %+v, %v", back, err)
	}
}

// startServer is a NATS server with JetStream that trusts the keys it makes
// under dir, as the embedded one does; it stops when the test ends.
func startServer(t *testing.T, dir string) (*Keys, *server.Server) {
	t.Helper()
	k, err := LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true}
	if err := k.Configure(o, nil); err != nil {
		t.Fatal(err)
	}
	ns, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("the server did not start")
	}
	t.Cleanup(ns.Shutdown)
	return k, ns
}

// TestInProcessCredentialsRefusedOverTCP: the service's own credential
// works in process only, and no connection without one is admitted.
func TestInProcessCredentialsRefusedOverTCP(t *testing.T) {
	dir := t.TempDir()
	k, ns := startServer(t, dir)
	self, err := k.Mint(Spec{Kind: KindAdmin, Name: "askbridge", InProcessOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.UserJWTAndSeed(self.JWT, self.Seed))
	if err != nil {
		t.Fatalf("in process: %v", err)
	}
	nc.Close()
	if _, err := nats.Connect(ns.ClientURL(), nats.UserJWTAndSeed(self.JWT, self.Seed)); err == nil {
		t.Fatal("the in-process credential connected over TCP")
	}
	if _, err := nats.Connect(ns.ClientURL()); err == nil {
		t.Fatal("a client without credentials connected")
	}
}

// TestKeysKeptBeforeTheActingAccountGainIt: a key file without the acting
// account's key keeps every key it has and gains that one at the
// service's start; until then an acting credential is refused, saying so.
func TestKeysKeptBeforeTheActingAccountGainIt(t *testing.T) {
	dir := t.TempDir()
	k, err := LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeysFile)
	raw, _ := os.ReadFile(path)
	var kf map[string]string
	if err := json.Unmarshal(raw, &kf); err != nil {
		t.Fatal(err)
	}
	delete(kf, "acting")
	raw, _ = json.Marshal(kf)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	old, err := LoadKeys(dir)
	if err != nil || old.Acting != nil {
		t.Fatalf("LoadKeys of a file without the acting key: %v, acting %v", err, old.Acting)
	}
	if _, err := old.Mint(Spec{Kind: KindAgent, Name: "bot", Tenant: "acme", ActsFor: "cli:ana"}); err == nil || !strings.Contains(err.Error(), "start the service once with them") {
		t.Errorf("an acting credential without the key: %v", err)
	}
	again, err := LoadOrCreateKeys(dir)
	if err != nil || again.Acting == nil || pub(again.Agents) != pub(k.Agents) || pub(again.Operator) != pub(k.Operator) {
		t.Fatalf("LoadOrCreateKeys: %v; the acting key %v, the others kept: %v", err, again.Acting, pub(again.Agents) == pub(k.Agents))
	}
	if last, _ := LoadKeys(dir); last == nil || pub(last.Acting) != pub(again.Acting) {
		t.Error("the acting key made at start was not kept")
	}
}

// TestMintDoesNotLoseRepliesInFlight: a credential minted while an agent's
// request waits for its reply (a gate request) leaves the register
// changed; the service re-reads it, and the reply still reaches the agent.
// Re-applying the accounts' claims when no revocation changed dropped the
// replies then in flight across the accounts' imports.
func TestMintDoesNotLoseRepliesInFlight(t *testing.T) {
	dir := t.TempDir()
	k, ns := startServer(t, dir)
	connect := func(s Spec) *nats.Conn {
		t.Helper()
		is, err := k.Mint(s)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := OpenRegister(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Add(Entry{Name: s.Name, Kind: s.Kind, UserKey: is.UserKey, IssuedAt: time.Unix(is.IssuedAt, 0)}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := reg.Save(); err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(ns.ClientURL(), nats.UserJWTAndSeed(is.JWT, is.Seed), nats.CustomInboxPrefix(InboxPrefix(s.Name)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	svc := connect(Spec{Kind: KindAdmin, Name: "askbridge"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := NewGuard(k.Verifier(), map[string]int64{})
	logs := &lockedBuffer{}
	go g.Watch(ctx, dir, k, ns, 10*time.Millisecond, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	held := make(chan *nats.Msg, 1)
	if _, err := svc.Subscribe("ask.v1.gate.acme.job-1", func(m *nats.Msg) { held <- m }); err != nil {
		t.Fatal(err)
	}
	if err := svc.Flush(); err != nil {
		t.Fatal(err)
	}
	agent := connect(Spec{Kind: KindAgent, Name: "agent-1", Tenant: "acme"})
	replied := make(chan error, 1)
	go func() {
		_, err := agent.Request("ask.v1.gate.acme.job-1", []byte(`{}`), 30*time.Second)
		replied <- err
	}()
	var req *nats.Msg
	select {
	case req = <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the request never reached the service")
	}
	// Another agent's credential is minted meanwhile, and re-read.
	stamp := RegisterStamp(dir)
	connect(Spec{Kind: KindAgent, Name: "agent-2", Tenant: "acme"})
	if RegisterStamp(dir) == stamp {
		t.Fatal("the register did not change")
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "register re-read"); {
		if time.Now().After(deadline) {
			t.Fatalf("the service never re-read the register: %s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := req.Respond([]byte(`{"allowed":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-replied; err != nil {
		t.Fatalf("the agent's request lost its reply: %v", err)
	}
}

// lockedBuffer is a log the watch writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
