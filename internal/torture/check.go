package torture

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
)

// readBack is everything the check reads back at the end, by question key
// unless said otherwise.
type readBack struct {
	views   map[string]bridge.QuestionView
	resumes map[string][]streamMsg
	events  map[string][]streamMsg
	// byAttempt is the decisions (answered, declined, refused) by attempt id.
	byAttempt map[string][]streamMsg
	// stored is when each attempt reached the answers stream, by attempt id.
	stored map[string]time.Time
	cards  map[string][]card
	// down is the windows when no service was ready.
	down []window
}

// check reads everything back and checks the invariants.
func (r *run) check(ctx context.Context, rep *Report) error {
	r.logf("reading back streams and the API")
	rb, err := r.readBack(ctx, rep)
	if err != nil {
		return fmt.Errorf("torture: %w", err)
	}
	rep.AllDown = len(rb.down)
	for _, w := range rb.down {
		rep.AllDownFor += w.to.Sub(w.from)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Violations = append(rep.Violations, r.problems...)
	known := map[string]*question{}
	for _, q := range r.questions {
		known[q.key()] = q
	}
	for k := range rb.views {
		if known[k] == nil {
			rep.violate("question %s is stored but this run never asked it", k)
		}
	}
	for k, rs := range rb.resumes {
		if known[k] == nil {
			rep.violate("resume for %s, which this run never asked: %s", k, seqs(rs, resDesc))
		}
	}
	for k, cs := range rb.cards {
		rep.Cards += len(cs)
		if _, ok := rb.views[k]; !ok {
			rep.violate("%d cards posted for %s, which is not stored", len(cs), k)
		}
	}

	var sample []string
	for _, q := range r.questions {
		if r.checkQuestion(rep, rb, q) && (len(sample) < 300 || rb.views[q.key()].State == bridge.StateTimedOut && len(sample) < 600) {
			sample = append(sample, q.key())
		}
	}
	r.checkCards(rep, rb)
	r.checkAnswers(rep, rb)
	r.checkOrder(rep, rb)
	r.measure(rep, rb)
	return r.checkAudit(ctx, rep, rb, known, sample)
}

// backlogGrace is how long the outbox may take to publish rows written
// after the run settled: the questions still waiting keep firing their
// reminders, each an outbox row relayed a moment later. A row stuck
// unsent stays past it.
const backlogGrace = 15 * time.Second

// grace is the run's backlogGrace.
func (r *run) grace() time.Duration { return cmp.Or(r.backlogGrace, backlogGrace) }

// stuckBacklog is the outbox's unsent rows once every row written lately
// had backlogGrace to be published: 0 as soon as a read finds none.
func (r *run) stuckBacklog(ctx context.Context) (int64, error) {
	deadline := time.Now().Add(r.grace())
	for {
		st, err := r.stats(ctx)
		if err != nil {
			return 0, err
		}
		if st.OutboxBacklog == 0 || !time.Now().Before(deadline) {
			return st.OutboxBacklog, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// readBack reads the service's counts and questions, the resumes and
// events streams, the answers stream's times and the fake Slack's cards.
func (r *run) readBack(ctx context.Context, rep *Report) (*readBack, error) {
	backlog, err := r.stuckBacklog(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	rep.OutboxBacklog = backlog
	if backlog != 0 {
		rep.violate("outbox backlog is %d at the end, %v after the run settled: rows stuck unsent", backlog, r.grace())
	}
	rb := &readBack{resumes: map[string][]streamMsg{}, events: map[string][]streamMsg{}, byAttempt: map[string][]streamMsg{},
		cards: r.slack.posted(), down: r.live.down()}
	if rb.views, err = r.list(ctx, "all"); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	rep.Stored = len(rb.views)
	err = r.readStream(ctx, bridge.StreamResumes, func(meta *jetstream.MsgMetadata, data []byte) error {
		seq := meta.Sequence.Stream
		var res bridge.Resume
		if err := json.Unmarshal(data, &res); err != nil {
			rep.violate("resume seq %d is not JSON: %v", seq, err)
			return nil
		}
		k := keyOf(res.Tenant, res.JobID, res.QuestionID, res.TaskVersion)
		rb.resumes[k] = append(rb.resumes[k], streamMsg{seq: seq, at: meta.Timestamp, res: res})
		rep.Resumes++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.readEvents(ctx, func(meta *jetstream.MsgMetadata, data []byte) error {
		rb.addEvent(rep, meta.Sequence.Stream, meta.Timestamp, data)
		return nil
	}); err != nil {
		return nil, err
	}
	if rb.stored, err = r.storedAt(ctx); err != nil {
		return nil, err
	}
	return rb, nil
}

// addEvent files one event under its question (a nudge under each
// question it gives a step) and, a decision, under its attempt.
func (rb *readBack) addEvent(rep *Report, seq uint64, at time.Time, data []byte) {
	var ev bridge.Event
	if err := json.Unmarshal(data, &ev); err != nil {
		rep.violate("event seq %d is not JSON: %v", seq, err)
		return
	}
	m := streamMsg{seq: seq, at: at, ev: ev}
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
			rb.events[k] = append(rb.events[k], streamMsg{seq: seq, at: at, ev: one})
		}
		return
	}
	k := keyOf(ev.Tenant, ev.JobID, ev.QuestionID, ev.TaskVersion)
	rb.events[k] = append(rb.events[k], m)
	switch ev.Type {
	case bridge.EventAnswered, bridge.EventDeclined, bridge.EventRefused:
		if ev.AttemptID != "" {
			rb.byAttempt[ev.AttemptID] = append(rb.byAttempt[ev.AttemptID], m)
		}
	}
}

// checkAudit reads the audit trail of a sample of ended questions through
// ask.v1.api.show, which must agree: one terminal transition, each ladder
// step once.
func (r *run) checkAudit(ctx context.Context, rep *Report, rb *readBack, known map[string]*question, sample []string) error {
	for _, k := range sample {
		q := known[k]
		var reply bridge.ShowReply
		req := bridge.ShowRequest{As: cliIdentity, Tenant: q.tenant, JobID: q.job, QuestionID: q.id, TaskVersion: 1}
		if err := r.request(ctx, bridge.APIShow, req, &reply); err != nil {
			return fmt.Errorf("torture: show %s: %w", k, err)
		}
		if reply.Error != "" || reply.Question == nil {
			rep.violate("show %s: %s", k, reply.Error)
			continue
		}
		if reply.Question.State != rb.views[k].State {
			rep.violate("show %s says %s, list says %s", k, reply.Question.State, rb.views[k].State)
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
