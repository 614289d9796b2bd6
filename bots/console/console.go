package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// Limits and timings of the console.
const (
	// MaxFormBytes bounds a POSTed form: an answer may be 64 KiB of JSON,
	// plus a comment and the form's own fields.
	MaxFormBytes = 256 << 10
	// DecisionWait is how long a POST waits for the runtime's decision
	// before redirecting to the question page anyway.
	DecisionWait = 3 * time.Second
	// LateDecisionWait is how much longer a refusal that missed
	// DecisionWait is listened for, so that reloading the page shows it.
	LateDecisionWait = time.Minute
	// apiTimeout bounds one request to the runtime's API.
	apiTimeout = 5 * time.Second
	// jobLimit is how many questions a job page shows.
	jobLimit = 50
	// minSecret is the shortest HMAC key the console accepts.
	minSecret = 16
)

// Options configures the console.
type Options struct {
	NATS *bridge.NATS
	// Signer mints and checks links; its Secret is ASK_CONSOLE_SECRET.
	Signer Signer
	Logger *slog.Logger
	// Now is the clock, for tests; nil means time.Now.
	Now func() time.Time
}

// Console serves the web console under /console/.
type Console struct {
	nats     *bridge.NATS
	nc       *nats.Conn
	signer   Signer
	log      *slog.Logger
	now      func() time.Time
	pages    *pages
	outcomes *outcomeCache
	// streams counts the open event streams (events.go); closing ends
	// them (Close).
	streams   atomic.Int64
	closing   chan struct{}
	closeOnce sync.Once
}

// Close ends the open event streams, so that a server shutting down does
// not wait for pages left open (their browsers reconnect elsewhere).
func (c *Console) Close() { c.closeOnce.Do(func() { close(c.closing) }) }

// New checks the options and loads the embedded templates.
func New(o Options) (*Console, error) {
	if o.NATS == nil || o.NATS.Conn == nil || o.NATS.JS == nil {
		return nil, errors.New("console: a NATS connection with JetStream is required")
	}
	if len(o.Signer.Secret) < minSecret {
		return nil, fmt.Errorf("console: the link secret must be at least %d bytes", minSecret)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p, err := loadPages(o.Signer.BasePath())
	if err != nil {
		return nil, err
	}
	return &Console{
		nats:     o.NATS,
		nc:       o.NATS.Conn,
		signer:   o.Signer,
		log:      o.Logger,
		now:      o.Now,
		pages:    p,
		outcomes: newOutcomeCache(1000, outcomeTTL, openOutcomes(o.NATS, o.Logger), o.Logger),
		closing:  make(chan struct{}),
	}, nil
}

// Routes registers every console page under /console/.
func (c *Console) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /console/{$}", c.wrap(c.handleList))
	mux.HandleFunc("GET /console/q/{tenant}/{job}/{question}", c.wrap(c.handleQuestion))
	mux.HandleFunc("POST /console/q/{tenant}/{job}/{question}", c.wrap(c.handleSubmit))
	mux.HandleFunc("GET /console/job/{tenant}/{job}", c.wrap(c.handleJob))
	mux.HandleFunc("GET /console/events/{$}", c.wrap(c.handleEvents))
	mux.HandleFunc("GET /console/events/q/{tenant}/{job}/{question}", c.wrap(c.handleEvents))
	mux.HandleFunc("GET /console/static/", c.wrap(c.handleStatic))
	mux.HandleFunc("/console/", c.wrap(c.handleNotFound))
}

// wrap sets the headers every page carries and turns a panic into an
// error page rather than a dropped connection with a stack trace.
func (c *Console) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		// Links carry their signature in the query: never send it to
		// another site. (same-origin rather than no-referrer, under which
		// browsers send "Origin: null" on the console's own form posts.)
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				c.log.ErrorContext(r.Context(), "console: panic", "path", r.URL.Path, "panic", fmt.Sprint(v))
				c.errorPage(w, r, http.StatusInternalServerError, "Something went wrong", "askbridge could not show this page. Nothing was changed. Try again in a moment.")
			}
		}()
		h(w, r)
	}
}

// linkError renders the page for a link that does not verify.
func (c *Console) linkError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrLinkExpired):
		c.errorPage(w, r, http.StatusGone, "This link has expired",
			"Console links are valid for a limited time. Ask for a new link: in Slack or Discord, open the question again; on the command line, run askbridge link.")
	case errors.Is(err, ErrLinkForged):
		c.errorPage(w, r, http.StatusForbidden, "This link is not valid",
			"The link's signature does not match what it opens. It may have been altered or copied incompletely. Use the link exactly as you received it, or ask for a new one.")
	default:
		c.errorPage(w, r, http.StatusForbidden, "This link is not valid",
			"The link is incomplete. Use the link exactly as you received it, or ask for a new one.")
	}
}

// verifyLink reads the signed query of r for a link of the given scope and
// target, and checks it.
func (c *Console) verifyLink(r *http.Request, scope, tenant, job, question string) (Link, error) {
	q := r.URL.Query()
	l := Link{Identity: q.Get("as"), Scope: scope, Tenant: tenant, JobID: job, QuestionID: question}
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil || exp <= 0 {
		return l, ErrLinkInvalid
	}
	l.Expires = time.Unix(exp, 0)
	if rs := q.Get("roles"); rs != "" {
		l.Roles = strings.Split(rs, ",")
	}
	l.FromList = q.Get("from") == "list"
	if bridge.CheckIdentity(l.Identity) != nil {
		return l, ErrLinkInvalid
	}
	for _, t := range []string{tenant, job, question} {
		if t != "" && !bridge.ValidToken(t) {
			return l, ErrLinkInvalid
		}
	}
	if err := c.signer.Verify(l, q.Get("sig"), c.now()); err != nil {
		return l, err
	}
	return l, nil
}

// sub mints a narrower link for the same identity, expiring with l; one
// the inbox mints, or a page it led to, links back to the inbox.
func (c *Console) sub(l Link, scope, tenant, job, question string) string {
	return c.signer.RelativeURL(Link{Identity: l.Identity, Scope: scope, Tenant: tenant, JobID: job, QuestionID: question, Expires: l.Expires, Roles: l.Roles,
		FromList: l.Scope == ScopeList || l.FromList})
}

// inboxURL is the inbox of l's identity, for a page the inbox led to;
// "" for a link sent in chat, which leads nowhere else.
func (c *Console) inboxURL(l Link) string {
	if !l.FromList {
		return ""
	}
	return c.signer.RelativeURL(Link{Identity: l.Identity, Scope: ScopeList, Expires: l.Expires, Roles: l.Roles})
}

// errAPI is the runtime not answering.
var errAPI = errors.New("console: the runtime did not answer")

// api sends one request/reply to the runtime.
func (c *Console) api(ctx context.Context, subject string, req, reply any) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	err := bridge.Request(ctx, c.nc, subject, req, reply)
	if err != nil && !errors.Is(err, bridge.ErrBadReply) {
		return fmt.Errorf("%w: %w", errAPI, err)
	}
	return err
}

func (c *Console) apiUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	c.log.ErrorContext(r.Context(), "console: runtime request failed", "path", r.URL.Path, "err", err)
	c.errorPage(w, r, http.StatusServiceUnavailable, "askbridge is not answering",
		"The console could not reach askbridge's runtime. Nothing was changed. Try again in a moment.")
}

// show fetches one question as the link's identity sees it. A nil view
// with a nil error means the runtime knows no such question for them.
func (c *Console) show(ctx context.Context, l Link) (*bridge.ShowReply, error) {
	var rep bridge.ShowReply
	err := c.api(ctx, bridge.APIShow, bridge.ShowRequest{As: l.Identity, Roles: l.Roles, Tenant: l.Tenant, JobID: l.JobID, QuestionID: l.QuestionID}, &rep)
	if err != nil {
		return nil, err
	}
	if rep.Error != "" || rep.Question == nil {
		if rep.Error != "" {
			c.log.InfoContext(ctx, "console: show refused", "tenant", l.Tenant, "job", l.JobID, "question", l.QuestionID, "as", l.Identity, "err", rep.Error)
		}
		return nil, nil
	}
	q := rep.Question
	if q.Tenant != l.Tenant || q.JobID != l.JobID || q.QuestionID != l.QuestionID {
		// The runtime answered for another question than the link names.
		return nil, fmt.Errorf("console: show %s/%s/%s returned %s/%s/%s", l.Tenant, l.JobID, l.QuestionID, q.Tenant, q.JobID, q.QuestionID)
	}
	return &rep, nil
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	c.errorPage(w, r, http.StatusNotFound, "No such question",
		"askbridge knows no such question, or you may not see it. If you were sent this link, ask the sender to check it.")
}

func (c *Console) handleNotFound(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/console/"), "/")
	known := r.URL.Path == "/console/" ||
		len(parts) == 4 && parts[0] == "q" ||
		len(parts) == 3 && parts[0] == "job" ||
		len(parts) == 2 && parts[0] == "events" && parts[1] == "" ||
		len(parts) == 5 && parts[0] == "events" && parts[1] == "q" ||
		len(parts) == 2 && parts[0] == "static" && staticExists(parts[1])
	if known && r.Method != http.MethodGet && r.Method != http.MethodHead {
		allow := "GET, HEAD"
		if parts[0] == "q" {
			allow = "GET, HEAD, POST"
		}
		w.Header().Set("Allow", allow)
		c.errorPage(w, r, http.StatusMethodNotAllowed, "Not here", "This page can only be viewed. Nothing was changed.")
		return
	}
	c.errorPage(w, r, http.StatusNotFound, "No such page", "There is no console page at this address.")
}

// handleQuestion shows one question: its form while pending, its outcome
// once settled. It changes nothing.
func (c *Console) handleQuestion(w http.ResponseWriter, r *http.Request) {
	l, err := c.verifyLink(r, ScopeQuestion, r.PathValue("tenant"), r.PathValue("job"), r.PathValue("question"))
	if err != nil {
		c.linkError(w, r, err)
		return
	}
	rep, err := c.show(r.Context(), l)
	if err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	if rep == nil {
		c.notFound(w, r)
		return
	}
	var st formState
	sent, request, done := false, false, ""
	if id := r.URL.Query().Get("attempt"); validAttemptID(id) {
		o, ok := c.outcomes.get(id)
		switch {
		case ok && o.matches(l) && o.refused != nil:
			st = o.state()
		case ok && o.matches(l) && o.done != "":
			done = o.done
		case ok && o.matches(l) && (o.action == bridge.ActionDelegate || o.action == bridge.ActionSnooze):
			// The runtime has not said yet: the page says so, not "answer".
			sent, request = true, true
		default:
			// Sent, and no refusal known here: while the question still
			// waits, say the answer is on its way.
			sent = true
		}
	}
	p := c.buildQuestionPage(l, rep, st)
	p.Sent = sent && rep.Question.State == bridge.StatePending && !p.YouApproved
	p.Done, p.SentRequest = done, request
	c.render(w, r, http.StatusOK, "question", p)
}

// newNonce returns 128 random bits in hex: a form's attempt id.
func newNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(fmt.Sprintf("console: random nonce: %v", err))
	}
	return hex.EncodeToString(b[:])
}

const attemptPrefix = "console-"

func validNonce(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

func validAttemptID(id string) bool {
	n, ok := strings.CutPrefix(id, attemptPrefix)
	return ok && validNonce(n)
}

// render executes a page into a buffer first, so a template error becomes
// an error page and never half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var buf bytes.Buffer
	if err := c.pages.execute(&buf, name, data); err != nil {
		c.log.ErrorContext(r.Context(), "console: render", "page", name, "err", err)
		c.errorPage(w, r, http.StatusInternalServerError, "Something went wrong", "askbridge could not show this page. Nothing was changed.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, status int, title, text string) {
	var buf bytes.Buffer
	err := c.pages.execute(&buf, "error", &errorData{base: base{Title: title}, Status: status, Text: text})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: render error page", "err", err)
		_, _ = fmt.Fprintf(w, "<!doctype html><title>%d</title><p>%d %s</p>", status, status, http.StatusText(status))
		return
	}
	_, _ = w.Write(buf.Bytes())
}

// outcomeCache remembers, for a short while, what the runtime said about
// the attempts this console posted, so the page a POST redirects to can
// show a refusal inline with the input kept. Bounded; oldest first out.
// With kv, it is shared with the other replicas (outcomes.go).
type outcomeCache struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	order []string
	items map[string]*outcome
	kv    *bridge.KV // nil: this replica's memory alone
	log   *slog.Logger
}

type outcome struct {
	identity, tenant, job, question string
	at                              time.Time
	refused                         *bridge.Event
	// done is the runtime's words on a delegate or snooze it carried out.
	done   string
	action string
	input  formInput
}

func (o *outcome) matches(l Link) bool {
	return o.identity == l.Identity && o.tenant == l.Tenant && o.job == l.JobID && o.question == l.QuestionID
}

func newOutcomeCache(max int, ttl time.Duration, kv *bridge.KV, log *slog.Logger) *outcomeCache {
	return &outcomeCache{max: max, ttl: ttl, items: map[string]*outcome{}, kv: kv, log: log}
}

func (oc *outcomeCache) put(id string, o *outcome) {
	oc.share(id, o)
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if _, ok := oc.items[id]; !ok {
		oc.order = append(oc.order, id)
	}
	oc.items[id] = o
	for len(oc.order) > 0 {
		first := oc.items[oc.order[0]]
		if len(oc.order) <= oc.max && first != nil && time.Since(first.at) < oc.ttl {
			break
		}
		delete(oc.items, oc.order[0])
		oc.order = oc.order[1:]
	}
}

// get returns a copy of the outcome of attempt id: refuse may amend it.
// One this replica does not hold is looked for in the bucket.
func (oc *outcomeCache) get(id string) (*outcome, bool) {
	oc.mu.Lock()
	o, ok := oc.items[id]
	oc.mu.Unlock()
	if !ok {
		return oc.fetch(id)
	}
	if time.Since(o.at) >= oc.ttl {
		return nil, false
	}
	cp := *o
	return &cp, true
}

// refuse records the runtime's refusal of attempt id, which came after
// its outcome was put: the form's input is shown again with it.
func (oc *outcomeCache) refuse(id string, refused *bridge.Event, input formInput) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	o, ok := oc.items[id]
	if !ok {
		return
	}
	cp := *o
	cp.refused, cp.input = refused, input
	oc.items[id] = &cp
	go oc.share(id, &cp)
}
