package record

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestClarifyIndex(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	q := func(tenant, job, qid, agent, state string, asked time.Duration) ClarifyQuestion {
		return ClarifyQuestion{Tenant: tenant, JobID: job, QuestionID: qid, Agent: agent, State: state, AskedAt: t0.Add(asked)}
	}
	var ix ClarifyIndex
	ix.Put(1, q("acme", "job-1", "q-1", "billing", "answered", -48*time.Hour))
	ix.Put(2, q("acme", "job-1", "q-2", "billing", "pending", time.Hour))
	ix.Put(4, q("acme", "job-2", "q-b", "support", "pending", 2*time.Hour))
	ix.Put(3, q("acme", "job-2", "q-a", "support", "pending", 2*time.Hour))
	ix.Put(5, q("beta", "job-1", "q-1", "deploy", "pending", -time.Hour))
	ix.Put(6, q("acme", "job-3", "q-1", "support", "pending", -72*time.Hour))
	ix.Put(2, q("acme", "job-1", "q-2", "billing-v2", "declined", time.Hour)) // held anew
	ix.Put(7, q("acme", "job-4", "q-1", "support", "pending", 3*time.Hour))
	ix.Remove(7)
	ix.Remove(99)
	// A job whose latest question is held anew as asked earlier, or
	// let go of, is in a window by the questions it has left.
	ix.Put(8, q("acme", "job-5", "q-1", "support", "pending", 4*time.Hour))
	ix.Put(8, q("acme", "job-5", "q-1", "support", "pending", -96*time.Hour))
	ix.Put(9, q("acme", "job-6", "q-1", "support", "pending", -100*time.Hour))
	ix.Put(10, q("acme", "job-6", "q-2", "support", "pending", 5*time.Hour))
	ix.Remove(10)
	show := func(qs []ClarifyQuestion) []string {
		out := []string{}
		for _, q := range qs {
			out = append(out, fmt.Sprintf("%s/%s/%s %s %s", q.Tenant, q.JobID, q.QuestionID, q.Agent, q.State))
		}
		return out
	}
	for _, c := range []struct {
		tenant string
		since  time.Duration
		want   []string
	}{
		// A job's earlier questions come with it; a job wholly before the
		// window does not; by tenant and job, then as asked, then by id.
		{"", 0, []string{"acme/job-1/q-1 billing answered", "acme/job-1/q-2 billing-v2 declined",
			"acme/job-2/q-a support pending", "acme/job-2/q-b support pending"}},
		{"", -2 * time.Hour, []string{"acme/job-1/q-1 billing answered", "acme/job-1/q-2 billing-v2 declined",
			"acme/job-2/q-a support pending", "acme/job-2/q-b support pending", "beta/job-1/q-1 deploy pending"}},
		{"beta", -2 * time.Hour, []string{"beta/job-1/q-1 deploy pending"}},
		{"acme", 90 * time.Minute, []string{"acme/job-2/q-a support pending", "acme/job-2/q-b support pending"}},
		{"", 3 * time.Hour, []string{}},
	} {
		if got := show(ix.Questions(c.tenant, t0.Add(c.since))); !slices.Equal(got, c.want) {
			t.Errorf("Questions(%q, t0%+v) =\n %q\nwant\n %q", c.tenant, c.since, got, c.want)
		}
	}
	// Jobs made after a call of Questions fall into their place by name.
	ix.Put(11, q("acme", "job-25", "q-1", "deploy", "pending", 5*time.Hour))
	ix.Put(12, q("acme", "job-0", "q-1", "deploy", "pending", 5*time.Hour))
	for since, want := range map[time.Duration][]string{
		4 * time.Hour: {"acme/job-0/q-1 deploy pending", "acme/job-25/q-1 deploy pending"},
		0: {"acme/job-0/q-1 deploy pending", "acme/job-1/q-1 billing answered", "acme/job-1/q-2 billing-v2 declined",
			"acme/job-2/q-a support pending", "acme/job-2/q-b support pending", "acme/job-25/q-1 deploy pending"},
	} {
		if got := show(ix.Questions("acme", t0.Add(since))); !slices.Equal(got, want) {
			t.Errorf("with new jobs, Questions(acme, t0%+v) =\n %q\nwant\n %q", since, got, want)
		}
	}
	ix.Remove(11)
	ix.Remove(12)
	if ix.Len() != 8 {
		t.Errorf("holds %d questions, want 8", ix.Len())
	}
	for _, c := range []struct{ tenant, job, want string }{
		{"acme", "job-1", "billing-v2"}, {"acme", "job-2", "support"}, {"acme", "job-4", ""}, {"gamma", "job-1", ""},
	} {
		if got := ix.LatestAgent(c.tenant, c.job); got != c.want {
			t.Errorf("LatestAgent(%s, %s) = %q, want %q", c.tenant, c.job, got, c.want)
		}
	}
}
