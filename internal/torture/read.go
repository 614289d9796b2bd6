package torture

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

func (r *run) tenants() []string {
	return []string{"tt" + r.runID + "a", "tt" + r.runID + "b"}
}

func (r *run) request(ctx context.Context, subject string, req, reply any) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return bridge.Request(rctx, r.nc, subject, req, reply)
}

// list reads every question of this run in one state ("all" for every state).
func (r *run) list(ctx context.Context, state string) (map[string]bridge.QuestionView, error) {
	out := map[string]bridge.QuestionView{}
	for _, tenant := range r.tenants() {
		after := ""
		for page := 0; ; page++ {
			if page > 10000 {
				return nil, errors.New("list: too many pages")
			}
			var reply bridge.ListReply
			req := bridge.ListRequest{As: cliIdentity, Tenant: tenant, State: state, Limit: 200, After: after}
			if err := r.request(ctx, bridge.APIList, req, &reply); err != nil {
				return nil, err
			}
			if reply.Error != "" {
				return nil, fmt.Errorf("list: %s", reply.Error)
			}
			for _, v := range reply.Questions {
				out[fmt.Sprintf("%s/%s/%s@%d", v.Tenant, v.JobID, v.QuestionID, v.TaskVersion)] = v
			}
			if reply.Next == "" {
				break
			}
			after = reply.Next
		}
	}
	return out, nil
}

// stats reads the service's counts. It may take a while on a replicated
// record (it counts every question): it is given 30 s, and a slow answer
// is logged.
func (r *run) stats(ctx context.Context) (*bridge.StatsReply, error) {
	var reply bridge.StatsReply
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := bridge.Request(rctx, r.nc, bridge.APIStats, struct{}{}, &reply); err != nil {
		return nil, fmt.Errorf("%s after %v: %w", bridge.APIStats, time.Since(start).Round(time.Millisecond), err)
	}
	if took := time.Since(start); took > 2*time.Second {
		r.logf("%s took %v", bridge.APIStats, took.Round(time.Millisecond))
	}
	if reply.Error != "" {
		return nil, errors.New(reply.Error)
	}
	return &reply, nil
}

// streamMsg is one message read back from a stream.
type streamMsg struct {
	seq uint64
	at  time.Time // when the stream stored it
	ev  bridge.Event
	res bridge.Resume
}

// readStream reads every message of a stream up to its last sequence with
// an ordered consumer, keeping those of this run's tenants.
func (r *run) readStream(ctx context.Context, stream string, each func(m *jetstream.MsgMetadata, data []byte) error) error {
	s, err := r.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	return r.readAll(ctx, stream, cons, func(m *jetstream.MsgMetadata) bool { return m.Sequence.Stream >= last }, each)
}

// readAll reads cons until last says a message was the last, keeping
// those of this run's tenants.
func (r *run) readAll(ctx context.Context, stream string, cons jetstream.Consumer, last func(*jetstream.MsgMetadata) bool, each func(m *jetstream.MsgMetadata, data []byte) error) error {
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	defer it.Stop()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stop := context.AfterFunc(rctx, it.Stop)
	defer stop()
	tenants := r.tenants()
	for {
		msg, err := it.Next()
		if err != nil {
			return fmt.Errorf("stream %s: read: %w", stream, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		parts := strings.Split(msg.Subject(), ".")
		if len(parts) == 5 && slices.Contains(tenants, parts[3]) {
			if err := each(meta, msg.Data()); err != nil {
				return err
			}
		}
		if last(meta) {
			return nil
		}
	}
}

func isTerminal(ev *bridge.Event) bool {
	switch ev.Type {
	case bridge.EventAnswered, bridge.EventDeclined, bridge.EventTimedOut, bridge.EventCancelled, bridge.EventSuperseded:
		return true
	case bridge.EventDeliveryFailed:
		return ev.State == bridge.StateFailed
	}
	return false
}

// outcomeOf is the resume outcome a final state must have.
func outcomeOf(state string) string {
	switch state {
	case bridge.StateAnswered:
		return bridge.OutcomeAnswered
	case bridge.StateDeclined:
		return bridge.OutcomeDeclined
	case bridge.StateTimedOut:
		return bridge.OutcomeTimedOut
	case bridge.StateFailed:
		return bridge.OutcomeFailed
	case bridge.StateCancelled, bridge.StateSuperseded:
		return bridge.OutcomeCanceled
	}
	return ""
}

func keyOf(tenant, job, q string, v int64) string {
	return fmt.Sprintf("%s/%s/%s@%d", tenant, job, q, v)
}

func seqs(ms []streamMsg, what func(streamMsg) string) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "seq %d %s", m.seq, what(m))
	}
	return b.String()
}

func evDesc(m streamMsg) string {
	s := m.ev.Type
	if m.ev.Step != "" {
		s += " " + m.ev.Step
	}
	if m.ev.AttemptID != "" {
		s += " attempt " + m.ev.AttemptID
	}
	if m.ev.Reason != "" {
		s += " (" + m.ev.Reason + ")"
	}
	return s + " id " + m.ev.EventID
}

func resDesc(m streamMsg) string {
	s := m.res.Outcome
	if m.res.By != "" {
		s += " by " + m.res.By
	}
	return s
}
