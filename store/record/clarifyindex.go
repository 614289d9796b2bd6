package record

import (
	"cmp"
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
	jobs      map[jobRef]*indexedJob
	// words holds one copy of each tenant, agent, field and state.
	words map[string]string
}

// jobRef names a job.
type jobRef struct{ tenant, job string }

// indexedJob is a job's questions, and when the last of them was asked:
// a window's jobs are found by job, not by question.
type indexedJob struct {
	ids       []int64
	lastAsked time.Time
}

// Put holds q as question id, in place of what was held of it.
func (ix *ClarifyIndex) Put(id int64, q ClarifyQuestion) {
	if ix.questions == nil {
		ix.questions, ix.jobs, ix.words = map[int64]ClarifyQuestion{}, map[jobRef]*indexedJob{}, map[string]string{}
	}
	q.Tenant, q.Agent, q.MissingField, q.State = ix.word(q.Tenant), ix.word(q.Agent), ix.word(q.MissingField), ix.word(q.State)
	if _, ok := ix.questions[id]; ok {
		ix.Remove(id)
	}
	ix.questions[id] = q
	j := ix.jobs[jobRef{q.Tenant, q.JobID}]
	if j == nil {
		j = &indexedJob{}
		ix.jobs[jobRef{q.Tenant, q.JobID}] = j
	}
	j.ids = append(j.ids, id)
	if q.AskedAt.After(j.lastAsked) {
		j.lastAsked = q.AskedAt
	}
}

// Remove lets go of question id.
func (ix *ClarifyIndex) Remove(id int64) {
	q, ok := ix.questions[id]
	if !ok {
		return
	}
	delete(ix.questions, id)
	ref := jobRef{q.Tenant, q.JobID}
	j := ix.jobs[ref]
	if j.ids = slices.DeleteFunc(j.ids, func(x int64) bool { return x == id }); len(j.ids) == 0 {
		delete(ix.jobs, ref)
		return
	}
	j.lastAsked = time.Time{}
	for _, x := range j.ids {
		if asked := ix.questions[x].AskedAt; asked.After(j.lastAsked) {
			j.lastAsked = asked
		}
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
	var jobs []jobRef
	n := 0
	for ref, j := range ix.jobs {
		if !j.lastAsked.Before(since) && (tenant == "" || ref.tenant == tenant) {
			jobs = append(jobs, ref)
			n += len(j.ids)
		}
	}
	slices.SortFunc(jobs, func(a, b jobRef) int {
		return cmp.Or(cmp.Compare(a.tenant, b.tenant), cmp.Compare(a.job, b.job))
	})
	out := make([]ClarifyQuestion, 0, n)
	type held struct {
		id int64
		q  ClarifyQuestion
	}
	var job []held
	for _, ref := range jobs {
		job = job[:0]
		for _, id := range ix.jobs[ref].ids {
			job = append(job, held{id, ix.questions[id]})
		}
		slices.SortFunc(job, func(a, b held) int { return cmp.Or(a.q.AskedAt.Compare(b.q.AskedAt), cmp.Compare(a.id, b.id)) })
		for _, h := range job {
			out = append(out, h.q)
		}
	}
	return out
}

// LatestAgent is the agent of the job's latest question (by id), "" when
// ix holds none of it.
func (ix *ClarifyIndex) LatestAgent(tenant, job string) string {
	var latest int64
	agent := ""
	j := ix.jobs[jobRef{tenant, job}]
	if j == nil {
		return ""
	}
	for _, id := range j.ids {
		if id > latest {
			latest, agent = id, ix.questions[id].Agent
		}
	}
	return agent
}
