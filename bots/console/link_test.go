package console

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testSigner() Signer {
	return Signer{PublicURL: "https://ask.example.com/", Secret: []byte(testSecret)}
}

// parse reads a minted URL back into the link it claims and its signature.
func parse(t *testing.T, raw, scope string) (Link, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil {
		t.Fatalf("exp %q: %v", q.Get("exp"), err)
	}
	l := Link{Identity: q.Get("as"), Scope: scope, Expires: time.Unix(exp, 0)}
	if rs := q.Get("roles"); rs != "" {
		l.Roles = strings.Split(rs, ",")
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/console/"), "/")
	switch scope {
	case ScopeQuestion:
		l.Tenant, l.JobID, l.QuestionID = parts[1], parts[2], parts[3]
	case ScopeJob:
		l.Tenant, l.JobID = parts[1], parts[2]
	}
	return l, q.Get("sig")
}

func TestLinkRoundTrip(t *testing.T) {
	t.Parallel()
	s := testSigner()
	now := time.Now()
	cases := []struct {
		raw, scope, path string
	}{
		{s.QuestionURL("slack:U0KEV", "acme", "job-1", "q-1", time.Hour), ScopeQuestion, "/console/q/acme/job-1/q-1"},
		{s.JobURL("discord:4567", "acme", "job-1", time.Hour), ScopeJob, "/console/job/acme/job-1"},
		{s.ListURL("cli:alice", time.Hour), ScopeList, "/console/"},
	}
	for _, tc := range cases {
		if !strings.HasPrefix(tc.raw, "https://ask.example.com"+tc.path+"?") {
			t.Errorf("URL %q does not start with the public base and path %s", tc.raw, tc.path)
		}
		l, sig := parse(t, tc.raw, tc.scope)
		if err := s.Verify(l, sig, now); err != nil {
			t.Errorf("%s: Verify: %v", tc.scope, err)
		}
		if got := s.RelativeURL(l); !strings.HasSuffix(tc.raw, got) {
			t.Errorf("RelativeURL %q is not the tail of %q", got, tc.raw)
		}
	}
}

func TestLinkForgedExpiredAndMisused(t *testing.T) {
	t.Parallel()
	s := testSigner()
	now := time.Now()
	l, sig := parse(t, s.QuestionURL("console:alice", "acme", "job-1", "q-1", time.Hour), ScopeQuestion)

	mutations := map[string]func(Link) Link{
		"another question": func(l Link) Link { l.QuestionID = "q-2"; return l },
		"another job":      func(l Link) Link { l.JobID = "job-2"; return l },
		"another tenant":   func(l Link) Link { l.Tenant = "other"; return l },
		"another identity": func(l Link) Link { l.Identity = "console:mallory"; return l },
		"later expiry":     func(l Link) Link { l.Expires = l.Expires.Add(time.Hour); return l },
		"as a job link":    func(l Link) Link { l.Scope, l.QuestionID = ScopeJob, ""; return l },
	}
	for name, mutate := range mutations {
		if err := s.Verify(mutate(l), sig, now); !errors.Is(err, ErrLinkForged) {
			t.Errorf("%s: err %v, want ErrLinkForged", name, err)
		}
	}
	if err := s.Verify(l, strings.Repeat("0", len(sig)), now); !errors.Is(err, ErrLinkForged) {
		t.Errorf("zero signature: %v", err)
	}
	other := Signer{Secret: []byte("a-different-secret-entirely")}
	if err := other.Verify(l, sig, now); !errors.Is(err, ErrLinkForged) {
		t.Errorf("other secret: %v", err)
	}
	if err := s.Verify(l, sig, l.Expires.Add(time.Second)); !errors.Is(err, ErrLinkExpired) {
		t.Errorf("after expiry: %v", err)
	}
	if err := s.Verify(l, sig, l.Expires); err != nil {
		t.Errorf("at the expiry second: %v", err)
	}
	// A forged link is reported as forged even when it is also expired.
	forged := l
	forged.QuestionID = "q-2"
	if err := s.Verify(forged, sig, l.Expires.Add(time.Hour)); !errors.Is(err, ErrLinkForged) {
		t.Errorf("forged and expired: %v", err)
	}
}

func TestLinkIncomplete(t *testing.T) {
	t.Parallel()
	s := testSigner()
	now := time.Now()
	exp := now.Add(time.Hour)
	cases := map[string]Link{
		"no identity":            {Scope: ScopeQuestion, Tenant: "a", JobID: "j", QuestionID: "q", Expires: exp},
		"no scope":               {Identity: "console:a", Tenant: "a", JobID: "j", QuestionID: "q", Expires: exp},
		"no expiry":              {Identity: "console:a", Scope: ScopeQuestion, Tenant: "a", JobID: "j", QuestionID: "q"},
		"question without id":    {Identity: "console:a", Scope: ScopeQuestion, Tenant: "a", JobID: "j", Expires: exp},
		"job with a question":    {Identity: "console:a", Scope: ScopeJob, Tenant: "a", JobID: "j", QuestionID: "q", Expires: exp},
		"list with a tenant":     {Identity: "console:a", Scope: ScopeList, Tenant: "a", Expires: exp},
		"unknown scope":          {Identity: "console:a", Scope: "admin", Expires: exp},
		"newline in an identity": {Identity: "console:a\nacme", Scope: ScopeJob, Tenant: "j", JobID: "q", Expires: exp},
	}
	for name, l := range cases {
		// Even a correct MAC over an ill-formed link does not open it.
		if err := s.Verify(l, s.mac(l), now); !errors.Is(err, ErrLinkInvalid) {
			t.Errorf("%s: err %v, want ErrLinkInvalid", name, err)
		}
	}
	good := Link{Identity: "console:a", Scope: ScopeList, Expires: exp}
	if err := s.Verify(good, "", now); !errors.Is(err, ErrLinkInvalid) {
		t.Errorf("empty signature: %v", err)
	}
}

func TestFormToken(t *testing.T) {
	t.Parallel()
	s := testSigner()
	l := Link{Identity: "console:alice", Scope: ScopeQuestion, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Expires: time.Now().Add(time.Hour)}
	nonce := newNonce()
	tok := s.FormToken(l, nonce)
	if !s.CheckFormToken(l, nonce, tok) {
		t.Fatal("a fresh token does not check")
	}
	if !validNonce(nonce) || validNonce(strings.ToUpper(nonce)) || validNonce(nonce[:30]) || validNonce(strings.Repeat("g", 32)) {
		t.Error("validNonce accepts or rejects the wrong things")
	}
	if newNonce() == nonce {
		t.Error("two nonces are equal")
	}
	other := l
	other.QuestionID = "q-2"
	for name, ok := range map[string]bool{
		"other nonce":        s.CheckFormToken(l, newNonce(), tok),
		"other question":     s.CheckFormToken(other, nonce, tok),
		"empty token":        s.CheckFormToken(l, nonce, ""),
		"empty nonce":        s.CheckFormToken(l, "", s.FormToken(l, "")),
		"link signature":     s.CheckFormToken(l, nonce, s.mac(l)),
		"other secret":       Signer{Secret: []byte("a-different-secret-entirely")}.CheckFormToken(l, nonce, tok),
		"token as link sig":  s.Verify(l, tok, time.Now()) == nil,
		"identity different": s.CheckFormToken(Link{Identity: "console:bob", Scope: l.Scope, Tenant: l.Tenant, JobID: l.JobID, QuestionID: l.QuestionID}, nonce, tok),
	} {
		if ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestLinkRoles checks roles are signed with the link, bound its life to
// RoleLinkTTL, and must be roles askbridge knows.
func TestLinkRoles(t *testing.T) {
	t.Parallel()
	s := testSigner()
	now := time.Now()
	raw := s.QuestionURLWithRoles("discord:4567", []string{"admin", "operator"}, "acme", "job-1", "q-1", 7*24*time.Hour)
	l, sig := parse(t, raw, ScopeQuestion)
	if err := s.Verify(l, sig, now); err != nil || !slices.Equal(l.Roles, []string{"admin", "operator"}) {
		t.Fatalf("Verify %+v: %v", l, err)
	}
	if latest := time.Now().Add(RoleLinkTTL + time.Second); l.Expires.After(latest) {
		t.Errorf("a link with roles expires %v, after %v: it lives longer than %v", l.Expires, latest, RoleLinkTTL)
	}
	for name, roles := range map[string][]string{"dropped": nil, "another": {"owner"}, "one more": {"admin", "operator", "owner"}} {
		m := l
		m.Roles = roles
		if err := s.Verify(m, sig, now); !errors.Is(err, ErrLinkForged) {
			t.Errorf("roles %s: Verify = %v, want ErrLinkForged", name, err)
		}
	}
	bad := Link{Identity: "discord:4567", Scope: ScopeQuestion, Tenant: "acme", JobID: "job-1", QuestionID: "q-1", Expires: now.Add(time.Hour), Roles: []string{"superuser"}}
	if err := s.Verify(bad, s.mac(bad), now); !errors.Is(err, ErrLinkInvalid) {
		t.Errorf("unknown role: Verify = %v, want ErrLinkInvalid", err)
	}
	// A link without roles keeps the signature it always had.
	plain := s.QuestionURL("discord:4567", "acme", "job-1", "q-1", time.Hour)
	if strings.Contains(plain, "roles=") {
		t.Errorf("a link without roles names some: %s", plain)
	}
}
