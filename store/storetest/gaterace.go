package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// testGateExecutesAtOnce: of 20 executes of one approved proposal
// committed at once, each in a batch of its own, exactly one takes it;
// every decision is in the job log.
func testGateExecutesAtOnce(t *testing.T, s Store) {
	q := Ask(t, s, NewApproval("job-1", "q-1", 1, "pr_1"))
	approve(t, s, q, "pr_1", T0)
	if taken := ExecuteAtOnce(t, []Store{s}, 20, "job-1", "pr_1"); taken != 1 {
		t.Fatalf("%d of 20 simultaneous executes took the proposal, want exactly 1", taken)
	}
	if got := logOf(t, s, "job-1"); len(got) != 20 {
		t.Fatalf("job log holds %d decisions, want the 20", len(got))
	}
}

// ExecuteAtOnce runs n gate executes of job's approved proposal id at
// once, spread over stores (replicas of one record), each in a GateCommit
// of its own as each replica's gate writer makes them. It returns how
// many took the proposal, and fails the test unless the proposal ends
// executed.
func ExecuteAtOnce(t *testing.T, stores []Store, n int, job, id string) int {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	taken := 0
	start := make(chan struct{})
	at := T0.Add(time.Minute)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var took bool
			w := record.GateWrite{Execute: &record.GateExecute{Tenant: Tenant, ProposalID: id, At: at,
				Decide: func(p *record.Proposal) (bool, record.LogEntry) {
					took = p != nil && p.State == bridge.ProposalApproved
					return took, gateEntry(job, "execute", at)
				}}}
			<-start
			if err := stores[i%len(stores)].GateCommit(ctx, []record.GateWrite{w}); err != nil {
				t.Errorf("execute %d: %v", i, err)
				return
			}
			if took {
				mu.Lock()
				taken++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if p := Proposal(t, stores[0], id); p.State != bridge.ProposalExecuted || !p.ExecutedAt.Equal(at) {
		t.Fatalf("the proposal after the executes: %+v", p)
	}
	return taken
}
