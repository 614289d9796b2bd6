package jsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/bridge"
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

// indexed is one question as the view holds it.
type indexed struct {
	tenant, job, state string
	facts              stateFacts
	// known is false while the facts are not read: the key was empty.
	known bool
}

// stateView is a replica's view of the state index.
type stateView struct {
	keyView
	questions map[int64]indexed
	// jobs lists each job's questions.
	jobs   map[jobRef][]int64
	counts map[string]int64
	// unknown counts the questions held without their facts.
	unknown int
	// words holds one copy of each tenant, state, agent and field seen.
	words map[string]string
}

// init makes sv a view of the state index; warn reports a malformed key.
func (sv *stateView) init(warn func(string, ...any)) {
	sv.filter, sv.mark, sv.what = stateIndexPrefix+">", keyStateMark, "the state index"
	sv.reset = func() {
		sv.questions, sv.jobs, sv.counts, sv.words = map[int64]indexed{}, map[jobRef][]int64{}, map[string]int64{}, map[string]string{}
		sv.unknown = 0
	}
	sv.apply = func(e jetstream.KeyValueEntry, initial bool) {
		parts := strings.Split(e.Key(), ".")
		q, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if len(parts) != 5 || err != nil {
			warn("jsstore: a malformed state key is ignored", "key", e.Key())
			return
		}
		state := sv.word(dec(parts[2]))
		switch {
		case e.Operation() == jetstream.KeyValuePut:
			sv.put(q, indexed{tenant: sv.word(dec(parts[1])), job: dec(parts[3]), state: state}, e.Value())
		case !initial:
			if old, ok := sv.questions[q]; ok && old.state == state {
				sv.remove(q, old)
			}
		}
	}
}

// put holds question q in the state of its key, with the facts of value.
func (sv *stateView) put(q int64, in indexed, value []byte) {
	if len(value) > 0 && json.Unmarshal(value, &in.facts) == nil {
		in.known = true
		in.facts.Agent, in.facts.MissingField = sv.word(in.facts.Agent), sv.word(in.facts.MissingField)
	}
	if old, ok := sv.questions[q]; ok {
		sv.remove(q, old)
	}
	sv.questions[q] = in
	if !in.known {
		sv.unknown++
	}
	j := jobRef{in.tenant, in.job}
	sv.jobs[j] = append(sv.jobs[j], q)
	sv.count(in.state, 1)
}

// remove lets go of question q, held as in.
func (sv *stateView) remove(q int64, in indexed) {
	delete(sv.questions, q)
	if !in.known {
		sv.unknown--
	}
	j := jobRef{in.tenant, in.job}
	if ids := slices.DeleteFunc(sv.jobs[j], func(id int64) bool { return id == q }); len(ids) > 0 {
		sv.jobs[j] = ids
	} else {
		delete(sv.jobs, j)
	}
	sv.count(in.state, -1)
}

func (sv *stateView) count(state string, n int64) {
	if sv.counts[state] += n; sv.counts[state] <= 0 {
		delete(sv.counts, state)
	}
}

// word is the view's copy of s.
func (sv *stateView) word(s string) string {
	if w, ok := sv.words[s]; ok {
		return w
	}
	sv.words[s] = s
	return s
}

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
