package torture

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// windows returns the load's context, which ends after Duration once MinKills
// restarts are done (enough is closed then), and the publishes' context,
// which ends 60 s after the load: publishes and clicks started during the
// load retry until acknowledged or until then.
func (r *run) windows(ctx context.Context) (load context.Context, stopLoad context.CancelFunc,
	pub context.Context, stopPub context.CancelFunc, enough chan struct{}) {
	load, stopLoad = context.WithCancel(ctx)
	pub, stopPub = context.WithCancel(ctx)
	enough = make(chan struct{})
	go func() {
		t := time.NewTimer(r.o.Duration)
		defer t.Stop()
		select {
		case <-t.C:
		case <-load.Done():
			return
		}
		select {
		case <-enough:
			stopLoad()
		case <-load.Done():
		}
	}()
	go func() {
		<-load.Done()
		select {
		case <-time.After(60 * time.Second):
			stopPub()
		case <-pub.Done():
		}
	}()
	return load, stopLoad, pub, stopPub, enough
}

// load sends questions and answers at fixed rates for the duration while
// the killer kills and restarts the server; then it stops killing and waits
// for every publish and click in flight to be acknowledged.
func (r *run) load(ctx context.Context, rep *Report) error {
	loadCtx, stopLoad, pubCtx, stopPub, enough := r.windows(ctx)
	defer stopLoad()
	defer stopPub()

	var fatal error
	var fatalOnce sync.Once
	fail := func(err error) {
		fatalOnce.Do(func() { fatal = err; stopLoad(); stopPub() })
	}

	var pubs sync.WaitGroup
	sem := make(chan struct{}, 512)
	spawn := func(f func()) bool {
		select {
		case sem <- struct{}{}:
		case <-loadCtx.Done():
			return false
		}
		pubs.Add(1)
		go func() {
			defer func() { <-sem; pubs.Done() }()
			f()
		}()
		return true
	}

	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); r.killer(loadCtx, rep, enough, fail) }()
	go func() {
		defer loops.Done()
		r.every(loadCtx, r.o.Rate, func() { r.askOne(pubCtx, spawn) })
	}()
	go func() {
		defer loops.Done()
		r.every(loadCtx, r.o.Rate*0.8, func() { r.answerOne(pubCtx, spawn) })
	}()
	loops.Wait()
	r.logf("load over after %d kills: waiting for publishes and clicks in flight", rep.Kills)
	pubs.Wait()
	if fatal != nil {
		return fatal
	}
	if pubCtx.Err() != nil && ctx.Err() == nil {
		return errors.New("torture: publishes or clicks were still not acknowledged 60s after the load ended")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.tally(rep)
	return nil
}

// tally counts what the load sent and what was acknowledged.
func (r *run) tally(rep *Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sent := 0
	for _, q := range r.questions {
		if q.sent {
			sent++
		}
		if q.acked {
			rep.Asked++
		}
	}
	for _, a := range r.attempts {
		if a.sent {
			rep.AnswersSent++
		}
		if c := a.click; c != nil && a.sent {
			rep.Clicks++
			if c.requests > 1 {
				rep.ClicksRetried++
			}
			if c.cut {
				rep.ClicksCut++
			}
		}
		if !a.acked {
			continue
		}
		rep.AnswersAcked++
		if a.click != nil {
			rep.ClicksAcked++
		}
		// kills is odd while what was killed is down: an answer sent then
		// was acknowledged once it was back, however soon that came
		// before its restart was declared ready.
		if a.ackInc > a.startInc || a.startInc%2 == 1 {
			rep.AckedAcrossKills++
		}
	}
	r.logf("asked %d (%d acked); answers %d (%d acked, %d across kills), of which clicks %d (%d acked, %d retried, %d cut by a kill)",
		sent, rep.Asked, rep.AnswersSent, rep.AnswersAcked, rep.AckedAcrossKills, rep.Clicks, rep.ClicksAcked, rep.ClicksRetried, rep.ClicksCut)
}

// every calls f at a fixed rate until ctx ends.
func (r *run) every(ctx context.Context, perSecond float64, f func()) {
	if perSecond <= 0 {
		return
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// killer SIGKILLs the server (a replica) every KillEvery (±20%) and
// restarts it; every other kill, the first included, is aimed at a click
// in flight (the others take a NATS node with the replica, in the
// cluster). It closes enough once the server has restarted MinKills
// times.
func (r *run) killer(ctx context.Context, rep *Report, enough chan<- struct{}, fail func(error)) {
	if r.o.MinKills <= 0 {
		close(enough)
	}
	for {
		wait := time.Duration(float64(r.o.KillEvery) * (0.8 + 0.4*rand.Float64()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		target, aimed := -1, false
		if rep.Kills%2 == 0 {
			target, aimed = r.aims.aim(ctx, r.live)
		}
		if err := r.killOnce(ctx, rep, target, aimed); err != nil {
			fail(err)
			return
		}
		if rep.Kills == r.o.MinKills {
			close(enough)
		}
	}
}

// publish retries f with the same message id until JetStream acknowledges
// it or ctx ends: the client reconnects by itself (to the same address,
// or to another node of the cluster).
func publish(ctx context.Context, f func(context.Context) error) error {
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := f(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Pace retries while the server is down.
		if pause(ctx, 100*time.Millisecond) != nil {
			return ctx.Err()
		}
	}
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
