package jsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/askbridge/askbridge/store/record"
)

// List returns one page of questions, by id, as SQLite's List. It reads
// the state index for the filter's tenant, state and job, then the page's
// documents only.
func (s *Store) List(ctx context.Context, f record.ListFilter) ([]record.Record, error) {
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	keys, err := s.states(ctx, stateFilter(f.Tenant, f.State, f.JobID))
	if err != nil {
		return nil, fmt.Errorf("jsstore: list: %w", err)
	}
	from, _ := slices.BinarySearchFunc(keys, f.AfterID+1, func(k stateKey, id int64) int { return cmp.Compare(k.id, id) })
	keys = keys[from:]
	out := make([]record.Record, 0, min(limit, len(keys)))
	for len(out) < limit && len(keys) > 0 {
		n := min(limit-len(out), len(keys))
		ids := make([]int64, n)
		for i, k := range keys[:n] {
			ids[i] = k.id
		}
		keys = keys[n:]
		docs, err := s.readDocs(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("jsstore: list: %w", err)
		}
		for _, rd := range docs {
			// A question that moved on since the index was read is left
			// to the next read, as a later query would.
			if rd.d != nil && (f.State == "" || rd.d.Record.State == f.State) {
				out = append(out, rd.d.Record)
			}
		}
	}
	return out, nil
}

// jobDocs reads every question document of a job, every task version, by
// id. The uniqueness keys list them: they are written once and never move.
func (s *Store) jobDocs(ctx context.Context, tenant, job string) ([]readDoc, error) {
	if tenant == "" || job == "" {
		return nil, nil
	}
	vs, err := s.versions(ctx, tenant, job, "")
	if err != nil {
		return nil, err
	}
	docs, err := s.readVersions(ctx, vs)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(docs, func(rd readDoc) bool { return rd.d == nil }), nil
}

// readVersions sorts vs by id and reads their documents, in that order; a
// missing one is nil.
func (s *Store) readVersions(ctx context.Context, vs []versioned) ([]readDoc, error) {
	slices.SortFunc(vs, func(a, b versioned) int { return cmp.Compare(a.id, b.id) })
	ids := make([]int64, len(vs))
	for i, v := range vs {
		ids[i] = v.id
	}
	return s.readDocs(ctx, ids)
}

// JobQuestions returns every question of a job, every task version, in
// the order they were asked.
func (s *Store) JobQuestions(ctx context.Context, tenant, job string) ([]record.Record, error) {
	docs, err := s.jobDocs(ctx, tenant, job)
	if err != nil {
		return nil, fmt.Errorf("jsstore: read the questions of job %s/%s: %w", tenant, job, err)
	}
	var out []record.Record
	for _, rd := range docs {
		out = append(out, rd.d.Record)
	}
	return out, nil
}

// JobAudit returns the transitions of every question of a job, every task
// version, in the order they were written: by the revision of the commit
// that wrote each (its ID), then as its document lists them.
func (s *Store) JobAudit(ctx context.Context, tenant, job string) ([]record.JobAuditEntry, error) {
	docs, err := s.jobDocs(ctx, tenant, job)
	if err != nil {
		return nil, fmt.Errorf("jsstore: read the audit of job %s/%s: %w", tenant, job, err)
	}
	var out []record.JobAuditEntry
	for _, rd := range docs {
		r := &rd.d.Record
		for _, a := range rd.d.auditEntries(rd.rev) {
			out = append(out, record.JobAuditEntry{ID: int64(a.Rev), Question: r.ID, QuestionID: r.QuestionID,
				TaskVersion: r.TaskVersion, From: a.From, To: a.To, By: a.By, Via: a.Via, Reason: a.Reason, At: a.At})
		}
	}
	// Stable: one commit's entries of a document keep their order.
	slices.SortStableFunc(out, func(a, b record.JobAuditEntry) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// jobsAtOnce is how many jobs' uniqueness keys one multi read asks for: a
// job has a few, and the server answers at most 1,024 keys a read.
const jobsAtOnce = 128

// manyJobDocs reads every question document of each of jobs, as jobDocs
// does for one, with a multi read per jobsAtOnce jobs and one per
// maxMulti documents instead of a watch and a read per job.
func (s *Store) manyJobDocs(ctx context.Context, jobs []jobRef) (map[jobRef][]readDoc, error) {
	var vs []versioned
	for chunk := range slices.Chunk(jobs, jobsAtOnce) {
		got, err := s.jobVersions(ctx, chunk)
		if err != nil {
			return nil, err
		}
		vs = append(vs, got...)
	}
	docs, err := s.readVersions(ctx, vs)
	if err != nil {
		return nil, err
	}
	out := make(map[jobRef][]readDoc, len(jobs))
	for i, v := range vs {
		if docs[i].d != nil {
			j := jobRef{v.tenant, v.job}
			out[j] = append(out[j], docs[i])
		}
	}
	return out, nil
}

// jobVersions reads the uniqueness keys of jobs in one multi read, or in
// halves when the server answers it in part; one job's as versions does.
func (s *Store) jobVersions(ctx context.Context, jobs []jobRef) ([]versioned, error) {
	if len(jobs) == 1 {
		return s.versions(ctx, jobs[0].tenant, jobs[0].job, "")
	}
	patterns := make([]string, len(jobs))
	for i, j := range jobs {
		patterns[i] = "qk." + enc(j.tenant) + "." + enc(j.job) + ".*.*"
	}
	got := map[string]entry{}
	switch err := s.multiLast(ctx, patterns, got); {
	case errors.Is(err, errCutShort):
		half := len(jobs) / 2
		first, err := s.jobVersions(ctx, jobs[:half])
		if err != nil {
			return nil, err
		}
		rest, err := s.jobVersions(ctx, jobs[half:])
		return append(first, rest...), err
	case err != nil:
		return nil, fmt.Errorf("read the questions of %d jobs: %w", len(jobs), err)
	}
	return parseVersions(slices.Collect(maps.Values(got)))
}
