package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// questionStore is what asking needs: record questions, read the one a
// duplicate names, and fail those nobody can be shown.
type questionStore interface {
	AskMany(ctx context.Context, nqs []record.NewQuestion) ([]*record.AskResult, error)
	Find(ctx context.Context, k record.Key) (*record.Record, error)
	Messages(ctx context.Context, question int64) ([]bridge.MessageRef, error)
	JobThreads(ctx context.Context, tenant, job string) ([]bridge.MessageRef, error)
	Settle(ctx context.Context, st record.Settlement) error
	ProposalOf(ctx context.Context, question int64) (*record.Proposal, error)
}

// subjectKey reads tenant and job from "<prefix>.<tenant>.<job>".
func subjectKey(subject, prefix string) (tenant, job string, ok bool) {
	rest, found := strings.CutPrefix(subject, prefix+".")
	if !found {
		return "", "", false
	}
	tenant, job, found = strings.Cut(rest, ".")
	if !found || strings.Contains(job, ".") || !bridge.ValidToken(tenant) || !bridge.ValidToken(job) {
		return "", "", false
	}
	return tenant, job, true
}

// subjectTokens splits prefix.<tenant>.<job> into its two last tokens,
// whatever they hold, as long as they make a literal subject one can
// publish a reply to.
func subjectTokens(subject, prefix string) (tenant, job string, ok bool) {
	rest, found := strings.CutPrefix(subject, prefix+".")
	if !found {
		return "", "", false
	}
	tenant, job, found = strings.Cut(rest, ".")
	if !found || tenant == "" || job == "" || strings.Contains(job, ".") || strings.ContainsAny(rest, "*> \t\r\n") {
		return "", "", false
	}
	return tenant, job, true
}

// askedItem is a question of a batch, read from its message.
type askedItem struct {
	msg         jetstream.Msg
	tenant, job string
	q           *bridge.Question
}

// askQuestions records a batch of new questions before anything shows
// them, in one transaction, or sends each malformed one's agent an invalid
// outcome saying why it was refused.
func (r *Runtime) askQuestions(ctx context.Context, msgs []jetstream.Msg) error {
	// The asked event's asked_at and deadline are then the ones every
	// later event and show give.
	now := r.stamp()
	var items []askedItem
	for _, msg := range msgs {
		it, err := r.readQuestion(ctx, msg)
		if err != nil {
			return err
		}
		if it == nil {
			continue
		}
		if why := r.checkIntake(it.q, now); why != nil {
			if err := r.refuseQuestion(ctx, msg, it.tenant, it.job, it.q, why); err != nil {
				return err
			}
			continue
		}
		items = append(items, *it)
	}
	if len(items) == 0 {
		return nil
	}
	nqs, err := r.newQuestions(ctx, items, now)
	if err != nil {
		return err
	}
	results, err := r.asking.AskMany(ctx, nqs)
	if err != nil {
		return err
	}
	r.wakeRelay()
	r.wakeLadder()
	for _, res := range results {
		if res.Status == record.Asked && res.Record != nil {
			r.recorded.Put(res.Record.Key.String(), res.Record.ID)
		}
	}
	for i, res := range results {
		if err := r.asked(ctx, items[i], res, now); err != nil {
			return err
		}
	}
	return nil
}

// threadsWithin bounds the read of a job's threads for its asked event.
const threadsWithin = 2 * time.Second

// askReaders bounds the questions of a batch whose records (the asked
// event's threads of the job, an approval's proposal) are read at once:
// on a cluster each read is two round trips to a stream's replicas.
const askReaders = 64

// newQuestions is newQuestion of each item, read side by side: each reads
// the record (a job's threads), and a batch of a hundred questions, as
// one gathered while NATS elected a leader, would otherwise take as many
// round trips one after the other before any of its cards is shown.
func (r *Runtime) newQuestions(ctx context.Context, items []askedItem, now time.Time) ([]record.NewQuestion, error) {
	nqs := make([]record.NewQuestion, len(items))
	errs := make([]error, len(items))
	sem := make(chan struct{}, askReaders)
	var wg sync.WaitGroup
	for i := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			nqs[i], errs[i] = r.newQuestion(ctx, items[i].q, now)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return nqs, nil
}

// readQuestion reads a question from its message; nil when it was refused
// back to its agent or dropped.
func (r *Runtime) readQuestion(ctx context.Context, msg jetstream.Msg) (*askedItem, error) {
	tenant, job, ok := subjectKey(msg.Subject(), bridge.PrefixQuestion)
	if !ok {
		if t, j, ok := subjectTokens(msg.Subject(), bridge.PrefixQuestion); ok {
			// A subject NATS takes but askbridge does not (a job id too
			// long, or not ASCII): refused back to the agent, who waits
			// on the matching resume subject.
			why := bridge.CheckToken("tenant", t)
			if why == nil {
				why = bridge.CheckToken("job_id", j)
			}
			q, _ := bridge.DecodeQuestion(msg.Data())
			return nil, r.refuseQuestion(ctx, msg, t, j, q, why)
		}
		r.log.Warn("question on a subject without a valid tenant and job; dropped", "subject", msg.Subject())
		return nil, nil
	}
	q, err := bridge.DecodeQuestion(msg.Data())
	if err == nil && (q.Tenant != tenant || q.JobID != job) {
		err = fmt.Errorf("tenant and job_id: %s/%s do not match the subject's %s/%s", q.Tenant, q.JobID, tenant, job)
	}
	if err != nil {
		return nil, r.refuseQuestion(ctx, msg, tenant, job, q, err)
	}
	return &askedItem{msg: msg, tenant: tenant, job: job, q: q}, nil
}

// asked follows up one question of a recorded batch: a stale one is
// refused, and one no platform can show fails at once.
func (r *Runtime) asked(ctx context.Context, it askedItem, res *record.AskResult, now time.Time) error {
	switch res.Status {
	case record.Duplicate:
		// Asked before; but a crash may have come between recording it
		// and failing it for want of a platform to show it. Judged on
		// the stored question of that very version: the first publish
		// is the question.
		rec, err := r.asking.Find(ctx, record.Key{Tenant: it.q.Tenant, JobID: it.q.JobID, QuestionID: it.q.QuestionID, TaskVersion: it.q.TaskVersion})
		switch {
		case errors.Is(err, record.ErrNotFound):
		case err != nil:
			return err
		case rec.TaskVersion == it.q.TaskVersion && rec.State == bridge.StatePending:
			q := decodeBody(rec)
			if failure := r.undeliverable(q); failure != nil {
				return r.failQuestion(ctx, rec, failure, r.routedPlatform(q), now)
			}
		}
		return nil
	case record.Stale:
		return r.refuseQuestion(ctx, it.msg, it.tenant, it.job, it.q,
			fmt.Errorf("task_version: %d is older than the job's current version %d", it.q.TaskVersion, res.JobVersion))
	case record.Refused:
		return r.refuseQuestion(ctx, it.msg, it.tenant, it.job, it.q, errors.New(res.Problem))
	}
	r.metrics.asked.Inc()
	r.log.Info("question asked", "tenant", it.q.Tenant, "job", it.q.JobID, "question", it.q.QuestionID,
		"version", it.q.TaskVersion, "timeout", it.q.TimeoutDuration())
	if failure := r.undeliverable(it.q); failure != nil {
		return r.failQuestion(ctx, res.Record, failure, r.routedPlatform(it.q), now)
	}
	return nil
}

// newQuestion is what the store records for q: the question, its ladder
// and timeout, and the asked event.
func (r *Runtime) newQuestion(ctx context.Context, q *bridge.Question, now time.Time) (record.NewQuestion, error) {
	timeout := q.TimeoutDuration()
	body, err := json.Marshal(q)
	if err != nil {
		return record.NewQuestion{}, fmt.Errorf("encode question: %w", err)
	}
	kind := q.Kind
	if kind == "" {
		kind = bridge.KindQuestion
	}
	nq := record.NewQuestion{
		Key:      record.Key{Tenant: q.Tenant, JobID: q.JobID, QuestionID: q.QuestionID, TaskVersion: q.TaskVersion},
		Kind:     kind,
		Body:     body,
		AskedAt:  now,
		Deadline: now.Add(timeout),
		Proposal: newProposal(q),
	}
	if expiresFirst(q, nq.Deadline) {
		// A proposal that expires first ends its question then: the
		// ladder climbs within the time it has.
		nq.Deadline = q.Proposal.ExpiresAt.UTC().Truncate(time.Millisecond)
		timeout = nq.Deadline.Sub(now)
	}
	for i, step := range q.Ladder() {
		nq.Steps = append(nq.Steps, record.Step{Index: i, Target: step.To, Due: now.Add(time.Duration(float64(timeout) * step.At))})
	}
	nq.Steps = append(nq.Steps, record.Step{Index: len(nq.Steps), Target: record.StepTimeout, Due: now.Add(timeout)})
	rec := &record.Record{Key: nq.Key, Kind: kind, Body: body, State: bridge.StatePending, AskedAt: now, Deadline: nq.Deadline}
	nq.Outbox = []record.Message{eventMsg(r.askedEvent(ctx, rec, q, now))}
	nq.Supersede = func(old *record.Record) []record.Message {
		refs, _ := r.asking.Messages(ctx, old.ID)
		return endedMessages(old, bridge.StateSuperseded, "", bridge.SupersededText(q.TaskVersion), refs, now)
	}
	return nq, nil
}

// askedEvent announces that q, recorded as rec, waits: for a new question,
// and for one asked again on an adapter's new consumer (reask).
func (r *Runtime) askedEvent(ctx context.Context, rec *record.Record, q *bridge.Question, at time.Time) bridge.Event {
	ev := eventOf(rec, q, bridge.EventAsked, at)
	ev.State = bridge.StatePending
	if q.Restricted() {
		// Its content goes to the people it names in a DM, once per person
		// (docs/contract.md "Who may do what"): the channel's card shows
		// only that it waits.
		ev.Targets = r.people.reach(q.WaitsFor())
		ev.Persons = r.people.persons(slices.Concat(ev.Targets, q.Answerers, []string{q.Owner}))
	}
	if q.IsApproval() {
		// Asked again (rec recorded), its proposal may have approvals.
		var p *record.Proposal
		if rec.ID != 0 {
			p, _ = r.asking.ProposalOf(ctx, rec.ID)
		}
		ev.Proposal = r.proposalStatus(q, p)
	}
	// A hint, not a rule: an adapter that lacks it looks for the thread.
	// So it is not waited for long: a question should not wait for a
	// cluster that is electing a leader.
	tctx, cancel := context.WithTimeout(ctx, threadsWithin)
	threads, err := r.asking.JobThreads(tctx, q.Tenant, q.JobID)
	cancel()
	if err == nil {
		ev.Threads = threads
	} else {
		r.log.Warn("the job's threads could not be read for its asked event", "tenant", q.Tenant, "job", q.JobID, "err", err)
	}
	return ev
}

// refuseQuestion publishes the invalid outcome straight to the agent: no
// state changed, and the message id (from the stored question's place in
// its stream) makes a redelivered question refuse once.
func (r *Runtime) refuseQuestion(ctx context.Context, msg jetstream.Msg, tenant, job string, q *bridge.Question, why error) error {
	r.metrics.invalid.Inc()
	res := bridge.Resume{Tenant: tenant, JobID: job, Outcome: bridge.OutcomeInvalid, Text: bridge.InvalidText(why), At: r.stamp()}
	if q != nil {
		res.QuestionID, res.TaskVersion = q.QuestionID, q.TaskVersion
	} else {
		// Refused before it was read (too large to decode): its ids, when
		// the body holds them, still name the question to the agent, which
		// waits for this question's outcome, not any refusal of its job.
		res.QuestionID, res.TaskVersion = questionIDs(msg.Data())
	}
	id := "invalid-" + msg.Subject()
	if meta, err := msg.Metadata(); err == nil {
		// The stored message's sequence and time: a stream made anew
		// numbers its messages from 1 again, and a refusal named by the
		// sequence alone would be dropped as a duplicate of an earlier one.
		id = fmt.Sprintf("invalid-%s-%d-%d", bridge.StreamQuestions, meta.Sequence.Stream, meta.Timestamp.UnixNano())
	}
	r.log.Info("question refused", "tenant", tenant, "job", job, "question", res.QuestionID, "reason", why.Error())
	return bridge.Publish(ctx, r.js, bridge.ResumeSubject(tenant, job), id, res)
}

// questionIDs reads only question_id and task_version from a question
// body that was refused unread; zero values when it has none.
func questionIDs(data []byte) (string, int64) {
	var ids struct {
		QuestionID  string `json:"question_id"`
		TaskVersion int64  `json:"task_version"`
	}
	// A wrong type in one field leaves the other read.
	_ = json.Unmarshal(data, &ids)
	return ids.QuestionID, ids.TaskVersion
}

// undeliverable says why no connector can show q: it names chat platforms
// in its route, and none of them is switched on with a channel. A question
// with no route waits in the console and the CLI.
func (r *Runtime) undeliverable(q *bridge.Question) *bridge.Failure {
	if len(r.expectedPlatforms(q)) > 0 {
		return nil
	}
	var missing, wanted []string
	for _, p := range r.o.Platforms {
		if named, _ := p.RoutedBy(q); !named {
			continue
		}
		wanted = append(wanted, p.Connector)
		if p.On {
			// Switched on but given no channel: the question lacks an
			// input, rather than askbridge a connector.
			missing = append(missing, p.MissingChannel)
		}
	}
	switch {
	case len(wanted) == 0:
		return nil
	case len(missing) > 0:
		return &bridge.Failure{
			Code:               bridge.CodeInputMissing,
			Dependency:         "chat",
			Operation:          "post_question",
			Retryable:          false,
			RequiredCapability: "a channel to post the question in",
			SafeFallback:       "answer in the askbridge console or with the askbridge CLI",
			OperatorMessage:    "The question names no channel to post it in: set " + strings.Join(missing, " or ") + ".",
		}
	}
	return &bridge.Failure{
		Code:               bridge.CodeCapabilityUnavailable,
		Dependency:         "chat",
		Operation:          "post_question",
		Retryable:          false,
		RequiredCapability: "a configured chat connector",
		SafeFallback:       "answer in the askbridge console or with the askbridge CLI",
		OperatorMessage:    "The question routes to " + strings.Join(wanted, " and ") + ", which is not configured on this askbridge.",
	}
}

// routedPlatform is the platform q's route names first, for the via of a
// failure the runtime reports itself (the contract gives delivery_failed a
// via).
func (r *Runtime) routedPlatform(q *bridge.Question) string {
	for _, p := range r.o.Platforms {
		if named, _ := p.RoutedBy(q); named {
			return p.Name
		}
	}
	return ""
}

// expectedPlatforms are the switched-on platforms that will try to show q:
// its route gives them a channel, or they have a default one.
func (r *Runtime) expectedPlatforms(q *bridge.Question) []string {
	var out []string
	for _, p := range r.o.Platforms {
		if _, channel := p.RoutedBy(q); p.On && (channel != "" || p.DefaultChannel != "") {
			out = append(out, p.Name)
		}
	}
	return out
}

// failQuestion ends a pending question as failed with a typed failure;
// via is the platform that reported it ("" when no connector could try).
func (r *Runtime) failQuestion(ctx context.Context, rec *record.Record, f *bridge.Failure, via string, now time.Time) error {
	text := "The question could not be shown to anyone: " + f.OperatorMessage
	ev := eventFor(rec, bridge.EventDeliveryFailed, now)
	ev.Failure = f
	ev.Via = via
	ev.Text = text
	ev.State = bridge.StateFailed
	res := resumeFor(rec, bridge.OutcomeFailed, text, now)
	res.Code = f.Code
	res.Failure = f
	err := r.asking.Settle(ctx, record.Settlement{
		Question: rec.ID, State: bridge.StateFailed, Text: text, Reason: f.Code, At: now,
		Outbox: []record.Message{eventMsg(ev), resumeMsg(res)},
	})
	if err == record.ErrNotPending {
		return nil
	}
	if err != nil {
		return err
	}
	r.metrics.settled.WithLabelValues(bridge.StateFailed).Inc()
	r.wakeRelay()
	return nil
}
