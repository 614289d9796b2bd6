package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// Live updates (docs/console.md "Live updates"): a page's script opens
// an event stream (server-sent events) at /console/events/ with the
// page's own signed query, and re-reads the page when the stream says
// "changed". The console learns what changed as every front-end does,
// from the runtime's events on ask.v1.event.>; it asks the runtime's API
// whether the viewer may see a question before it tells them anything.
const (
	// keepAlive is how often an idle stream sends a comment, so proxies
	// and browsers keep it open.
	keepAlive = 25 * time.Second
	// maxStreams bounds the streams one console serves at once.
	maxStreams = 1000
	// retryMillis is how long a browser waits before it reconnects.
	retryMillis = 5000
)

// eventsURL is the event stream of l's page.
func (c *Console) eventsURL(l Link) string {
	return c.signer.BasePath() + "/console/events" + strings.TrimPrefix(l.Path(), "/console") + "?" + c.signer.Query(l)
}

// changes says which of the runtime's events change what a page shows:
// a question asked, settled, approved once of several, delegated or
// executed. Refusals, reminders, snoozes and notices do not.
func changes(ev *bridge.Event) bool {
	switch ev.Type {
	case bridge.EventAsked, bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled,
		bridge.EventSuperseded, bridge.EventApproval, bridge.EventDelegated, bridge.EventExecuted:
		return true
	case bridge.EventDeliveryFailed:
		return ev.State == bridge.StateFailed
	}
	return false
}

// handleEvents streams "changed" to a page: the inbox (a list link) on
// any change the viewer may see, a question page (a question link) on
// its question's.
func (c *Console) handleEvents(w http.ResponseWriter, r *http.Request) {
	tenant, job, question := r.PathValue("tenant"), r.PathValue("job"), r.PathValue("question")
	scope, subject := ScopeList, bridge.PrefixEvent+".>"
	if question != "" {
		scope, subject = ScopeQuestion, bridge.EventSubject(tenant, job)
	}
	l, err := c.verifyLink(r, scope, tenant, job, question)
	if err != nil {
		c.linkError(w, r, err)
		return
	}
	if c.streams.Add(1) > maxStreams {
		c.streams.Add(-1)
		c.errorPage(w, r, http.StatusServiceUnavailable, "Too many open pages", "The console serves as many live pages as it can. The page still works: reload it to see what changed.")
		return
	}
	defer c.streams.Add(-1)
	seen := &viewer{c: c, l: l}
	switch scope {
	case ScopeList:
		seen.roles, err = c.roles(r.Context(), l)
	default:
		// Nothing of a question the identity may not know of, not even
		// when it changes.
		var rep *bridge.ShowReply
		if rep, err = c.show(r.Context(), l); err == nil && rep == nil {
			c.notFound(w, r)
			return
		}
	}
	if err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	events := make(chan *nats.Msg, 256)
	sub, err := c.nc.ChanSubscribe(subject, events)
	if err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The subscription reaches the server before the page hears it is
	// live, so that no change after that passes unseen.
	fctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
	err = c.nc.FlushWithContext(fctx)
	cancel()
	if err != nil {
		c.apiUnavailable(w, r, err)
		return
	}
	c.stream(w, r, events, seen)
}

// stream writes the event stream until the browser goes away.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, events <-chan *nats.Msg, seen *viewer) {
	rc := http.NewResponseController(w)
	// The server's write timeout is for pages; a stream lasts.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	send := func(s string) bool {
		if _, err := w.Write([]byte(s)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: " + strconv.Itoa(retryMillis) + "\n: open\n\n") {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.closing:
			return
		case <-tick.C:
			if !send(": keep-alive\n\n") {
				return
			}
		case m := <-events:
			var ev bridge.Event
			if json.Unmarshal(m.Data, &ev) != nil || !changes(&ev) || !seen.sees(r.Context(), &ev) {
				continue
			}
			// Only for a question the viewer may see: its ids tell them nothing new.
			if !send("event: changed\ndata: " + ev.Tenant + "/" + ev.JobID + "/" + ev.QuestionID + "\n\n") {
				return
			}
		}
	}
}

// viewer is the identity a stream is for.
type viewer struct {
	c *Console
	l Link
	// roles are those the list reply named (the inbox only).
	roles []string
}

// sees reports whether the viewer's page shows what ev is about: its own
// question on a question page; on the inbox, a question of a tenant they
// hold a role in, or one the runtime shows them.
func (v *viewer) sees(ctx context.Context, ev *bridge.Event) bool {
	if v.l.Scope == ScopeQuestion {
		return ev.Tenant == v.l.Tenant && ev.JobID == v.l.JobID && ev.QuestionID == v.l.QuestionID
	}
	for _, r := range v.roles {
		if t, _, scoped := strings.Cut(r, "/"); !scoped || t == ev.Tenant {
			return true
		}
	}
	var rep bridge.ShowReply
	err := v.c.api(ctx, bridge.APIShow, bridge.ShowRequest{As: v.l.Identity, Roles: v.l.Roles, Tenant: ev.Tenant, JobID: ev.JobID, QuestionID: ev.QuestionID}, &rep)
	return err == nil && rep.Error == "" && rep.Question != nil
}

// roles are the roles the runtime says l's identity holds.
func (c *Console) roles(ctx context.Context, l Link) ([]string, error) {
	var rep bridge.ListReply
	if err := c.api(ctx, bridge.APIList, bridge.ListRequest{As: l.Identity, Roles: l.Roles, Limit: 1}, &rep); err != nil {
		return nil, err
	}
	if rep.Error != "" {
		return nil, errors.New("console: list refused: " + rep.Error)
	}
	return rep.Roles, nil
}
