package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// asIdentity is who the run reads the API as: the operator it answers as.
const asIdentity = "cli:torture"

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
			req := bridge.ListRequest{As: asIdentity, Tenant: tenant, State: state, Limit: 200, After: after}
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

// settle waits, with the server no longer killed, until the outbox is
// empty, every acknowledged question is stored and every short question
// has timed out or been settled.
func (r *run) settle(ctx context.Context, rep *Report) error {
	bound := r.o.ShortMax + 90*time.Second
	if r.slack != nil {
		// An event the killed replica held comes back to the Slack
		// adapter only after its consumer's ack wait.
		bound += bridge.EventConsumer(bridge.PlatformSlack).AckWait
	}
	sctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	r.logf("settling: waiting for outbox backlog 0 and every short question to end")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	why := "not checked yet"
	for {
		done, reason, err := r.settled(sctx)
		if err == nil && done {
			r.logf("settled")
			return nil
		}
		if err != nil {
			reason = err.Error()
		}
		why = reason
		select {
		case <-sctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// Not an error of the run: the checks will name what is stuck.
			rep.violate("the service did not settle within %v after the load: %s", bound, why)
			return nil
		case <-tick.C:
		}
	}
}

func (r *run) settled(ctx context.Context) (bool, string, error) {
	st, err := r.stats(ctx)
	if err != nil {
		return false, "", err
	}
	if st.OutboxBacklog > 0 {
		return false, fmt.Sprintf("outbox backlog %d", st.OutboxBacklog), nil
	}
	all, err := r.list(ctx, "all")
	if err != nil {
		return false, "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	missing, waiting := 0, 0
	for _, q := range r.questions {
		if !q.acked {
			continue
		}
		v, ok := all[q.key()]
		switch {
		case !ok:
			missing++
		case q.short && v.State == bridge.StatePending:
			waiting++
		}
	}
	if missing > 0 || waiting > 0 {
		return false, fmt.Sprintf("%d acknowledged questions not stored, %d short questions still pending", missing, waiting), nil
	}
	// A message handed to a server that was then killed comes back only
	// after its ack wait: wait for every durable consumer to drain.
	for _, name := range bridge.StreamNames() {
		s, err := r.js.Stream(ctx, name)
		if err != nil {
			return false, "", fmt.Errorf("stream %s: %w", name, err)
		}
		for c := range s.ListConsumers(ctx).Info() {
			if c.Config.Durable == "" || c.Name == r.eventsConsumer() {
				continue // the run's own reads the events only at the check
			}
			if c.NumAckPending > 0 || c.NumPending > 0 {
				return false, fmt.Sprintf("consumer %s on %s: %d unacknowledged, %d not yet delivered", c.Name, name, c.NumAckPending, c.NumPending), nil
			}
		}
	}
	return true, "", nil
}

// streamMsg is one message read back from a stream.
type streamMsg struct {
	seq uint64
	ev  bridge.Event
	res bridge.Resume
}

// readStream reads every message of a stream up to its last sequence with
// an ordered consumer, keeping those of this run's tenants.
func (r *run) readStream(ctx context.Context, stream string, each func(seq uint64, data []byte) error) error {
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
func (r *run) readAll(ctx context.Context, stream string, cons jetstream.Consumer, last func(*jetstream.MsgMetadata) bool, each func(seq uint64, data []byte) error) error {
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
			if err := each(meta.Sequence.Stream, msg.Data()); err != nil {
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

// check reads everything back and checks the invariants.
func (r *run) check(ctx context.Context, rep *Report) error {
	r.logf("reading back streams and the API")
	st, err := r.stats(ctx)
	if err != nil {
		return fmt.Errorf("torture: stats: %w", err)
	}
	rep.OutboxBacklog = st.OutboxBacklog
	if st.OutboxBacklog != 0 {
		rep.violate("outbox backlog is %d at the end: rows stuck unsent", st.OutboxBacklog)
	}
	views, err := r.list(ctx, "all")
	if err != nil {
		return fmt.Errorf("torture: list: %w", err)
	}
	rep.Stored = len(views)
	var cards map[string]int
	if r.slack != nil {
		cards = r.slack.cards()
		for k, n := range cards {
			rep.Cards += n
			if _, ok := views[k]; !ok {
				rep.violate("%d cards posted for %s, which is not stored", n, k)
			}
		}
	}

	resumes := map[string][]streamMsg{}
	err = r.readStream(ctx, bridge.StreamResumes, func(seq uint64, data []byte) error {
		var res bridge.Resume
		if err := json.Unmarshal(data, &res); err != nil {
			rep.violate("resume seq %d is not JSON: %v", seq, err)
			return nil
		}
		k := keyOf(res.Tenant, res.JobID, res.QuestionID, res.TaskVersion)
		resumes[k] = append(resumes[k], streamMsg{seq: seq, res: res})
		rep.Resumes++
		return nil
	})
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	events := map[string][]streamMsg{}
	byAttempt := map[string][]streamMsg{}
	err = r.readEvents(ctx, func(seq uint64, data []byte) error {
		var ev bridge.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			rep.violate("event seq %d is not JSON: %v", seq, err)
			return nil
		}
		m := streamMsg{seq: seq, ev: ev}
		if ev.Nudge != nil {
			// A ladder round of a job: it fired the steps of the questions
			// its nudge gives a step, each counted under that question.
			for _, nq := range ev.Nudge.Questions {
				if nq.Step == "" {
					continue
				}
				one := ev
				one.QuestionID, one.TaskVersion, one.Step = nq.QuestionID, nq.TaskVersion, nq.Step
				k := keyOf(ev.Tenant, ev.JobID, nq.QuestionID, nq.TaskVersion)
				events[k] = append(events[k], streamMsg{seq: seq, ev: one})
			}
			return nil
		}
		k := keyOf(ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion)
		events[k] = append(events[k], m)
		switch ev.Type {
		case bridge.EventAnswered, bridge.EventDeclined, bridge.EventRefused:
			if ev.AttemptID != "" {
				byAttempt[ev.AttemptID] = append(byAttempt[ev.AttemptID], m)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	known := map[string]*question{}
	for _, q := range r.questions {
		known[q.key()] = q
	}
	for k := range views {
		if known[k] == nil {
			rep.violate("question %s is stored but this run never asked it", k)
		}
	}
	for k, rs := range resumes {
		if known[k] == nil {
			rep.violate("resume for %s, which this run never asked: %s", k, seqs(rs, resDesc))
		}
	}

	var sample []string
	for _, q := range r.questions {
		k := q.key()
		v, stored := views[k]
		evs, rs := events[k], resumes[k]
		if !stored {
			if q.acked {
				rep.Lost++
				rep.violate("question %s: its publish was acknowledged but the service does not know it", k)
			}
			if len(rs) > 0 {
				rep.violate("question %s: not stored, yet resumed: %s", k, seqs(rs, resDesc))
			}
			continue
		}
		switch v.State {
		case bridge.StateAnswered:
			rep.Answered++
		case bridge.StateDeclined:
			rep.Declined++
		case bridge.StateTimedOut:
			rep.TimedOut++
		case bridge.StateFailed:
			rep.Failed++
		case bridge.StatePending:
			rep.Pending++
		}
		var asked, terminal []streamMsg
		steps := map[string][]streamMsg{}
		stepIDs := map[string]int{}
		for _, m := range evs {
			switch {
			case m.ev.Type == bridge.EventAsked:
				asked = append(asked, m)
			case m.ev.Type == bridge.EventReminded || m.ev.Type == bridge.EventEscalated:
				steps[m.ev.Step] = append(steps[m.ev.Step], m)
				stepIDs[m.ev.EventID]++
				rep.LadderSteps++
			case isTerminal(&m.ev):
				terminal = append(terminal, m)
			}
		}
		if len(asked) != 1 {
			rep.violate("question %s: %d asked events (%s)", k, len(asked), seqs(asked, evDesc))
		}
		if r.slack != nil {
			switch n := cards[k]; {
			case n == 0:
				rep.NoCard++
			case n > 1:
				rep.CardDuplicates += n - 1
				rep.violate("question %s: its card was posted %d times", k, n)
			}
		}
		if len(rs) > 1 {
			rep.Duplicates += len(rs) - 1
			rep.violate("question %s (%s): resumed %d times: %s; events: %s", k, v.State, len(rs), seqs(rs, resDesc), seqs(evs, evDesc))
		}
		if v.State == bridge.StatePending {
			if len(terminal) > 0 || len(rs) > 0 {
				rep.violate("question %s is pending, yet ended on the streams: %s; resumes: %s", k, seqs(terminal, evDesc), seqs(rs, resDesc))
			}
			if q.short {
				rep.violate("question %s is still pending %v after its %v deadline", k, time.Since(v.Deadline).Round(time.Second), q.timeout)
			}
		} else {
			if len(terminal) != 1 {
				rep.violate("question %s (%s): %d terminal events: %s", k, v.State, len(terminal), seqs(evs, evDesc))
			}
			if len(rs) == 0 {
				rep.Lost++
				rep.violate("question %s ended %s but no resume reached the stream; events: %s", k, v.State, seqs(evs, evDesc))
			}
			for _, m := range rs {
				if m.res.Outcome != outcomeOf(v.State) {
					rep.violate("question %s ended %s but resumed %s (seq %d)", k, v.State, m.res.Outcome, m.seq)
				}
			}
			if len(sample) < 300 || v.State == bridge.StateTimedOut && len(sample) < 600 {
				sample = append(sample, k)
			}
		}
		for id, n := range stepIDs {
			if n > 1 {
				rep.violate("question %s: ladder event %s published %d times", k, id, n)
			}
		}
		for step, ms := range steps {
			if len(ms) > 1 {
				rep.violate("question %s: ladder step %s fired %d times: %s", k, step, len(ms), seqs(ms, evDesc))
			}
		}
		if !q.ladder && len(steps) > 0 {
			rep.violate("question %s has its ladder off, yet: %s", k, seqs(evs, evDesc))
		}
		timedOut := v.State == bridge.StateTimedOut || (v.State == bridge.StateFailed && q.fail && len(terminal) == 1 && terminal[0].ev.Type == bridge.EventTimedOut)
		if q.ladder && timedOut {
			for _, step := range []string{bridge.TargetAnswerers, bridge.TargetOwner, bridge.TargetAdmins} {
				if len(steps[step]) == 0 {
					rep.violate("question %s timed out without its %s step: %s", k, step, seqs(evs, evDesc))
				}
			}
		}
	}

	for _, a := range r.attempts {
		if !a.sent {
			continue
		}
		k := a.q.key()
		ds := byAttempt[a.id]
		if len(ds) > 1 {
			rep.violate("attempt %s on %s decided %d times: %s", a.id, k, len(ds), seqs(ds, evDesc))
		}
		if len(ds) == 0 {
			if a.acked {
				rep.Lost++
				rep.violate("attempt %s on %s was acknowledged but never decided (no answered, declined or refused event); question events: %s",
					a.id, k, seqs(events[k], evDesc))
			}
			continue
		}
		if !a.acked {
			continue // decided although its acknowledgement never reached us
		}
		d := ds[0]
		v := views[k]
		switch d.ev.Type {
		case bridge.EventRefused:
			rep.Refused++
			rep.RefusedBy[d.ev.Reason]++
			switch {
			case d.ev.Reason == bridge.RefusedNotPending:
				if v.State == bridge.StatePending {
					rep.violate("attempt %s on %s refused as not pending, yet the question is pending", a.id, k)
				}
			case d.ev.Reason == bridge.RefusedInvalid && a.answer == "green":
			default:
				rep.violate("attempt %s (%s %q) on %s refused as %s: %s", a.id, a.action, a.answer, k, d.ev.Reason, d.ev.Text)
			}
		case bridge.EventAnswered, bridge.EventDeclined:
			rep.Settled++
			want := bridge.StateAnswered
			if a.action == bridge.ActionDecline {
				want = bridge.StateDeclined
			}
			if v.State != want || d.ev.Type != want {
				rep.violate("attempt %s (%s) on %s settled it as %s, but it ended %s", a.id, a.action, k, d.ev.Type, v.State)
			}
			if rs := resumes[k]; len(rs) != 1 || rs[0].res.By != asIdentity {
				rep.violate("attempt %s settled %s but its resumes are: %s", a.id, k, seqs(rs, resDesc))
			}
		}
	}

	// The audit trail, read through ask.v1.api.show, must agree: one
	// terminal transition, each ladder step once.
	for _, k := range sample {
		q := known[k]
		var reply bridge.ShowReply
		req := bridge.ShowRequest{As: asIdentity, Tenant: q.tenant, JobID: q.job, QuestionID: q.id, TaskVersion: 1}
		if err := r.request(ctx, bridge.APIShow, req, &reply); err != nil {
			return fmt.Errorf("torture: show %s: %w", k, err)
		}
		if reply.Error != "" || reply.Question == nil {
			rep.violate("show %s: %s", k, reply.Error)
			continue
		}
		if reply.Question.State != views[k].State {
			rep.violate("show %s says %s, list says %s", k, reply.Question.State, views[k].State)
		}
		ends := 0
		ladder := map[string]int{}
		for _, e := range reply.Audit {
			if e.From == bridge.StatePending && e.To != bridge.StatePending {
				ends++
			}
			if e.From == bridge.StatePending && e.To == bridge.StatePending {
				if step, _, ok := strings.Cut(e.Reason, ":"); ok {
					ladder[step]++
				}
			}
		}
		if ends != 1 {
			rep.violate("show %s: the audit trail has %d terminal transitions: %+v", k, ends, reply.Audit)
		}
		for step, n := range ladder {
			if n > 1 {
				rep.violate("show %s: the audit trail records %q %d times", k, step, n)
			}
		}
	}
	return nil
}
