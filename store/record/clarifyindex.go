package record

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// ClarifyIndex holds what the clarification measures read of each
// question, by row id and by job, so that a store answers ClarifyQuestions
// from memory: a stats request or a scrape that read the window's
// questions from the record took hundreds of milliseconds to seconds with
// a hundred thousand of them. A store keeps one current with what it
// writes (docs/design.md, "The clarification measures"). The zero value
// is empty; it is not safe for concurrent use.
type ClarifyIndex struct {
	questions map[int64]ClarifyQuestion
	jobs      map[jobRef][]int64
	// words holds one copy of each tenant, agent, field and state.
	words map[string]string
}

// jobRef names a job.
type jobRef struct{ tenant, job string }

// Put holds q as question id, in place of what was held of it.
func (ix *ClarifyIndex) Put(id int64, q ClarifyQuestion) {
	if ix.questions == nil {
		ix.questions, ix.jobs, ix.words = map[int64]ClarifyQuestion{}, map[jobRef][]int64{}, map[string]string{}
	}
	q.Tenant, q.Agent, q.MissingField, q.State = ix.word(q.Tenant), ix.word(q.Agent), ix.word(q.MissingField), ix.word(q.State)
	if _, ok := ix.questions[id]; ok {
		ix.Remove(id)
	}
	ix.questions[id] = q
	j := jobRef{q.Tenant, q.JobID}
	ix.jobs[j] = append(ix.jobs[j], id)
}

// Remove lets go of question id.
func (ix *ClarifyIndex) Remove(id int64) {
	q, ok := ix.questions[id]
	if !ok {
		return
	}
	delete(ix.questions, id)
	j := jobRef{q.Tenant, q.JobID}
	if ids := slices.DeleteFunc(ix.jobs[j], func(x int64) bool { return x == id }); len(ids) > 0 {
		ix.jobs[j] = ids
	} else {
		delete(ix.jobs, j)
	}
}

// Len is how many questions ix holds.
func (ix *ClarifyIndex) Len() int { return len(ix.questions) }

func (ix *ClarifyIndex) word(s string) string {
	if w, ok := ix.words[s]; ok {
		return w
	}
	ix.words[s] = s
	return s
}

// Questions is ClarifyQuestions of what ix holds: the questions of every
// job that had one asked since since (of tenant, when given), by tenant
// and job, each job's in the order asked (by id among those asked at
// once), the earlier ones too.
func (ix *ClarifyIndex) Questions(tenant string, since time.Time) []ClarifyQuestion {
	from := since.UnixMilli()
	inWindow := map[jobRef]bool{}
	for _, q := range ix.questions {
		if q.AskedAt.UnixMilli() >= from && (tenant == "" || q.Tenant == tenant) {
			inWindow[jobRef{q.Tenant, q.JobID}] = true
		}
	}
	jobs := slices.SortedFunc(maps.Keys(inWindow), func(a, b jobRef) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.job, b.job))
	})
	out := make([]ClarifyQuestion, 0, 2*len(jobs))
	var ids []int64
	for _, j := range jobs {
		ids = append(ids[:0], ix.jobs[j]...)
		slices.SortFunc(ids, func(a, b int64) int {
			return cmp.Or(ix.questions[a].AskedAt.Compare(ix.questions[b].AskedAt), cmp.Compare(a, b))
		})
		for _, id := range ids {
			out = append(out, ix.questions[id])
		}
	}
	return out
}

// LatestAgent is the agent of the job's latest question (by id), "" when
// ix holds none of it.
func (ix *ClarifyIndex) LatestAgent(tenant, job string) string {
	var latest int64
	agent := ""
	for _, id := range ix.jobs[jobRef{tenant, job}] {
		if id > latest {
			latest, agent = id, ix.questions[id].Agent
		}
	}
	return agent
}
