package jsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// Get reads a question by its id.
func (s *Store) Get(ctx context.Context, id int64) (*record.Record, error) {
	d, _, ok, err := s.getQuestion(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("jsstore: get question %d: %w", id, err)
	}
	if !ok {
		return nil, record.ErrNotFound
	}
	return &d.Record, nil
}

// Find reads a question by key; TaskVersion 0 finds the latest version.
func (s *Store) Find(ctx context.Context, k record.Key) (*record.Record, error) {
	d, _, err := s.findDoc(ctx, k)
	if err != nil {
		return nil, err
	}
	return &d.Record, nil
}

// findDoc reads the document of the question k names (its latest version
// when k names none), with its revision; record.ErrNotFound when there is none.
func (s *Store) findDoc(ctx context.Context, k record.Key) (*questionDoc, uint64, error) {
	var q int64
	var ok bool
	var err error
	if k.TaskVersion == 0 {
		q, ok, err = s.latestVersion(ctx, k.Tenant, k.JobID, k.QuestionID)
	} else {
		q, ok, err = s.questionAt(ctx, k.Tenant, k.JobID, k.QuestionID, k.TaskVersion)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("jsstore: find question %s: %w", k, err)
	}
	if !ok {
		return nil, 0, record.ErrNotFound
	}
	d, rev, ok, err := s.getQuestion(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("jsstore: find question %s: %w", k, err)
	}
	if !ok {
		return nil, 0, record.ErrNotFound
	}
	return d, rev, nil
}

// questionAt reads the id of a question at a task version from its
// uniqueness key.
func (s *Store) questionAt(ctx context.Context, tenant, job, qid string, version int64) (int64, bool, error) {
	data, _, ok, err := s.get(ctx, keyQuestionVersion(tenant, job, qid, version))
	if err != nil || !ok {
		return 0, false, err
	}
	q, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("jsstore: the key of %s/%s/%s@%d holds %q", tenant, job, qid, version, data)
	}
	return q, true, nil
}

// latestVersion reads the id of a question's latest version in one read:
// the uniqueness key written last. A question's versions are recorded in
// the order of their versions, since an ask below the job's version is
// Stale and the job's version never goes back.
func (s *Store) latestVersion(ctx context.Context, tenant, job, qid string) (int64, bool, error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, subjectPrefix+"qk."+enc(tenant)+"."+enc(job)+"."+enc(qid)+".*")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	q, err := strconv.ParseInt(string(m.Data), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("jsstore: the key %s holds %q", m.Subject, m.Data)
	}
	return q, true, nil
}

// versioned is one uniqueness key qk.<tenant>.<job>.<qid>.<version>: a
// question id at a task version, and its question's id.
type versioned struct {
	tenant, job, qid string
	version          int64
	id               int64
}

// versions lists the uniqueness keys matching tenant, job and question id
// ("" matches any), by task version then id. One multi read answers up to
// 1,024 keys; more are read by a watch, which on a cluster costs a
// consumer made and deleted through the meta leader.
func (s *Store) versions(ctx context.Context, tenant, job, qid string) ([]versioned, error) {
	tok := func(v string) string {
		if v == "" {
			return "*"
		}
		return enc(v)
	}
	filter := "qk." + tok(tenant) + "." + tok(job) + "." + tok(qid) + ".*"
	got := map[string]entry{}
	var entries []entry
	switch err := s.multiLast(ctx, []string{filter}, got); {
	case errors.Is(err, errCutShort):
		if entries, err = s.listByWatch(ctx, filter); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		entries = slices.Collect(maps.Values(got))
	}
	out, err := parseVersions(entries)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b versioned) int { return cmp.Or(cmp.Compare(a.version, b.version), cmp.Compare(a.id, b.id)) })
	return out, nil
}

// parseVersions reads uniqueness keys, qk.<tenant>.<job>.<question>.<version>,
// each holding its question's id.
func parseVersions(entries []entry) ([]versioned, error) {
	out := make([]versioned, 0, len(entries))
	for _, e := range entries {
		parts := strings.Split(e.Key, ".")
		if len(parts) != 5 {
			return nil, fmt.Errorf("jsstore: malformed question key %s", e.Key)
		}
		v, err1 := strconv.ParseInt(parts[4], 10, 64)
		id, err2 := strconv.ParseInt(string(e.Value), 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("jsstore: malformed question key %s = %q", e.Key, e.Value)
		}
		out = append(out, versioned{tenant: dec(parts[1]), job: dec(parts[2]), qid: dec(parts[3]), version: v, id: id})
	}
	return out, nil
}

// FindQuestionIDs finds the latest version of a question id in every job
// that has one (at most record.MaxQuestionIDJobs jobs); tenant and job
// narrow the search when given. Like SQLite it weighs the 200 latest
// versions only.
func (s *Store) FindQuestionIDs(ctx context.Context, tenant, job, questionID string) ([]*record.Record, error) {
	vs, err := s.versions(ctx, tenant, job, questionID)
	if err != nil {
		return nil, fmt.Errorf("jsstore: find question %s: %w", questionID, err)
	}
	slices.Reverse(vs)
	vs = vs[:min(len(vs), 200)]
	var ids []int64
	seen := map[[2]string]bool{}
	for _, v := range vs {
		k := [2]string{v.tenant, v.job}
		if !seen[k] && len(ids) < record.MaxQuestionIDJobs {
			seen[k] = true
			ids = append(ids, v.id)
		}
	}
	docs, err := s.readDocs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("jsstore: find question %s: %w", questionID, err)
	}
	var out []*record.Record
	for _, rd := range docs {
		if rd.d != nil {
			out = append(out, &rd.d.Record)
		}
	}
	return out, nil
}

// Audit returns a question's transitions, oldest first.
func (s *Store) Audit(ctx context.Context, question int64) ([]bridge.AuditEntry, error) {
	d, _, ok, err := s.getQuestion(ctx, question)
	if err != nil {
		return nil, fmt.Errorf("jsstore: audit %d: %w", question, err)
	}
	if !ok {
		return nil, nil
	}
	var out []bridge.AuditEntry
	for _, a := range d.Audit {
		out = append(out, a.AuditEntry)
	}
	return out, nil
}

// stateKey is one state index key qs.<tenant>.<state>.<job>.<id>.
type stateKey struct {
	tenant, state, job string
	id                 int64
}

// states lists the state index keys matching filter, by question id.
func (s *Store) states(ctx context.Context, filter string) ([]stateKey, error) {
	entries, err := s.list(ctx, filter)
	if err != nil {
		return nil, err
	}
	out := make([]stateKey, 0, len(entries))
	for _, e := range entries {
		parts := strings.Split(e.Key, ".")
		if e.Key == keyStateMark {
			continue
		}
		if len(parts) != 5 {
			return nil, fmt.Errorf("jsstore: malformed state key %s", e.Key)
		}
		id, err := strconv.ParseInt(parts[4], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("jsstore: malformed state key %s", e.Key)
		}
		out = append(out, stateKey{tenant: dec(parts[1]), state: dec(parts[2]), job: dec(parts[3]), id: id})
	}
	slices.SortFunc(out, func(a, b stateKey) int { return cmp.Compare(a.id, b.id) })
	// A question moved while the index was read may show twice.
	return slices.CompactFunc(out, func(a, b stateKey) bool { return a.id == b.id }), nil
}

// stateFilter is the state index pattern of tenant, state and job; ""
// matches any.
func stateFilter(tenant, state, job string) string {
	tok := func(v string) string {
		if v == "" {
			return "*"
		}
		return enc(v)
	}
	return "qs." + tok(tenant) + "." + tok(state) + "." + tok(job) + ".*"
}

// readDocs reads the documents of ids with their revisions in a multi
// read (getDocs); a question with none has a nil document.
func (s *Store) readDocs(ctx context.Context, ids []int64) ([]readDoc, error) {
	docs, revs, err := s.getDocs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]readDoc, len(ids))
	for i := range ids {
		out[i] = readDoc{docs[i], revs[i]}
	}
	return out, nil
}
