package jsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
	"unique"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// A replica keeps its view of the state index qs.> (stateView): every
// question's state, counted by state for CountByState and each /metrics
// scrape, and what the clarification measures read of it, for a stats
// request and each scrape (clarify.go). With a hundred thousand questions
// a read of the index takes seconds, a read of their documents longer; the
// view is a map. A question's index key is written when it enters a state,
// and rewritten when what the measures read of it changes, and deleted
// when it leaves the state, in the batch that moves it (putQuestion), so
// each later write is one question in, changed or out. Of the watch's
// initial values, the last write of each key, only those that are not
// deletes count.

// stateFacts is the value of a question's state index key: what the
// clarification measures read of the question. A key written before the
// index held them is empty; its question's facts are read from its
// document once (learnFacts).
type stateFacts struct {
	QuestionID   string `json:"q"`
	Agent        string `json:"a,omitempty"`
	MissingField string `json:"f,omitempty"`
	// AskedAt and SettledAt are Unix milliseconds; SettledAt 0 is unsettled.
	AskedAt   int64 `json:"at"`
	SettledAt int64 `json:"st,omitempty"`
	// TimedOut: it ended on its timeout (timed_out, or failed with
	// on_timeout: fail).
	TimedOut bool `json:"to,omitempty"`
}

// question is f as ClarifyQuestions returns it, of the question whose
// state index key names tenant, job and state.
func (f stateFacts) question(tenant, job, state string) record.ClarifyQuestion {
	q := record.ClarifyQuestion{Tenant: tenant, JobID: job, QuestionID: f.QuestionID, Agent: f.Agent, MissingField: f.MissingField,
		State: state, TimedOut: f.TimedOut, AskedAt: time.UnixMilli(f.AskedAt).UTC()}
	if f.SettledAt != 0 {
		q.SettledAt = time.UnixMilli(f.SettledAt).UTC()
	}
	return q
}

// held is a question's state index key as the view holds it.
type held struct {
	tenant, job, state string
	// known is false while the question's facts are not read: its key
	// was empty.
	known bool
}

// stateView is a replica's view of the state index.
type stateView struct {
	keyView
	keys   map[int64]held
	counts map[string]int64
	// facts holds the facts of the questions whose keys held them, or
	// whose documents were read (learnFacts).
	facts record.ClarifyIndex
	// unknown counts the questions held without their facts.
	unknown int
}

// init makes sv a view of the state index; warn reports a malformed key.
func (sv *stateView) init(warn func(string, ...any)) {
	sv.filter, sv.mark, sv.what = stateIndexPrefix+">", keyStateMark, "the state index"
	sv.reset = func() {
		sv.keys, sv.counts = map[int64]held{}, map[string]int64{}
		sv.facts, sv.unknown = record.ClarifyIndex{}, 0
	}
	sv.apply = func(e jetstream.KeyValueEntry, initial bool) {
		parts := strings.Split(e.Key(), ".")
		q, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if len(parts) != 5 || err != nil {
			warn("jsstore: a malformed state key is ignored", "key", e.Key())
			return
		}
		state := intern(dec(parts[2]))
		switch {
		case e.Operation() == jetstream.KeyValuePut:
			sv.put(q, held{tenant: intern(dec(parts[1])), job: dec(parts[3]), state: state}, e.Value())
		case !initial:
			if old, ok := sv.keys[q]; ok && old.state == state {
				sv.remove(q, old)
			}
		}
	}
}

// put holds question q in the state of its key h, with the facts of value.
func (sv *stateView) put(q int64, h held, value []byte) {
	if old, ok := sv.keys[q]; ok {
		sv.remove(q, old)
	}
	var f stateFacts
	if h.known = len(value) > 0 && json.Unmarshal(value, &f) == nil; h.known {
		sv.facts.Put(q, f.question(h.tenant, h.job, h.state))
	} else {
		sv.unknown++
	}
	sv.keys[q] = h
	sv.count(h.state, 1)
}

// remove lets go of question q, held as h.
func (sv *stateView) remove(q int64, h held) {
	delete(sv.keys, q)
	if h.known {
		sv.facts.Remove(q)
	} else {
		sv.unknown--
	}
	sv.count(h.state, -1)
}

// learn gives the view the facts of question document d, unless it holds
// them or no longer holds the question. A document read after its index
// key is at least as new: the two are written in one batch.
func (sv *stateView) learn(d *questionDoc) {
	q := d.Record.ID
	h, ok := sv.keys[q]
	if !ok || h.known {
		return
	}
	sv.facts.Put(q, factsOf(d).question(h.tenant, h.job, h.state))
	h.known = true
	sv.keys[q] = h
	sv.unknown--
}

// unknownIDs lists the questions held without their facts.
func (sv *stateView) unknownIDs() []int64 {
	if sv.unknown == 0 {
		return nil
	}
	var out []int64
	for q, h := range sv.keys {
		if !h.known {
			out = append(out, q)
		}
	}
	return out
}

func (sv *stateView) count(state string, n int64) {
	if sv.counts[state] += n; sv.counts[state] <= 0 {
		delete(sv.counts, state)
	}
}

// intern is the one copy of s the process keeps: the views name a few
// tenants, states and codes many times over.
func intern(s string) string { return unique.Make(s).Value() }

// factsOf is what the clarification measures read of question document
// d, the value of its state index key.
func factsOf(d *questionDoc) stateFacts {
	r := &d.Record
	var body struct {
		Agent        string `json:"agent"`
		MissingField string `json:"missing_field"`
	}
	_ = json.Unmarshal(r.Body, &body) // a body without them measures as ""
	f := stateFacts{QuestionID: r.QuestionID, Agent: body.Agent, MissingField: body.MissingField,
		AskedAt: r.AskedAt.UnixMilli(), TimedOut: r.State == bridge.StateTimedOut}
	if !r.SettledAt.IsZero() {
		f.SettledAt = r.SettledAt.UnixMilli()
	}
	for _, a := range d.Audit {
		if a.From == bridge.StatePending && a.To == r.State && a.Reason == timedOutReason {
			f.TimedOut = true
		}
	}
	return f
}

// CountByState counts questions by state, from the replica's view brought
// up to date first.
func (s *Store) CountByState(ctx context.Context) (map[string]int64, error) {
	var out map[string]int64
	if err := s.read(ctx, &s.index.keyView, func() { out = maps.Clone(s.index.counts) }); err != nil {
		return nil, fmt.Errorf("jsstore: count: %w", err)
	}
	return out, nil
}
