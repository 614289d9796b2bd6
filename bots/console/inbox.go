package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/card"
)

// The inbox (docs/console.md "The inbox"): everything that waits for the
// link's identity, read whole from ask.v1.api.list up to inboxCap, then
// filtered and counted here, so that the counts and the filter's choices
// are the whole inbox's, not one page's.
const (
	inboxPage = 200
	inboxCap  = 1000
	// inboxShown is how many of the filtered questions the page lists.
	inboxShown = 100
)

// Query parameters of the inbox's filter (a GET form).
const (
	filterKind     = "kind"
	filterTenant   = "tenant"
	filterJob      = "job"
	filterPriority = "priority"
)

// inboxFilter is what the filter asks for; "" is any.
type inboxFilter struct {
	Kind, Tenant, Job, Priority string
}

// Active says the filter narrows the inbox.
func (f inboxFilter) Active() bool { return f != inboxFilter{} }

// filterOf reads the filter from a query, dropping what no question could
// match (a kind or priority that is not one, an id that is not a token).
func filterOf(q url.Values) inboxFilter {
	f := inboxFilter{Kind: q.Get(filterKind), Tenant: q.Get(filterTenant), Job: q.Get(filterJob), Priority: q.Get(filterPriority)}
	if f.Kind != bridge.KindQuestion && f.Kind != bridge.KindApproval {
		f.Kind = ""
	}
	if !bridge.ValidToken(f.Tenant) {
		f.Tenant = ""
	}
	if !bridge.ValidToken(f.Job) {
		f.Job = ""
	}
	if priorityRank(f.Priority) < 0 {
		f.Priority = ""
	}
	return f
}

// priorities are the priorities in queue order, most urgent first.
var priorities = []string{bridge.PriorityBlocking, bridge.PriorityHigh, bridge.PriorityMedium, bridge.PriorityLow}

// priorityRank is p's place in priorities, -1 for none of them.
func priorityRank(p string) int { return slices.Index(priorities, p) }

// matches reports whether v passes f, kind aside (the counts are by kind).
func (f inboxFilter) matches(v *bridge.QuestionView) bool {
	return (f.Tenant == "" || v.Tenant == f.Tenant) && (f.Job == "" || v.JobID == f.Job) &&
		(f.Priority == "" || priorityOf(v) == f.Priority)
}

func priorityOf(v *bridge.QuestionView) string {
	if v.Question == nil {
		return ""
	}
	return v.Question.Priority
}

func kindOf(v *bridge.QuestionView) string {
	if v.Kind == bridge.KindApproval || v.Question != nil && v.Question.IsApproval() {
		return bridge.KindApproval
	}
	return bridge.KindQuestion
}

type listPage struct {
	base
	Items []listItem
	// Counts are the inbox's questions by kind, under the rest of the filter.
	Counts []kindCount
	Filter inboxFilter
	// Form is the filter form: its action and the link's signed query as
	// hidden inputs, so that it works without JavaScript.
	Form    filterForm
	Tenants []string
	Jobs    []string
	// Priorities are the filter's choices.
	Priorities []string
	// Matching is how many questions pass the filter; More how many of
	// them the page leaves out; Total the whole inbox.
	Matching, More, Total int
	// Cut says the inbox holds more than the console reads (inboxCap).
	Cut bool
	// NoRole: the identity holds no role in any tenant; nothing waits.
	NoRole bool
	// ClearURL shows the whole inbox again.
	ClearURL string
}

type kindCount struct {
	Kind, Label string
	N           int
	URL         string
	Current     bool
}

type filterForm struct {
	Action string
	Hidden []queryInput
}

type queryInput struct{ Name, Value string }

// handleList shows the inbox: the pending questions the link's identity
// may see, filtered by the query.
func (c *Console) handleList(w http.ResponseWriter, r *http.Request) {
	l, err := c.verifyLink(r, ScopeList, "", "", "")
	if err != nil {
		c.linkError(w, r, err)
		return
	}
	views, roles, cut, err := c.inbox(r.Context(), l)
	if err != nil {
		if errors.Is(err, errAPI) {
			c.apiUnavailable(w, r, err)
			return
		}
		c.log.WarnContext(r.Context(), "console: list refused", "as", l.Identity, "err", err)
		c.errorPage(w, r, http.StatusBadRequest, "The list could not be shown", "askbridge could not list your questions. Ask for a new link.")
		return
	}
	f := filterOf(r.URL.Query())
	p := c.buildListPage(l, views, f)
	p.Cut = cut
	p.NoRole = len(roles) == 0 && len(views) == 0
	c.render(w, r, http.StatusOK, "list", p)
}

// inbox reads every pending question the identity may see, up to
// inboxCap (cut says there are more), and the roles it holds.
func (c *Console) inbox(ctx context.Context, l Link) (views []bridge.QuestionView, roles []string, cut bool, err error) {
	after := ""
	for {
		var rep bridge.ListReply
		req := bridge.ListRequest{As: l.Identity, Roles: l.Roles, State: bridge.StatePending, Limit: inboxPage, After: after}
		if err := c.api(ctx, bridge.APIList, req, &rep); err != nil {
			return nil, nil, false, err
		}
		if rep.Error != "" {
			return nil, nil, false, refusedError(rep.Error)
		}
		views, roles = append(views, rep.Questions...), rep.Roles
		if after = rep.Next; after == "" {
			return views, roles, false, nil
		}
		if len(views) >= inboxCap {
			return views, roles, true, nil
		}
	}
}

// refusedError is the runtime's refusal of a request, in its words.
type refusedError string

func (e refusedError) Error() string { return "console: the runtime refused: " + string(e) }

func (c *Console) buildListPage(l Link, views []bridge.QuestionView, f inboxFilter) *listPage {
	now := c.now()
	p := &listPage{base: c.base(l, "Waiting for you"), Filter: f, Priorities: priorities, Total: len(views),
		ClearURL: c.signer.RelativeURL(l)}
	p.Form.Action = c.signer.BasePath() + l.Path()
	for k, vs := range url.Values(mustParseQuery(c.signer.Query(l))) {
		p.Form.Hidden = append(p.Form.Hidden, queryInput{Name: k, Value: vs[0]})
	}
	sort.Slice(p.Form.Hidden, func(i, j int) bool { return p.Form.Hidden[i].Name < p.Form.Hidden[j].Name })
	sortInbox(views)
	counts := map[string]int{}
	var shown []*bridge.QuestionView
	for i := range views {
		v := &views[i]
		p.Tenants = appendNew(p.Tenants, v.Tenant)
		if f.Tenant == "" || v.Tenant == f.Tenant {
			p.Jobs = appendNew(p.Jobs, v.JobID)
		}
		if !f.matches(v) {
			continue
		}
		counts[kindOf(v)]++
		if f.Kind == "" || kindOf(v) == f.Kind {
			shown = append(shown, v)
		}
	}
	sort.Strings(p.Tenants)
	sort.Strings(p.Jobs)
	p.Counts = c.kindCounts(l, f, counts)
	p.Matching = len(shown)
	if len(shown) > inboxShown {
		p.More, shown = len(shown)-inboxShown, shown[:inboxShown]
	}
	for _, v := range shown {
		it := c.listItem(l, v)
		it.Waiting = waitingText(v, now)
		p.Items = append(p.Items, it)
	}
	return p
}

// kindCounts are the filter's kind links: all, questions, approvals, each
// with its count and the rest of the filter kept.
func (c *Console) kindCounts(l Link, f inboxFilter, counts map[string]int) []kindCount {
	out := []kindCount{
		{Kind: "", Label: "All", N: counts[bridge.KindQuestion] + counts[bridge.KindApproval]},
		{Kind: bridge.KindQuestion, Label: "Questions", N: counts[bridge.KindQuestion]},
		{Kind: bridge.KindApproval, Label: "Approvals", N: counts[bridge.KindApproval]},
	}
	for i := range out {
		g := f
		g.Kind = out[i].Kind
		out[i].URL, out[i].Current = c.listURL(l, g), f.Kind == g.Kind
	}
	return out
}

// listURL is the inbox's link with filter f.
func (c *Console) listURL(l Link, f inboxFilter) string {
	u := c.signer.RelativeURL(l)
	for _, kv := range [][2]string{{filterKind, f.Kind}, {filterTenant, f.Tenant}, {filterJob, f.Job}, {filterPriority, f.Priority}} {
		if kv[1] != "" {
			u += "&" + kv[0] + "=" + url.QueryEscape(kv[1])
		}
	}
	return u
}

// sortInbox orders the inbox as the queue does: by priority, then the
// nearest deadline, then the oldest.
func sortInbox(views []bridge.QuestionView) {
	rank := func(v *bridge.QuestionView) int {
		if r := priorityRank(priorityOf(v)); r >= 0 {
			return r
		}
		return priorityRank(bridge.PriorityMedium)
	}
	sort.SliceStable(views, func(i, j int) bool {
		a, b := &views[i], &views[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if !a.Deadline.Equal(b.Deadline) {
			switch {
			case a.Deadline.IsZero():
				return false
			case b.Deadline.IsZero():
				return true
			}
			return a.Deadline.Before(b.Deadline)
		}
		return a.AskedAt.Before(b.AskedAt)
	})
}

func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func mustParseQuery(q string) url.Values {
	v, _ := url.ParseQuery(q)
	return v
}

// waitingText is "waiting 12 min · deadline in 3 h" for a question that
// waits, as of now.
func waitingText(v *bridge.QuestionView, now time.Time) string {
	if v.State != bridge.StatePending {
		return ""
	}
	return card.Waiting(v.AskedAt, v.Deadline, now)
}
