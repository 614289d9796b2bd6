// Package console is askbridge's web console: server-rendered pages to see
// and answer questions, reached by signed links.
package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Link scopes. A question link opens one question; a job link one job's
// questions; a list link the pending list of its identity.
const (
	ScopeQuestion = "question"
	ScopeJob      = "job"
	ScopeList     = "list"
)

// Link is what a signed console URL grants: Identity may act within Scope
// (on Tenant/JobID/QuestionID as the scope needs) until Expires.
type Link struct {
	Identity   string
	Scope      string
	Tenant     string
	JobID      string
	QuestionID string
	Expires    time.Time
	// Roles are roles the chat adapter established for Identity on its
	// platform (a Discord member's mapped roles), passed on to the runtime
	// as an attempt's roles are. Signed with the rest.
	Roles []string
	// FromList says a question or job link was minted by the inbox: its
	// page links back to the inbox of the same identity. Signed with the
	// rest; a link sent in chat leads nowhere else.
	FromList bool
}

// RoleLinkTTL bounds a link that carries roles: they are what the member
// held when it was made.
const RoleLinkTTL = 24 * time.Hour

// linkRoles are the roles a link may carry.
var linkRoles = map[string]bool{"owner": true, "admin": true, "operator": true, "reader": true}

// DefaultLinkTTL is how long links minted by the chat adapters stay valid.
const DefaultLinkTTL = 7 * 24 * time.Hour

// Errors returned by Signer.Verify; the console shows each as its own page.
var (
	ErrLinkExpired = errors.New("console: link expired")
	ErrLinkForged  = errors.New("console: link signature does not match")
	ErrLinkInvalid = errors.New("console: link is incomplete")
)

// Signer mints and checks console links with an HMAC-SHA256 key.
type Signer struct {
	// PublicURL is askbridge's external base URL, without a trailing slash.
	PublicURL string
	Secret    []byte
}

// Path is the link's path under /console, before the query.
func (l Link) Path() string {
	switch l.Scope {
	case ScopeQuestion:
		return "/console/q/" + url.PathEscape(l.Tenant) + "/" + url.PathEscape(l.JobID) + "/" + url.PathEscape(l.QuestionID)
	case ScopeJob:
		return "/console/job/" + url.PathEscape(l.Tenant) + "/" + url.PathEscape(l.JobID)
	default:
		return "/console/"
	}
}

func (s Signer) mac(l Link) string {
	m := hmac.New(sha256.New, s.Secret)
	fmt.Fprintf(m, "askbridge-console-v1\n%s\n%s\n%s\n%s\n%s\n%d", l.Scope, l.Identity, l.Tenant, l.JobID, l.QuestionID, l.Expires.Unix())
	if len(l.Roles) > 0 { // links without roles keep their signature
		fmt.Fprintf(m, "\nroles\n%s", strings.Join(l.Roles, ","))
	}
	if l.FromList { // links without it keep their signature
		fmt.Fprint(m, "\nfrom\nlist")
	}
	return hex.EncodeToString(m.Sum(nil))
}

// URL returns the absolute signed URL for l.
func (s Signer) URL(l Link) string {
	return strings.TrimRight(s.PublicURL, "/") + l.Path() + "?" + s.Query(l)
}

// QuestionURL mints a link to one question for identity, valid for ttl.
func (s Signer) QuestionURL(identity, tenant, job, question string, ttl time.Duration) string {
	return s.URL(Link{Identity: identity, Scope: ScopeQuestion, Tenant: tenant, JobID: job, QuestionID: question, Expires: time.Now().Add(ttl)})
}

// QuestionURLWithRoles is QuestionURL for an identity holding roles its
// chat platform established; such a link lives at most RoleLinkTTL.
func (s Signer) QuestionURLWithRoles(identity string, roles []string, tenant, job, question string, ttl time.Duration) string {
	if len(roles) > 0 {
		ttl = min(ttl, RoleLinkTTL)
	}
	return s.URL(Link{Identity: identity, Scope: ScopeQuestion, Tenant: tenant, JobID: job, QuestionID: question,
		Expires: time.Now().Add(ttl), Roles: roles})
}

// JobURL mints a link to a job's page for identity, valid for ttl.
func (s Signer) JobURL(identity, tenant, job string, ttl time.Duration) string {
	return s.URL(Link{Identity: identity, Scope: ScopeJob, Tenant: tenant, JobID: job, Expires: time.Now().Add(ttl)})
}

// ListURL mints a link to identity's pending list, valid for ttl.
func (s Signer) ListURL(identity string, ttl time.Duration) string {
	return s.URL(Link{Identity: identity, Scope: ScopeList, Expires: time.Now().Add(ttl)})
}

// Verify checks the signature and expiry of l against sig.
func (s Signer) Verify(l Link, sig string, now time.Time) error {
	if l.Identity == "" || l.Scope == "" || sig == "" || l.Expires.IsZero() {
		return ErrLinkInvalid
	}
	for _, r := range l.Roles {
		if !linkRoles[r] {
			return ErrLinkInvalid
		}
	}
	for _, f := range []string{l.Scope, l.Identity, l.Tenant, l.JobID, l.QuestionID} {
		// The MAC separates fields with newlines: a field holding one could
		// shift the others.
		if strings.ContainsAny(f, "\r\n") {
			return ErrLinkInvalid
		}
	}
	switch l.Scope {
	case ScopeQuestion:
		if l.Tenant == "" || l.JobID == "" || l.QuestionID == "" {
			return ErrLinkInvalid
		}
	case ScopeJob:
		if l.Tenant == "" || l.JobID == "" || l.QuestionID != "" {
			return ErrLinkInvalid
		}
	case ScopeList:
		if l.Tenant != "" || l.JobID != "" || l.QuestionID != "" || l.FromList {
			return ErrLinkInvalid
		}
	default:
		return ErrLinkInvalid
	}
	if !hmac.Equal([]byte(s.mac(l)), []byte(sig)) {
		return ErrLinkForged
	}
	if now.After(l.Expires) {
		return ErrLinkExpired
	}
	return nil
}

// Query is l's signed query string (as, exp, sig), without the leading "?".
func (s Signer) Query(l Link) string {
	q := url.Values{}
	q.Set("as", l.Identity)
	q.Set("exp", strconv.FormatInt(l.Expires.Unix(), 10))
	if len(l.Roles) > 0 {
		q.Set("roles", strings.Join(l.Roles, ","))
	}
	if l.FromList {
		q.Set("from", "list")
	}
	q.Set("sig", s.mac(l))
	return q.Encode()
}

// RelativeURL is l's path and signed query without the public base URL's
// scheme and host: the console uses it for links between its own pages.
// It keeps the base URL's path, so pages served behind a proxy under a
// prefix (ASK_PUBLIC_URL=https://example.com/askbridge) link within it.
func (s Signer) RelativeURL(l Link) string { return s.BasePath() + l.Path() + "?" + s.Query(l) }

// BasePath is the path of the public base URL, without a trailing slash:
// "" for https://example.com, "/askbridge" for https://example.com/askbridge.
func (s Signer) BasePath() string {
	u, err := url.Parse(s.PublicURL)
	if err != nil {
		return ""
	}
	return strings.TrimRight(u.EscapedPath(), "/")
}

// FormToken is the anti-forgery token of a console form: an HMAC binding
// the link's identity and target to the form's nonce. It is a different
// message from a link signature, so neither can stand in for the other.
func (s Signer) FormToken(l Link, nonce string) string {
	m := hmac.New(sha256.New, s.Secret)
	fmt.Fprintf(m, "askbridge-console-form-v1\n%s\n%s\n%s\n%s\n%s\n%s", l.Scope, l.Identity, l.Tenant, l.JobID, l.QuestionID, nonce)
	return hex.EncodeToString(m.Sum(nil))
}

// CheckFormToken reports whether token is FormToken(l, nonce).
func (s Signer) CheckFormToken(l Link, nonce, token string) bool {
	if nonce == "" || token == "" {
		return false
	}
	return hmac.Equal([]byte(s.FormToken(l, nonce)), []byte(token))
}
