package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/askbridge/askbridge/store/record"
)

// ladderWorkers bounds how many jobs a pass of the ladder fires at once.
// On a cluster a round is several round trips and a replicated write, so
// jobs fired one after the other fall behind their due times under load;
// one job's rounds and timeouts still fire in order.
const ladderWorkers = 16

// errRoundDropped is a round the record refused whole because one of its
// steps fired or its question ended meanwhile (another replica's round or
// timeout, an answer).
var errRoundDropped = errors.New("runtime: a step of the round fired or ended meanwhile")

// ladderJob is what a pass fires for one job: its rounds, in the order
// their first steps fell due, then its questions' timeouts.
type ladderJob struct {
	rounds   []*round
	timeouts []timeout
}

// timeout is a question's timeout step, with the question as the pass
// read it.
type timeout struct {
	step record.DueStep
	rec  *record.Record
}

// ladderJobs groups due steps by job: ladder steps (not timeouts) into
// rounds of a job and step kind, timeouts apart. Each step's question is
// read to learn its job, those of a pass at once.
func (r *Runtime) ladderJobs(ctx context.Context, due []record.DueStep) ([]*ladderJob, error) {
	recs := make([]*record.Record, len(due))
	var g errgroup.Group
	g.SetLimit(ladderWorkers)
	for i, d := range due {
		g.Go(func() (err error) {
			recs[i], err = r.steps.Get(ctx, d.Question)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var jobs []*ladderJob
	byJob := map[[2]string]*ladderJob{}
	byRound := map[roundKey]*round{}
	for i, d := range due {
		job := [2]string{recs[i].Tenant, recs[i].JobID}
		lj := byJob[job]
		if lj == nil {
			lj = &ladderJob{}
			byJob[job] = lj
			jobs = append(jobs, lj)
		}
		if d.Target == record.StepTimeout {
			lj.timeouts = append(lj.timeouts, timeout{d, recs[i]})
			continue
		}
		k := roundKey{recs[i].Tenant, recs[i].JobID, d.Target}
		if byRound[k] == nil {
			byRound[k] = &round{roundKey: k}
			lj.rounds = append(lj.rounds, byRound[k])
		}
		byRound[k].steps = append(byRound[k].steps, d)
	}
	return jobs, nil
}

// firePass fires jobs, ladderWorkers at once. failed says a round or a
// timeout could not be fired (each is logged), held that a timeout waits
// for an answer published before its deadline to be decided.
func (r *Runtime) firePass(ctx context.Context, jobs []*ladderJob, now time.Time) (failed, held bool) {
	var failedAny, heldAny atomic.Bool
	var g errgroup.Group
	g.SetLimit(ladderWorkers)
	for _, lj := range jobs {
		g.Go(func() error {
			f, h := r.fireJob(ctx, lj, now)
			if f {
				failedAny.Store(true)
			}
			if h {
				heldAny.Store(true)
			}
			return nil
		})
	}
	_ = g.Wait()
	return failedAny.Load(), heldAny.Load()
}

// fireJob fires one job's rounds, then its timeouts; it stops at the
// first that fails. One nudge per job and step kind; the job's thread
// re-surfaces its top question once in a pass (docs/design.md, "The queue
// and nudges").
func (r *Runtime) fireJob(ctx context.Context, lj *ladderJob, now time.Time) (failed, held bool) {
	dropped := false
	for i, rd := range lj.rounds {
		err := r.fireRound(ctx, rd, now, i == 0)
		if errors.Is(err, errRoundDropped) {
			dropped = true
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("ladder: fire a round", "tenant", rd.tenant, "job", rd.job, "step", rd.target, "err", err)
			}
			return true, held
		}
	}
	if dropped {
		// The steps of a dropped round that did not fire are still due,
		// and a question's timeout comes after its steps: the job's
		// timeouts wait for the next pass, which reads them again.
		return false, true
	}
	for _, to := range lj.timeouts {
		d := to.step
		err := r.fireStep(ctx, to.rec, now)
		if errors.Is(err, errAnswerWaiting) {
			held = true // again shortly, once the answer is decided
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("ladder: fire step", "question", d.Question, "step", d.Target, "err", err)
			}
			return true, held
		}
	}
	return false, held
}
