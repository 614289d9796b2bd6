package jsstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// GateJob reads a job for the gate, which does it for every request: the
// job's document and its pending questions' index keys
// (qs.<tenant>.pending.<job>.*) in one multi read, then those questions'
// documents in another, in the order they were asked. No consumer is
// made, and the cost does not grow with other jobs' questions. On a
// bucket with replicas the reading is fenced (fence.go): one that a
// replica behind its leader answered is taken again.
func (s *Store) GateJob(ctx context.Context, tenant, job string) (record.GateJob, error) {
	f, err := s.readFence(ctx)
	if err != nil {
		return record.GateJob{}, fmt.Errorf("jsstore: gate read of %s/%s: %w", tenant, job, err)
	}
	out, err := fenced(ctx, fenceWait, func() (record.GateJob, error) { return s.gateJob(ctx, tenant, job, f) })
	if err != nil {
		return out, fmt.Errorf("jsstore: gate read of %s/%s: %w", tenant, job, err)
	}
	return out, nil
}

// gateJob is one reading of GateJob, fresh as of f.
func (s *Store) gateJob(ctx context.Context, tenant, job string, f fence) (record.GateJob, error) {
	var out record.GateJob
	jd, ok, ids, err := s.gateRead(ctx, tenant, job, f)
	if err != nil || !ok {
		return out, err
	}
	out.Known, out.Version = true, jd.TaskVersion
	if len(ids) == 0 {
		return out, nil
	}
	docs, err := s.gateDocs(ctx, ids, f)
	if err != nil {
		return out, err
	}
	for _, d := range docs {
		// The index and the documents change in one batch, but are read
		// one after the other: a document says how it stands now.
		if d != nil && d.Record.State == bridge.StatePending {
			out.Pending = append(out.Pending, record.GatePending{QuestionID: d.Record.QuestionID, Body: d.Record.Body})
		}
	}
	return out, nil
}

// gateRead reads a job's document and the ids of its pending questions,
// in id order. A job with more pending questions than one multi read
// answers has its index read by a watch, or on a fenced reading from the
// leader.
func (s *Store) gateRead(ctx context.Context, tenant, job string, f fence) (jobDoc, bool, []int64, error) {
	var jd jobDoc
	jobKey, filter := keyJob(tenant, job), stateFilter(tenant, bridge.StatePending, job)
	got := map[string]entry{}
	upTo, err := s.multiLastUpTo(ctx, []string{jobKey, filter}, got)
	switch {
	case err != nil && f == 0:
		// Too many pending (the server answers 413), or an answer cut
		// short.
		return s.gateReadByWatch(ctx, tenant, job, filter)
	case err != nil:
		return s.gateReadFromLeader(ctx, jobKey, filter)
	case f > 0 && len(got) == 0:
		// Nothing found says nothing of how far the replica that
		// answered had come: the leader says whether the job exists.
		if _, _, ok, err := s.leaderGet(ctx, jobKey); err != nil || ok {
			return jd, false, nil, cmp.Or(err, errBehind)
		}
		return jd, false, nil, nil
	}
	if err := f.check(upTo); err != nil {
		return jd, false, nil, err
	}
	e, ok := got[jobKey]
	if !ok {
		return jd, false, nil, nil
	}
	if err := json.Unmarshal(e.Value, &jd); err != nil {
		return jd, false, nil, fmt.Errorf("jsstore: decode %s: %w", jobKey, err)
	}
	prefix := filter[:len(filter)-1]
	var ids []int64
	for key := range got {
		if tok, ok := strings.CutPrefix(key, prefix); ok {
			q, err := strconv.ParseInt(tok, 10, 64)
			if err != nil {
				return jd, false, nil, fmt.Errorf("jsstore: malformed state key %s", key)
			}
			ids = append(ids, q)
		}
	}
	slices.Sort(ids)
	return jd, true, ids, nil
}

// gateReadByWatch reads the job and its pending index key by key.
func (s *Store) gateReadByWatch(ctx context.Context, tenant, job, filter string) (jobDoc, bool, []int64, error) {
	jd, _, ok, err := s.getJob(ctx, tenant, job)
	if err != nil || !ok {
		return jd, false, nil, err
	}
	keys, err := s.states(ctx, filter)
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	return jd, true, ids, err
}

// gateReadFromLeader reads the job and its pending index from the
// stream's leader, a key a request: what a fenced reading falls back to
// when one multi read cannot answer.
func (s *Store) gateReadFromLeader(ctx context.Context, jobKey, filter string) (jobDoc, bool, []int64, error) {
	var jd jobDoc
	data, _, ok, err := s.leaderGet(ctx, jobKey)
	if err != nil || !ok {
		return jd, false, nil, err
	}
	if err := json.Unmarshal(data, &jd); err != nil {
		return jd, false, nil, fmt.Errorf("jsstore: decode %s: %w", jobKey, err)
	}
	keys, err := s.leaderKeys(ctx, filter)
	if err != nil {
		return jd, false, nil, err
	}
	prefix := filter[:len(filter)-1]
	ids := make([]int64, 0, len(keys))
	for _, key := range keys {
		q, err := strconv.ParseInt(strings.TrimPrefix(key, prefix), 10, 64)
		if err != nil {
			return jd, false, nil, fmt.Errorf("jsstore: malformed state key %s", key)
		}
		ids = append(ids, q)
	}
	slices.Sort(ids)
	return jd, true, ids, nil
}

// gateDocs reads the documents of ids as getDocs does, fresh as of f: a
// multi read that a replica behind the fence answered is errBehind, and
// documents a multi read did not answer are read from the leader.
func (s *Store) gateDocs(ctx context.Context, ids []int64, f fence) ([]*questionDoc, error) {
	if f == 0 {
		docs, _, err := s.getDocs(ctx, ids)
		return docs, err
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = keyQuestion(id)
	}
	got := map[string]entry{}
	for chunk := range slices.Chunk(keys, maxMulti) {
		upTo, err := s.multiLastUpTo(ctx, chunk, got)
		switch {
		case err != nil && !errors.Is(err, errCutShort):
			return nil, err
		case upTo > 0:
			if err := f.check(upTo); err != nil {
				return nil, err
			}
		}
		// What the multi read left out (cut short, or nothing found,
		// which says nothing of how far its replica had come) is read
		// from the leader.
		if err := getRest(ctx, chunk, got, s.leaderGet); err != nil {
			return nil, err
		}
	}
	docs := make([]*questionDoc, len(ids))
	for i, k := range keys {
		if e, ok := got[k]; ok {
			d, err := decodeQuestion(e)
			if err != nil {
				return nil, err
			}
			docs[i] = d
		}
	}
	return docs, nil
}

// GateCommit writes a batch of the gate's decisions: executes in order,
// each seeing those before, and every log entry, as one atomic batch. The
// log entries are blind puts of new keys; only a proposal an execute takes
// is a compare-and-set, and a lost one (another replica took or changed
// it) decides the batch's executes again on the proposals as they now
// stand. A batch of more keys than one atomic batch takes is written in
// several, each all or nothing; when a later one fails, the earlier ones
// stay written and the error is the whole batch's.
func (s *Store) GateCommit(ctx context.Context, batch []record.GateWrite) error {
	for lo := 0; lo < len(batch); {
		hi := gateGroupEnd(batch, lo)
		group := batch[lo:hi]
		if err := retry(ctx, "write gate decisions", func() error { return s.gateGroup(ctx, group) }); err != nil {
			return fmt.Errorf("jsstore: write %d gate decisions: %w", len(batch), err)
		}
		lo = hi
	}
	return nil
}

// gateGroupEnd is where the group of writes starting at lo ends: as many
// as fit one atomic batch (a key per log entry, and one per proposal an
// execute may take).
func gateGroupEnd(batch []record.GateWrite, lo int) int {
	keys, props := 0, map[string]bool{}
	for i := lo; i < len(batch); i++ {
		n := 1
		if e := batch[i].Execute; e != nil && !props[e.Tenant+"\x00"+e.ProposalID] {
			n = 2
		}
		if keys+n > maxBatch && i > lo {
			return i
		}
		keys += n
		if e := batch[i].Execute; e != nil {
			props[e.Tenant+"\x00"+e.ProposalID] = true
		}
	}
	return len(batch)
}

// takenProposal is a proposal the executes of a group read, as they left it.
type takenProposal struct {
	p     *record.Proposal
	rev   uint64
	taken bool
}

// gateGroup decides the executes of group on the proposals as they stand
// and writes the group in one atomic batch.
func (s *Store) gateGroup(ctx context.Context, group []record.GateWrite) error {
	props := map[string]*takenProposal{}
	entries := make([]record.LogEntry, 0, len(group))
	var order []string
	for _, w := range group {
		if w.Execute == nil {
			entries = append(entries, w.Log)
			continue
		}
		e := w.Execute
		key := keyProposal(e.Tenant, e.ProposalID)
		tp, ok := props[key]
		if !ok {
			var p record.Proposal
			rev, found, err := s.getJSON(ctx, key, &p)
			if err != nil {
				return err
			}
			tp = &takenProposal{rev: rev}
			if found {
				tp.p = &p
			}
			props[key], order = tp, append(order, key)
		}
		var seen *record.Proposal
		if tp.p != nil {
			cp := *tp.p
			seen = &cp
		}
		take, entry := e.Decide(seen)
		if take {
			if err := record.Takeable(tp.p); err != nil {
				return fmt.Errorf("execute proposal %s/%s: %w", e.Tenant, e.ProposalID, err)
			}
			tp.p.State, tp.p.ExecutedAt, tp.taken = bridge.ProposalExecuted, msTime(e.At), true
			seen.State, seen.ExecutedAt = tp.p.State, tp.p.ExecutedAt
		}
		entries = append(entries, entry)
	}
	t := &txn{}
	for _, key := range order {
		if tp := props[key]; tp.taken {
			if err := t.putJSON(key, tp.rev, tp.p); err != nil {
				return err
			}
		}
	}
	if err := t.appendLog(entries); err != nil {
		return err
	}
	return s.commit(ctx, t)
}

// FindProposal reads a proposal by its tenant and id; record.ErrNotFound
// when the tenant has none of that id.
func (s *Store) FindProposal(ctx context.Context, tenant, id string) (*record.Proposal, error) {
	var p record.Proposal
	_, ok, err := s.getJSON(ctx, keyProposal(tenant, id), &p)
	if err != nil {
		return nil, fmt.Errorf("jsstore: proposal %s/%s: %w", tenant, id, err)
	}
	if !ok {
		return nil, record.ErrNotFound
	}
	return &p, nil
}

// SeedProposal writes a proposal as given, for p.Question, whose document
// then names it (when there is one): for tests that need a proposal in a
// given state. The runtime records proposals with their approvals (AskMany).
func (s *Store) SeedProposal(ctx context.Context, p record.Proposal) error {
	if len(p.Arguments) == 0 {
		p.Arguments = []byte("{}")
	}
	err := retry(ctx, "seed proposal "+p.ID, func() error {
		_, rev, _, err := s.get(ctx, keyProposal(p.Tenant, p.ID))
		if err != nil {
			return err
		}
		t := &txn{}
		if err := t.putJSON(keyProposal(p.Tenant, p.ID), rev, p); err != nil {
			return err
		}
		d, qrev, ok, err := s.getQuestion(ctx, p.Question)
		if err != nil {
			return err
		}
		if ok {
			d.Proposal = p.ID
			if err := t.putJSON(keyQuestion(p.Question), qrev, d); err != nil {
				return err
			}
		}
		return s.commit(ctx, t)
	})
	if err != nil {
		return fmt.Errorf("jsstore: seed proposal %s/%s: %w", p.Tenant, p.ID, err)
	}
	return nil
}
