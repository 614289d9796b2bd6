package record

import (
	"cmp"
	"slices"
	"time"
	"unique"
)

// ClarifyIndex holds what the clarification measures read of each
// question, by row id and by job, so that a store answers ClarifyQuestions
// from memory: a stats request or a scrape that read the window's
// questions from the record took hundreds of milliseconds to seconds with
// a hundred thousand of them. A store keeps one current with what it
// writes (docs/design.md, "The clarification measures"). The zero value
// is empty; it is not safe for concurrent use.
type ClarifyIndex struct {
	jobOf map[int64]*indexedJob
	// jobs holds every job ever held, one with no question left too, so
	// that order stays whole: order is the jobs sorted as Questions
	// returns them, as of its last call, and fresh the jobs made since.
	jobs         map[jobRef]*indexedJob
	order, fresh []*indexedJob
}

// jobRef names a job.
type jobRef struct{ tenant, job string }

// indexedJob is a job's questions, and when the last of them was asked:
// a window's jobs are found by job, not by question.
type indexedJob struct {
	ref       jobRef
	questions []indexedQuestion
	lastAsked time.Time
}

// indexedQuestion is one question of a job, by its id.
type indexedQuestion struct {
	id int64
	q  ClarifyQuestion
}

// Put holds q as question id, in place of what was held of it.
func (ix *ClarifyIndex) Put(id int64, q ClarifyQuestion) {
	if ix.jobOf == nil {
		ix.jobOf, ix.jobs = map[int64]*indexedJob{}, map[jobRef]*indexedJob{}
	}
	ix.Remove(id)
	// One copy of each tenant, agent, field and state, however many
	// questions name it.
	q.Tenant, q.Agent, q.MissingField, q.State = intern(q.Tenant), intern(q.Agent), intern(q.MissingField), intern(q.State)
	ref := jobRef{q.Tenant, q.JobID}
	j := ix.jobs[ref]
	if j == nil {
		j = &indexedJob{ref: ref}
		ix.jobs[ref] = j
		ix.fresh = append(ix.fresh, j)
	}
	j.questions = append(j.questions, indexedQuestion{id, q})
	if q.AskedAt.After(j.lastAsked) {
		j.lastAsked = q.AskedAt
	}
	ix.jobOf[id] = j
}

// Remove lets go of question id.
func (ix *ClarifyIndex) Remove(id int64) {
	j, ok := ix.jobOf[id]
	if !ok {
		return
	}
	delete(ix.jobOf, id)
	j.questions = slices.DeleteFunc(j.questions, func(x indexedQuestion) bool { return x.id == id })
	j.lastAsked = time.Time{}
	for _, x := range j.questions {
		if x.q.AskedAt.After(j.lastAsked) {
			j.lastAsked = x.q.AskedAt
		}
	}
}

// Len is how many questions ix holds.
func (ix *ClarifyIndex) Len() int { return len(ix.jobOf) }

// intern is the one copy of s the process keeps.
func intern(s string) string { return unique.Make(s).Value() }

// Questions is ClarifyQuestions of what ix holds: the questions of every
// job that had one asked since since (of tenant, when given), by tenant
// and job, each job's in the order asked (by id among those asked at
// once), the earlier ones too.
func (ix *ClarifyIndex) Questions(tenant string, since time.Time) []ClarifyQuestion {
	ix.sortJobs()
	var jobs []*indexedJob
	n := 0
	for _, j := range ix.order {
		if len(j.questions) > 0 && !j.lastAsked.Before(since) && (tenant == "" || j.ref.tenant == tenant) {
			jobs = append(jobs, j)
			n += len(j.questions)
		}
	}
	out := make([]ClarifyQuestion, 0, n)
	asked := func(a, b indexedQuestion) int {
		return cmp.Or(a.q.AskedAt.Compare(b.q.AskedAt), cmp.Compare(a.id, b.id))
	}
	for _, j := range jobs {
		if !slices.IsSortedFunc(j.questions, asked) {
			slices.SortFunc(j.questions, asked)
		}
		for _, x := range j.questions {
			out = append(out, x.q)
		}
	}
	return out
}

// sortJobs merges the jobs made since the last call into order.
func (ix *ClarifyIndex) sortJobs() {
	if len(ix.fresh) == 0 {
		return
	}
	byRef := func(a, b *indexedJob) int {
		return cmp.Or(cmp.Compare(a.ref.tenant, b.ref.tenant), cmp.Compare(a.ref.job, b.ref.job))
	}
	slices.SortFunc(ix.fresh, byRef)
	merged := make([]*indexedJob, 0, len(ix.order)+len(ix.fresh))
	old, fresh := ix.order, ix.fresh
	for len(old) > 0 && len(fresh) > 0 {
		if byRef(old[0], fresh[0]) <= 0 {
			merged, old = append(merged, old[0]), old[1:]
		} else {
			merged, fresh = append(merged, fresh[0]), fresh[1:]
		}
	}
	ix.order, ix.fresh = append(append(merged, old...), fresh...), nil
}

// LatestAgent is the agent of the job's latest question (by id), "" when
// ix holds none of it.
func (ix *ClarifyIndex) LatestAgent(tenant, job string) string {
	j := ix.jobs[jobRef{tenant, job}]
	if j == nil || len(j.questions) == 0 {
		return ""
	}
	latest := slices.MaxFunc(j.questions, func(a, b indexedQuestion) int { return cmp.Compare(a.id, b.id) })
	return latest.q.Agent
}
