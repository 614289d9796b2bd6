package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The events stream keeps an event until every consumer with interest in
// it has acknowledged it, and drops one published while none exists
// (bridge/streams.go). So the runtime keeps the chat adapters' consumers
// (bridge.Platform.Consumer) itself: it makes those of the platforms switched on
// before its relay publishes anything, looks for them as it looks for its
// own, and when one is new (made now, or made again by its adapter since
// the runtime last saw it) it asks that platform's pending questions again,
// since the consumer missed their asked events. See docs/design.md.

// eventConsumerStore is what keeping the adapters' consumers needs: which
// consumer the pending questions were last asked on, and a way to ask
// them again.
type eventConsumerStore interface {
	Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error)
	Meta(ctx context.Context, key string) (string, error)
	SetMeta(ctx context.Context, key, value string) error
	Reask(ctx context.Context, platforms []string, askedBy time.Time, cur record.ReaskCursor, limit int,
		build func(r *record.Record, shownOn []string) (record.Message, bool, error)) (record.ReaskCursor, int, bool, error)
}

// reaskPage is how many pending questions one transaction of a re-ask reads.
const reaskPage = 500

// newConsumer is an adapter's consumer that missed events: created is the
// consumer's creation time, which the store keeps once its platform's
// pending questions were asked again; seen is the runtime's time once the
// consumer existed: a question recorded later was announced to it.
type newConsumer struct {
	platform bridge.Platform
	created  string
	seen     time.Time
}

// consumerKey is where the store keeps the creation time of the consumer
// on which a platform's pending questions were last asked.
func consumerKey(durable string) string { return "events-consumer." + durable }

// ensureEventConsumers makes the consumers of the platforms switched on
// where they are missing, and returns those that missed events: made now,
// or made (by anyone) since the pending questions were last asked on them.
// A consumer the store knows nothing of and that existed already (made by
// a runtime that did not keep this record) is taken as it is.
func (r *Runtime) ensureEventConsumers(ctx context.Context) ([]newConsumer, error) {
	var out []newConsumer
	for _, p := range r.o.Platforms {
		if !p.On || p.Consumer.Durable == "" {
			continue
		}
		durable := p.Consumer.Durable
		made := false
		c, err := r.js.Consumer(ctx, bridge.StreamEvents, durable)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			c, err = r.js.CreateOrUpdateConsumer(ctx, bridge.StreamEvents, p.Consumer)
			made = err == nil
		}
		var info *jetstream.ConsumerInfo
		if err == nil {
			// Read anew: the reply to a create can name another time.
			info, err = c.Info(ctx)
		}
		if err != nil {
			return out, fmt.Errorf("runtime: consumer %s on %s: %w", durable, bridge.StreamEvents, err)
		}
		created := strconv.FormatInt(info.Created.UnixNano(), 10)
		last, err := r.adapters.Meta(ctx, consumerKey(durable))
		if err != nil {
			return out, err
		}
		switch {
		case last == created:
			continue
		case last == "" && !made:
			if err := r.adapters.SetMeta(ctx, consumerKey(durable), created); err != nil {
				return out, err
			}
			continue
		}
		out = append(out, newConsumer{platform: p, created: created, seen: r.stamp()})
	}
	return out, nil
}

// reaskAll asks the pending questions the new consumers' platforms show
// nowhere again, once each (every adapter reads every event), and then
// notes the consumers as caught up. A failure leaves them noted as new:
// the next look asks again (an adapter shows a question once).
func (r *Runtime) reaskAll(ctx context.Context, fresh []newConsumer) {
	if len(fresh) == 0 {
		return
	}
	var platforms []bridge.Platform
	var names []string
	askedBy := fresh[0].seen
	for _, c := range fresh {
		platforms = append(platforms, c.platform)
		names = append(names, c.platform.Name)
		if c.seen.After(askedBy) {
			askedBy = c.seen
		}
	}
	n, err := r.reask(ctx, platforms, askedBy)
	for _, c := range fresh {
		if err != nil {
			break
		}
		err = r.adapters.SetMeta(ctx, consumerKey(c.platform.Consumer.Durable), c.created)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("runtime: could not ask the pending questions again on the adapters' new consumers; trying again shortly", "platforms", names, "err", err)
		}
		return
	}
	what := "runtime: the " + strings.Join(names, " and ") + " adapter's consumer on " + bridge.StreamEvents + " is new and missed the events before it"
	if len(names) > 1 {
		what = "runtime: the " + strings.Join(names, " and ") + " adapters' consumers on " + bridge.StreamEvents + " are new and missed the events before them"
	}
	if n == 0 {
		r.log.Info(what+"; no pending question to ask again", "platforms", names)
		return
	}
	r.log.Warn(what+"; asked the pending questions they show nowhere again", "platforms", names, "questions", n)
}

// reask publishes, through the outbox, the asked event of every pending
// question recorded by askedBy that one of platforms is to show and has no
// message of. Each goes out as a new outbox row, so under a new
// Nats-Msg-Id: JetStream would drop the first one's id again within its
// duplicate window.
func (r *Runtime) reask(ctx context.Context, platforms []bridge.Platform, askedBy time.Time) (int, error) {
	now := r.stamp()
	names := make([]string, len(platforms))
	for i, p := range platforms {
		names[i] = p.Name
	}
	build := func(rec *record.Record, shownOn []string) (record.Message, bool, error) {
		q := decodeBody(rec)
		for _, p := range r.expectedPlatforms(q) {
			if !slices.Contains(names, p) || slices.Contains(shownOn, p) {
				continue
			}
			ev := r.askedEvent(ctx, rec, q, now)
			if len(shownOn) > 0 {
				// The adapters that show it already read that here, and
				// post nothing (docs/contract.md "Streams").
				refs, err := r.adapters.Messages(ctx, rec.ID)
				if err != nil {
					return record.Message{}, false, err
				}
				ev.Messages = refs
			}
			return eventMsg(ev), true, nil
		}
		return record.Message{}, false, nil
	}
	total := 0
	var cur record.ReaskCursor
	for {
		next, n, done, err := r.adapters.Reask(ctx, names, askedBy, cur, reaskPage, build)
		if err != nil {
			return total, err
		}
		total += n
		if n > 0 {
			r.wakeRelay()
		}
		if done {
			return total, nil
		}
		cur = next
	}
}
