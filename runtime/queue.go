package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// queueStore is what the queue and the ladder's rounds read and write
// (docs/design.md, "The queue and nudges").
type queueStore interface {
	JobQueue(ctx context.Context, tenant, job string) ([]record.Queued, error)
	FireRound(ctx context.Context, steps []record.RoundStep, at time.Time, msgs []record.Message) error
	JobSteps(ctx context.Context, tenant, job, target string, before time.Time) ([]record.DueStep, error)
}

// roundWindow is how far ahead a round takes along the same step of the
// job's other questions: questions asked minutes apart are reminded in one
// round, not one after the other (docs/contract.md "The queue and nudges").
const roundWindow = 10 * time.Minute

// queued is a pending question of a job's queue, read.
type queued struct {
	record.Queued
	q *bridge.Question
}

// jobQueue is a job's pending questions in queue order: by priority, then
// age, then the order they were recorded in.
func (r *Runtime) jobQueue(ctx context.Context, tenant, job string) ([]queued, error) {
	recs, err := r.queue.JobQueue(ctx, tenant, job)
	if err != nil {
		return nil, err
	}
	out := make([]queued, len(recs))
	for i := range recs {
		out[i] = queued{Queued: recs[i], q: decodeBody(&recs[i].Record)}
	}
	slices.SortStableFunc(out, func(a, b queued) int {
		return cmp.Or(
			cmp.Compare(bridge.PriorityRank(a.q.Priority), bridge.PriorityRank(b.q.Priority)),
			a.AskedAt.Compare(b.AskedAt),
			cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (it *queued) item() bridge.QueueItem {
	tools := it.q.BlockedTools
	if tools == nil {
		tools = []string{}
	}
	return bridge.QueueItem{
		QuestionID: it.QuestionID, TaskVersion: it.TaskVersion, Priority: it.q.PriorityOf(),
		Staleness: it.Staleness, AskedAt: it.AskedAt, Deadline: it.Deadline,
		BlockedTools: tools, Restricted: it.q.Restricted(),
	}
}

// roundKey groups the due steps that make one nudge: a job's steps of one
// kind (answerers, owner, admins) due at once.
type roundKey struct{ tenant, job, target string }

// round is the due steps of one job and step kind.
type round struct {
	roundKey
	steps []record.DueStep
}

// fireRound sends one job's round as one reminded or escalated event: its
// question is the top of the job's queue, its nudge all the job's pending
// questions with whom the round reminds of each. resurface says the job's
// thread may show the top question again in this pass. errRoundDropped
// when the record refused it whole (a step fired or ended meanwhile).
func (r *Runtime) fireRound(ctx context.Context, rd *round, now time.Time, resurface bool) error {
	queue, err := r.jobQueue(ctx, rd.tenant, rd.job)
	if err != nil {
		return err
	}
	typ, step := bridge.EventEscalated, rd.target
	if rd.target == bridge.TargetAnswerers || rd.target == record.StepSnooze {
		// A snooze's end is a reminder (docs/contract.md "Delegate and snooze").
		typ, step = bridge.EventReminded, bridge.TargetAnswerers
	}
	fired := map[int64]record.DueStep{}
	for _, d := range rd.steps {
		fired[d.Question] = d
	}
	if rd.target != record.StepSnooze {
		if err := r.takeAlong(ctx, rd, queue, fired, now); err != nil {
			return err
		}
	}
	nudge, steps, all, err := r.roundNudge(ctx, rd, queue, fired, typ, step, now)
	if err != nil {
		return err
	}
	if len(steps) == 0 {
		return nil // their questions ended meanwhile, taking their steps along
	}
	top := &queue[0]
	// A snooze's end reminds its snoozer alone; the thread is not nudged.
	nudge.Resurface = resurface && rd.target != record.StepSnooze && bridge.Urgent(top.q.Priority)
	refs, err := r.steps.Messages(ctx, top.ID)
	if err != nil {
		return err
	}
	ev := eventFor(&top.Record, typ, now)
	// One round per job, step kind and time: named by the first step it
	// fires, which fires once.
	first := steps[0].DueStep
	ev.EventID = fmt.Sprintf("%s.round.%d.%d", ev.EventID, first.Question, first.Index)
	if rd.target == record.StepSnooze {
		// A later snooze may take the same step number: its end is named too.
		ev.EventID += fmt.Sprintf(".%d", first.Due.UnixMilli())
	}
	ev.Question = top.q
	ev.State = bridge.StatePending
	ev.Step = step
	ev.Targets = all
	ev.Persons = r.people.persons(linked(all, queue))
	ev.Messages = refs
	ev.Nudge = nudge
	err = r.queue.FireRound(ctx, steps, now, []record.Message{eventMsg(ev)})
	if errors.Is(err, record.ErrStepGone) {
		return errRoundDropped
	}
	if err != nil {
		return err
	}
	if len(all) == 0 {
		r.log.Warn("ladder round has nobody to remind", "tenant", rd.tenant, "job", rd.job, "step", rd.target)
	}
	r.metrics.ladder.WithLabelValues(rd.target).Add(float64(len(steps)))
	r.wakeRelay()
	return nil
}

// roundNudge is a round's nudge (the job's questions in queue order, each
// fired one with whom it reminds), the steps it fires with their audit
// reasons, and everyone it reminds.
func (r *Runtime) roundNudge(ctx context.Context, rd *round, queue []queued, fired map[int64]record.DueStep, typ, step string, now time.Time) (*bridge.Nudge, []record.RoundStep, []string, error) {
	nudge := &bridge.Nudge{Questions: make([]bridge.NudgeQuestion, 0, len(queue))}
	var steps []record.RoundStep
	var all []string
	for i := range queue {
		it := &queue[i]
		nq := bridge.NudgeQuestion{QueueItem: it.item(), Question: it.q}
		if d, ok := fired[it.ID]; ok {
			if d.Target != record.StepSnooze {
				nq.Staleness++ // as the round leaves it; a snooze's end is no round
			}
			targets, err := r.stepTargets(ctx, &it.Record, it.q, d, now)
			if err != nil {
				return nil, nil, nil, err
			}
			nq.Step, nq.Targets = step, targets
			steps = append(steps, record.RoundStep{DueStep: d, Reason: fmt.Sprintf("%s %s: %v", typ, rd.target, nq.Targets)})
			for _, t := range nq.Targets {
				if !slices.Contains(all, t) {
					all = append(all, t)
				}
			}
		}
		nudge.Questions = append(nudge.Questions, nq)
	}
	return nudge, steps, all, nil
}

// takeAlong adds to a round the same step of the job's other questions
// when it falls due within roundWindow and the question has waited at
// least half the time to it: a question asked a moment ago is not
// reminded early.
func (r *Runtime) takeAlong(ctx context.Context, rd *round, queue []queued, fired map[int64]record.DueStep, now time.Time) error {
	soon, err := r.queue.JobSteps(ctx, rd.tenant, rd.job, rd.target, now.Add(roundWindow))
	if err != nil {
		return err
	}
	asked := make(map[int64]time.Time, len(queue))
	for i := range queue {
		asked[queue[i].ID] = queue[i].AskedAt
	}
	for _, d := range soon {
		at, ok := asked[d.Question]
		if _, done := fired[d.Question]; done || !ok {
			continue
		}
		if now.Sub(at)*2 >= d.Due.Sub(at) {
			fired[d.Question] = d
		}
	}
	return nil
}

// apiQueue answers ask.v1.api.queue: a job's pending questions in queue
// order, as the asking identity may see them (the view rules of list).
func (r *Runtime) apiQueue(ctx context.Context, data []byte) any {
	var req bridge.QueueRequest
	if problem := decodeRequest("queue", data, &req); problem != "" {
		return bridge.QueueReply{Error: problem}
	}
	if err := checkAs(req.As); err != nil {
		return bridge.QueueReply{Error: "as: " + err.Error()}
	}
	if err := bridge.CheckToken("job_id", req.JobID); err != nil {
		return bridge.QueueReply{Error: "queue: " + err.Error()}
	}
	if req.Tenant == "" {
		tenant, problem := r.tenantOfJob(ctx, req)
		if problem != "" {
			return bridge.QueueReply{Error: problem}
		}
		if tenant == "" {
			return bridge.QueueReply{Questions: []bridge.QueueItem{}}
		}
		req.Tenant = tenant
	}
	if err := bridge.CheckToken("tenant", req.Tenant); err != nil {
		return bridge.QueueReply{Error: "queue: " + err.Error()}
	}
	queue, err := r.jobQueue(ctx, req.Tenant, req.JobID)
	if err != nil {
		r.log.Error("api queue", "err", err)
		return bridge.QueueReply{Error: "queue: the store could not be read"}
	}
	reply := bridge.QueueReply{Tenant: req.Tenant, Questions: []bridge.QueueItem{}}
	for i := range queue {
		v, ok := r.view(ctx, &queue[i].Record, req.As, req.Roles)
		if !ok {
			continue
		}
		it := queue[i].item()
		if v.Hidden {
			it.Hidden, it.BlockedTools = true, []string{}
		} else {
			it.Text = queue[i].q.Question
		}
		reply.Questions = append(reply.Questions, it)
	}
	return reply
}

// tenantOfJob is the tenant of the job a queue request names without one:
// the one tenant in which the asker may know of a pending question of that
// job id; "" when there is none. Another tenant's job is not hinted at.
func (r *Runtime) tenantOfJob(ctx context.Context, req bridge.QueueRequest) (string, string) {
	recs, err := r.queries.List(ctx, record.ListFilter{JobID: req.JobID, State: bridge.StatePending, Limit: 200})
	if err != nil {
		r.log.Error("api queue", "err", err)
		return "", "queue: the store could not be read"
	}
	tenant := ""
	for i := range recs {
		if recs[i].Tenant == tenant {
			continue
		}
		if _, ok := r.view(ctx, &recs[i], req.As, req.Roles); !ok {
			continue
		}
		if tenant != "" {
			return "", fmt.Sprintf("Job %s is in more than one tenant you can see: name the tenant as <tenant>/%s.", req.JobID, req.JobID)
		}
		tenant = recs[i].Tenant
	}
	return tenant, ""
}

// linked are the identities whose persons a round's event names: its
// targets, and the answerers and owner of each of the job's questions.
func linked(targets []string, queue []queued) []string {
	ids := slices.Clone(targets)
	for i := range queue {
		ids = append(append(ids, queue[i].q.Answerers...), queue[i].q.Owner)
	}
	return ids
}
