package runtime

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/askbridge/askbridge/bridge"
)

// healEvery is how often the runtime looks for its consumers when no
// error made it look sooner, unless Options.HealEvery says otherwise.
const healEvery = 5 * time.Second

// wakeHeal makes heal look at once, after a consumer reported trouble.
func (r *Runtime) wakeHeal() {
	select {
	case r.healWake <- struct{}{}:
	default:
	}
}

// heal makes the runtime's streams and consumers again when they are gone
// (deleted, or a NATS server that restarted without its store) and
// consumes them anew: the runtime goes on without a restart. What the
// streams held and nobody had read yet is lost with them; the store's
// pending questions, ladders and unsent outcomes are not. It keeps the
// adapters' consumers on the events stream too (ensureEventConsumers).
func (r *Runtime) heal(ctx context.Context) {
	every := r.o.HealEvery
	if every <= 0 {
		every = healEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.healWake:
		}
		if r.nc.Status() != nats.CONNECTED {
			continue // the client reconnects by itself
		}
		if !r.healOwn(ctx) {
			continue
		}
		fresh, err := r.ensureEventConsumers(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Error("runtime: the adapters' consumers on "+bridge.StreamEvents+" could not be made again", "err", err)
		}
		r.reaskAll(ctx, fresh)
	}
}

// healOwn makes the runtime's streams and consumers again where they are
// gone; false when the streams could not be made.
func (r *Runtime) healOwn(ctx context.Context) bool {
	var gone []*consumption
	for _, c := range r.consuming {
		_, err := r.js.Consumer(ctx, c.stream, c.durable)
		switch {
		case bridge.Gone(err):
			gone = append(gone, c)
		case err == nil && !c.running():
			gone = append(gone, c)
		}
	}
	// The streams only the relay publishes to (events, resumes) too.
	if len(gone) == 0 && !bridge.Gone(bridge.CheckStreams(ctx, r.js)) {
		return true
	}
	if err := r.o.NATS.EnsureStreams(ctx); err != nil {
		if ctx.Err() == nil {
			r.log.Error("runtime: streams are gone and could not be made again", "err", err)
		}
		return false
	}
	for _, c := range gone {
		if err := r.restart(ctx, c); err != nil {
			if ctx.Err() == nil {
				r.log.Error("runtime: consumer "+c.durable+" on "+c.stream+" is gone and could not be made again", "err", err)
			}
			continue
		}
		r.log.Warn("runtime: consumer " + c.durable + " on " + c.stream + " was gone (deleted, or the NATS server lost its store); made it again")
	}
	return true
}
