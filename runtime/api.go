package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// apiStore is what the list, show and stats requests read.
type apiStore interface {
	List(ctx context.Context, f record.ListFilter) ([]record.Record, error)
	Find(ctx context.Context, k record.Key) (*record.Record, error)
	FindQuestionIDs(ctx context.Context, tenant, job, questionID string) ([]*record.Record, error)
	Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error)
	Audit(ctx context.Context, question int64) ([]bridge.AuditEntry, error)
	CountByState(ctx context.Context) (map[string]int64, error)
	clarifyStore
	traceStore
	ProposalOf(ctx context.Context, question int64) (*record.Proposal, error)
}

// apiQueue spreads API requests over replicas.
const apiQueue = "askbridge-runtime"

// serveAPI answers ask.v1.api.list, .show, .stats and .trace.
func (r *Runtime) serveAPI(ctx context.Context) (func(), error) {
	handlers := map[string]func(context.Context, []byte) any{
		bridge.APIList:    r.apiList,
		bridge.APIShow:    r.apiShow,
		bridge.APIStats:   r.apiStats,
		bridge.APITrace:   r.apiTrace,
		bridge.APIQueue:   r.apiQueue,
		bridge.APIResumes: r.apiResumes,
	}
	var subs []*nats.Subscription
	stop := func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for subject, h := range handlers {
		h := h
		s, err := r.nc.QueueSubscribe(subject, apiQueue, func(m *nats.Msg) {
			reply := h(ctx, m.Data)
			data, err := json.Marshal(reply)
			if err != nil {
				data = []byte(`{"error":"internal error"}`)
			}
			_ = m.Respond(data)
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("runtime: subscribe %s: %w", subject, err)
		}
		subs = append(subs, s)
	}
	if err := r.nc.Flush(); err != nil {
		stop()
		return nil, fmt.Errorf("runtime: subscribe api: %w", err)
	}
	return stop, nil
}

// decodeRequest reads an API request into req, and says what is wrong with
// one it cannot read, naming the field ("list: limit: must be a whole
// number, not text"). An empty body is the empty request.
func decodeRequest(op string, data []byte, req any) string {
	if len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	err := json.Unmarshal(data, req)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te) && te.Field != "":
		return op + ": " + bridge.JSONProblem(err)
	}
	return op + ": the request is not a JSON object: " + bridge.JSONProblem(err)
}

// view shows a record as one identity may see it, or reports that it may not.
// checkAs accepts an identity, or none: a request without "as" comes from
// a program on the NATS bus, which is trusted as a whole (it could publish
// any attempt), and sees everything while acting as nobody.
func checkAs(as string) error {
	if as == "" {
		return nil
	}
	return bridge.CheckIdentity(as)
}

func (r *Runtime) view(ctx context.Context, rec *record.Record, as string, roles []string) (*bridge.QuestionView, bool) {
	q := decodeBody(rec)
	acc := r.approverAccess(rec.Tenant, &bridge.AnswerAttempt{By: as, Roles: roles}, q, r.o.Roles.accessFor(rec.Tenant, as, roles, q))
	if as == "" {
		acc = access{Exists: true, See: true}
	}
	if !acc.Exists {
		return nil, false
	}
	pending := rec.State == bridge.StatePending
	v := &bridge.QuestionView{
		Tenant: rec.Tenant, JobID: rec.JobID, QuestionID: rec.QuestionID, TaskVersion: rec.TaskVersion,
		Kind: rec.Kind, State: rec.State, Hidden: !acc.See, AskedAt: rec.AskedAt, Deadline: rec.Deadline,
		CanAnswer: pending && acc.Answer, CanDecline: pending && acc.Decline,
	}
	if pending && !acc.Answer && as != "" {
		v.CannotAnswer = forbiddenText(as, acc, bridge.ActionAnswer, q)
	}
	if q.Restricted() {
		v.Restricted = true
		if !acc.See {
			v.WaitsFor = q.WaitsFor()
		}
	}
	if acc.See {
		v.Question = q
		v.By, v.ByName, v.Via = rec.By, rec.ByName, rec.Via
		v.Answer, v.AnswerText, v.Comment, v.Text = rec.Answer, rec.AnswerText, rec.Comment, rec.Text
		v.SettledAt = rec.SettledAt
		if refs, err := r.queries.Messages(ctx, rec.ID); err == nil {
			v.Messages = refs
		}
		v.Proposal = r.viewProposal(ctx, rec, q)
	}
	return v, true
}

// viewProposal is an approval's proposal as it stands, for show and list:
// nil for a question, and for an approval that ended undecided and whose
// proposal a later question asks for now.
func (r *Runtime) viewProposal(ctx context.Context, rec *record.Record, q *bridge.Question) *bridge.ProposalStatus {
	if !q.IsApproval() || q.Proposal == nil {
		return nil
	}
	p, err := r.queries.ProposalOf(ctx, rec.ID)
	switch {
	case errors.Is(err, record.ErrNotFound) && rec.State == bridge.StatePending:
		p = nil // asked before proposals were recorded
	case err != nil:
		return nil
	}
	return r.proposalStatus(q, p)
}

func (r *Runtime) apiList(ctx context.Context, data []byte) any {
	var req bridge.ListRequest
	if problem := decodeRequest("list", data, &req); problem != "" {
		return bridge.ListReply{Error: problem}
	}
	if err := checkAs(req.As); err != nil {
		return bridge.ListReply{Error: "as: " + err.Error()}
	}
	r.people.seen(req.As)
	state := req.State
	switch state {
	case "":
		state = bridge.StatePending
	case "all":
		state = ""
	case bridge.StatePending, bridge.StateAnswered, bridge.StateDeclined, bridge.StateTimedOut,
		bridge.StateCancelled, bridge.StateSuperseded, bridge.StateFailed:
	default:
		return bridge.ListReply{Error: fmt.Sprintf("state: must be pending, answered, declined, timed_out, cancelled, superseded, failed or all, not %q", bridge.Truncate(state, 40))}
	}
	limit := req.Limit
	switch {
	case limit <= 0:
		limit = 50
	case limit > 200:
		limit = 200
	}
	var after int64
	if req.After != "" {
		n, err := strconv.ParseInt(req.After, 10, 64)
		if err != nil {
			return bridge.ListReply{Error: "after: not a cursor from a previous list"}
		}
		after = n
	}
	reply := bridge.ListReply{Questions: []bridge.QuestionView{}}
	// Read pages until one of this identity's is full: strangers see none.
	for pages := 0; pages < 20 && len(reply.Questions) < limit; pages++ {
		recs, err := r.queries.List(ctx, record.ListFilter{Tenant: req.Tenant, JobID: req.JobID, State: state, AfterID: after, Limit: limit})
		if err != nil {
			r.log.Error("api list", "err", err)
			return bridge.ListReply{Error: "list: the store could not be read"}
		}
		more := false // records of this page after the reply filled up
		for i := range recs {
			after = recs[i].ID
			if v, ok := r.view(ctx, &recs[i], req.As, req.Roles); ok {
				reply.Questions = append(reply.Questions, *v)
				if len(reply.Questions) == limit {
					more = i < len(recs)-1
					break
				}
			}
		}
		if len(recs) < limit && !more {
			after = 0 // the store has nothing after this page
			break
		}
	}
	if after != 0 {
		reply.Next = strconv.FormatInt(after, 10)
	}
	if req.As != "" {
		reply.Roles = r.o.Roles.held(req.As, req.Roles)
	}
	return reply
}

func (r *Runtime) apiShow(ctx context.Context, data []byte) any {
	var req bridge.ShowRequest
	if problem := decodeRequest("show", data, &req); problem != "" {
		return bridge.ShowReply{Error: problem}
	}
	if err := checkAs(req.As); err != nil {
		return bridge.ShowReply{Error: "as: " + err.Error()}
	}
	r.people.seen(req.As)
	if err := bridge.CheckToken("question_id", req.QuestionID); err != nil {
		return bridge.ShowReply{Error: err.Error()}
	}
	notFound := bridge.ShowReply{Error: bridge.NoQuestionShown(req.QuestionID)}
	var rec *record.Record
	var v *bridge.QuestionView
	if req.Tenant != "" && req.JobID != "" {
		var err error
		rec, err = r.queries.Find(ctx, record.Key{Tenant: req.Tenant, JobID: req.JobID, QuestionID: req.QuestionID, TaskVersion: req.TaskVersion})
		switch {
		case errors.Is(err, record.ErrNotFound):
			return notFound
		case err != nil:
			r.log.Error("api show", "err", err)
			return bridge.ShowReply{Error: "show: the store could not be read"}
		}
		var ok bool
		if v, ok = r.view(ctx, rec, req.As, req.Roles); !ok {
			return notFound
		}
	} else {
		// Among the jobs holding the id, only those the asker may know of
		// count: another tenant's question is neither shown nor hinted at.
		recs, err := r.queries.FindQuestionIDs(ctx, req.Tenant, req.JobID, req.QuestionID)
		if err != nil {
			r.log.Error("api show", "err", err)
			return bridge.ShowReply{Error: "show: the store could not be read"}
		}
		for _, c := range recs {
			cv, ok := r.view(ctx, c, req.As, req.Roles)
			if !ok {
				continue
			}
			if v != nil {
				return bridge.ShowReply{Error: fmt.Sprintf("Question id %s is used in more than one job you can see: name the job as <job>/%s, or the tenant too.", req.QuestionID, req.QuestionID)}
			}
			rec, v = c, cv
		}
		if v == nil {
			if len(recs) >= record.MaxQuestionIDJobs {
				// Not all the jobs holding the id were weighed.
				return bridge.ShowReply{Error: fmt.Sprintf("Question id %s is used in many jobs: name the job as <job>/%s.", req.QuestionID, req.QuestionID)}
			}
			return notFound
		}
	}
	reply := bridge.ShowReply{Question: v}
	if !v.Hidden {
		if audit, err := r.queries.Audit(ctx, rec.ID); err == nil {
			reply.Audit = audit
		}
	}
	return reply
}

func (r *Runtime) apiStats(ctx context.Context, data []byte) any {
	var req bridge.StatsRequest
	// Any body was accepted before; one that is not a request is the default.
	_ = json.Unmarshal(data, &req)
	since, err := statsSince(req)
	if err != nil {
		return bridge.StatsReply{Error: err.Error()}
	}
	whole, err := r.statsScope(req)
	if err != nil {
		return bridge.StatsReply{Error: err.Error()}
	}
	var reply bridge.StatsReply
	if whole {
		if reply.ByState, err = r.queries.CountByState(ctx); err != nil {
			return bridge.StatsReply{Error: "stats: the store could not be read"}
		}
		if reply.ByState == nil {
			reply.ByState = map[string]int64{}
		}
		if reply.OutboxBacklog, err = r.backlog(ctx); err != nil {
			return bridge.StatsReply{Error: "stats: the store could not be read"}
		}
	}
	until := r.stamp()
	reply.Clarification, err = clarification(ctx, r.queries, req.Tenant, until.Add(-since), until, func(t, a string) (string, string) { return t, a })
	if err != nil {
		r.log.Warn("stats: could not read the clarification measures", "err", err)
		return bridge.StatsReply{Error: "stats: the store could not be read"}
	}
	return reply
}

// statsScope says what a stats request may read: askbridge itself, an
// admin and a person with a role in every tenant read everything
// (whole); a person with roles in some tenants reads the measures of one
// of them, named, and not the counts of the whole service; a person
// without a role in it reads nothing. Roles come from the configuration
// (the intake drops a person's own).
func (r *Runtime) statsScope(req bridge.StatsRequest) (whole bool, err error) {
	if req.As == "" {
		return true, nil
	}
	if err := checkAs(req.As); err != nil {
		return false, fmt.Errorf("stats: as: %w", err)
	}
	var tenants []string
	for _, role := range r.o.Roles.held(req.As, nil) {
		tenant, _, scoped := strings.Cut(role, "/")
		if !scoped {
			return true, nil
		}
		if !slices.Contains(tenants, tenant) {
			tenants = append(tenants, tenant)
		}
	}
	switch {
	case len(tenants) == 0:
		return false, fmt.Errorf("stats: %s holds no role: the figures are for owners, admins, operators and readers", req.As)
	case req.Tenant == "" && len(tenants) == 1:
		return false, fmt.Errorf("stats: %s holds roles in %s only: name it (askbridge stats --tenant %s)", req.As, tenants[0], tenants[0])
	case req.Tenant == "":
		last := len(tenants) - 1
		return false, fmt.Errorf("stats: %s holds roles in %s and %s only: name one of them (askbridge stats --tenant %s)",
			req.As, strings.Join(tenants[:last], ", "), tenants[last], tenants[0])
	case !slices.Contains(tenants, req.Tenant):
		return false, fmt.Errorf("stats: %s holds no role in tenant %s: its figures are for its owners, admins, operators and readers", req.As, req.Tenant)
	}
	return false, nil
}
