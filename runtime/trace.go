package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// traceStore is what ask.v1.api.trace reads (docs/design.md "The trace").
type traceStore interface {
	JobQuestions(ctx context.Context, tenant, job string) ([]record.Record, error)
	JobAudit(ctx context.Context, tenant, job string) ([]record.JobAuditEntry, error)
	JobLog(ctx context.Context, tenant, job string) ([]record.LogEntry, error)
}

// Entries of one trace reply, unless the request asks for fewer.
const (
	traceLimit    = 500
	traceMaxLimit = 1000
)

// apiTrace answers ask.v1.api.trace: the job's timeline from the record,
// shown as show shows its questions (docs/contract.md "ask.v1.api.trace").
func (r *Runtime) apiTrace(ctx context.Context, data []byte) any {
	var req bridge.TraceRequest
	if problem := decodeRequest("trace", data, &req); problem != "" {
		return bridge.TraceReply{Error: problem}
	}
	if err := checkAs(req.As); err != nil {
		return bridge.TraceReply{Error: "as: " + err.Error()}
	}
	for _, f := range []struct{ name, value string }{{"tenant", req.Tenant}, {"job_id", req.JobID}} {
		if err := bridge.CheckToken(f.name, f.value); err != nil {
			return bridge.TraceReply{Error: err.Error()}
		}
	}
	limit := req.Limit
	switch {
	case limit == 0:
		limit = traceLimit
	case limit < 0 || limit > traceMaxLimit:
		return bridge.TraceReply{Error: fmt.Sprintf("limit: must be between 1 and %d, not %d", traceMaxLimit, limit)}
	}
	from := 0
	if req.After != "" {
		n, err := strconv.Atoi(req.After)
		if err != nil || n < 0 {
			return bridge.TraceReply{Error: "after: not a cursor from a previous trace"}
		}
		from = n
	}
	entries, err := r.trace(ctx, req)
	if err != nil {
		r.log.Error("api trace", "tenant", req.Tenant, "job", req.JobID, "err", err)
		return bridge.TraceReply{Error: "trace: the store could not be read"}
	}
	if len(entries) == 0 {
		// An unknown job and one the asker may know nothing of read alike.
		return bridge.TraceReply{Error: fmt.Sprintf("There is no job %s in tenant %s that you can see.", req.JobID, req.Tenant)}
	}
	return tracePage(entries, from, limit, int(r.nc.MaxPayload()))
}

// tracePage is the entries from from on, at most limit of them and no more
// than fit in one NATS message of maxPayload bytes.
func tracePage(entries []bridge.TraceEntry, from, limit, maxPayload int) bridge.TraceReply {
	reply := bridge.TraceReply{Entries: []bridge.TraceEntry{}}
	budget := maxPayload - 1024 // the reply's own fields and the cursor
	for i := from; i < len(entries); i++ {
		data, err := json.Marshal(entries[i])
		if err != nil {
			continue
		}
		budget -= len(data) + 1
		if len(reply.Entries) == limit || (budget < 0 && len(reply.Entries) > 0) {
			reply.Next = strconv.Itoa(i)
			break
		}
		reply.Entries = append(reply.Entries, entries[i])
	}
	return reply
}

// trace reads a job's questions, their transitions and the job log, and
// merges them in order of time. At the same millisecond an approval
// comes before the transition it caused (the last approval settles its
// question), then the questions' transitions, then the rest of the log,
// each in the order written. Entries the asker may not know of
// are left out; those whose content is not theirs to read are hidden.
func (r *Runtime) trace(ctx context.Context, req bridge.TraceRequest) ([]bridge.TraceEntry, error) {
	recs, err := r.queries.JobQuestions(ctx, req.Tenant, req.JobID)
	if err != nil {
		return nil, err
	}
	audit, err := r.queries.JobAudit(ctx, req.Tenant, req.JobID)
	if err != nil {
		return nil, err
	}
	log, err := r.queries.JobLog(ctx, req.Tenant, req.JobID)
	if err != nil {
		return nil, err
	}
	tr := newTraceReader(r.o.Roles, req, recs)
	out := make([]bridge.TraceEntry, 0, len(audit)+len(log))
	for _, a := range audit {
		rec := tr.byRow[a.Question]
		e, ok := auditEntry(a, rec)
		if ok {
			out = tr.add(out, e, rec)
		}
	}
	for _, l := range log {
		e := r.logEntry(l)
		out = tr.add(out, e, tr.find(e.QuestionID, e.TaskVersion))
	}
	slices.SortStableFunc(out, func(a, b bridge.TraceEntry) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(tieRank(a), tieRank(b)))
	})
	return out, nil
}

// tieRank orders entries of the same millisecond: causes before effects.
func tieRank(e bridge.TraceEntry) int {
	switch e.Kind {
	case bridge.TraceApproval:
		return 0
	case bridge.TraceAsked, bridge.TraceAnswered, bridge.TraceDeclined, bridge.TraceCancelled,
		bridge.TraceTimedOut, bridge.TraceSuperseded, bridge.TraceFailed:
		return 1
	}
	return 2
}

// traceReader weighs each entry against the question it is about, as show
// weighs the question.
type traceReader struct {
	roles  Roles
	req    bridge.TraceRequest
	byRow  map[int64]*record.Record
	byKey  map[string]*record.Record // question id and version; id alone for the latest
	access map[*record.Record]access
}

func newTraceReader(roles Roles, req bridge.TraceRequest, recs []record.Record) *traceReader {
	tr := &traceReader{roles: roles, req: req, byRow: map[int64]*record.Record{}, byKey: map[string]*record.Record{},
		access: map[*record.Record]access{}}
	for i := range recs {
		rec := &recs[i]
		tr.byRow[rec.ID] = rec
		tr.byKey[rec.QuestionID+"@"+strconv.FormatInt(rec.TaskVersion, 10)] = rec
		if latest := tr.byKey[rec.QuestionID]; latest == nil || latest.TaskVersion <= rec.TaskVersion {
			tr.byKey[rec.QuestionID] = rec
		}
	}
	return tr
}

// find is the question an entry names: at its version when recorded, else
// its latest version; nil when it names none the job holds.
func (tr *traceReader) find(questionID string, version int64) *record.Record {
	if questionID == "" {
		return nil
	}
	if rec := tr.byKey[questionID+"@"+strconv.FormatInt(version, 10)]; rec != nil {
		return rec
	}
	return tr.byKey[questionID]
}

// accessTo is what the asker may do with rec; a nil rec (an entry about
// the job as a whole) is weighed as a question of tenant visibility.
func (tr *traceReader) accessTo(rec *record.Record) access {
	if tr.req.As == "" {
		return access{Exists: true, See: true}
	}
	if a, ok := tr.access[rec]; ok {
		return a
	}
	var q *bridge.Question
	if rec != nil {
		q = decodeBody(rec)
	}
	a := tr.roles.accessFor(tr.req.Tenant, tr.req.As, tr.req.Roles, q)
	tr.access[rec] = a
	return a
}

// add appends e to out as the asker may see it.
func (tr *traceReader) add(out []bridge.TraceEntry, e bridge.TraceEntry, rec *record.Record) []bridge.TraceEntry {
	acc := tr.accessTo(rec)
	switch {
	case !acc.Exists:
		return out
	case !acc.See:
		e = hiddenEntry(e)
	}
	return append(out, e)
}
