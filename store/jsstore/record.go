package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// ErrConflict is a compare-and-set that lost: a key a transaction read
// changed before it was written. The transaction is read and tried again.
var ErrConflict = errors.New("jsstore: the record changed meanwhile")

// maxBatch is the most keys one transaction writes: JetStream's default
// limit of an atomic batch is 1,000 messages, and two are kept for the
// views' marks (commit, markOf).
const maxBatch = 1000 - 2

// deletedFor is how long a delete marker stays before the key is gone
// altogether, so deleted keys do not pile up in the bucket's index.
const deletedFor = 10 * time.Minute

// entry is one key's last value and its revision.
type entry struct {
	Key   string
	Value []byte
	Rev   uint64
}

// get reads key's last value. A key never written, or deleted, has no
// value; rev is then what a transaction must expect to create it (0, or
// the delete marker's revision).
func (s *Store) get(ctx context.Context, key string) (value []byte, rev uint64, ok bool, err error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, subjectPrefix+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("jsstore: read %s: %w", key, err)
	}
	switch m.Header.Get(kvOperation) {
	case "DEL", "PURGE":
		return nil, m.Sequence, false, nil
	}
	return m.Data, m.Sequence, true, nil
}

// getJSON reads key into v; ok is false when the key holds nothing.
func (s *Store) getJSON(ctx context.Context, key string, v any) (rev uint64, ok bool, err error) {
	data, rev, ok, err := s.get(ctx, key)
	if err != nil || !ok {
		return rev, ok, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return 0, false, fmt.Errorf("jsstore: decode %s: %w", key, err)
	}
	return rev, true, nil
}

// listByWatch reads every key matching filter with a watch: an ordered
// consumer the stream's leader serves, which on a cluster is made and
// deleted through the meta leader. list takes it only for what one multi
// read cannot answer.
func (s *Store) listByWatch(ctx context.Context, filter string) ([]entry, error) {
	w, err := s.kv.WatchFiltered(ctx, []string{filter}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("jsstore: list %s: %w", filter, err)
	}
	defer func() { _ = w.Stop() }()
	var out []entry
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("jsstore: list %s: %w", filter, ctx.Err())
		case e, open := <-w.Updates():
			if !open {
				return nil, fmt.Errorf("jsstore: list %s: the watch ended early", filter)
			}
			if e == nil {
				return out, nil
			}
			out = append(out, entry{Key: e.Key(), Value: e.Value(), Rev: e.Revision()})
		}
	}
}

// kvOperation is the header JetStream's key-value API marks deletes with.
const kvOperation = "KV-Operation"

// write is one key a transaction writes.
type write struct {
	key   string
	value []byte
	// rev is the revision the key must still be at (get's rev), unless
	// blind is set.
	rev   uint64
	blind bool
	del   bool
	// ttl, when set, makes the key go on its own after it.
	ttl time.Duration
}

// txn gathers the writes of one transition. commit makes them all at once
// or none; each is a compare-and-set on its key unless written blind.
type txn struct {
	writes []write
	at     map[string]int
}

func (t *txn) add(w write) {
	if t.at == nil {
		t.at = map[string]int{}
	}
	if i, ok := t.at[w.key]; ok {
		// A batch may expect a key's revision only before its first write
		// to it: a second write of the same key replaces the first and
		// keeps its expectation.
		w.rev, w.blind = t.writes[i].rev, t.writes[i].blind
		t.writes[i] = w
		return
	}
	t.at[w.key] = len(t.writes)
	t.writes = append(t.writes, w)
}

// put writes value at key if key is still at rev (0 or a delete marker's
// revision: if it holds nothing).
func (t *txn) put(key string, rev uint64, value []byte) {
	t.add(write{key: key, rev: rev, value: value})
}

// putJSON is put of v as JSON.
func (t *txn) putJSON(key string, rev uint64, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("jsstore: encode %s: %w", key, err)
	}
	t.put(key, rev, data)
	return nil
}

// putBlind writes value at key whatever it holds: for keys no two
// transitions write, such as a new log entry's.
func (t *txn) putBlind(key string, value []byte, ttl time.Duration) {
	t.add(write{key: key, value: value, blind: true, ttl: ttl})
}

// del deletes key if it is still at rev.
func (t *txn) del(key string, rev uint64) {
	t.add(write{key: key, rev: rev, del: true, ttl: deletedFor})
}

// delBlind deletes key whatever it holds.
func (t *txn) delBlind(key string) {
	t.add(write{key: key, blind: true, del: true, ttl: deletedFor})
}

// empty reports whether the transaction writes nothing.
func (t *txn) empty() bool { return len(t.writes) == 0 }

// commit makes t's writes as one atomic batch. A lost compare-and-set is
// ErrConflict, and nothing of t is written. A batch that writes the state
// index or a gate refusal writes its mark last (markOf).
func (s *Store) commit(ctx context.Context, t *txn) error {
	switch n := len(t.writes); {
	case n == 0:
		return nil
	case n > maxBatch:
		return fmt.Errorf("jsstore: a transition of %d keys is more than the %d one atomic batch takes", n, maxBatch)
	}
	writes := t.writes
	var state, refusals bool
	for _, w := range t.writes {
		switch markOf(w.key) {
		case keyStateMark:
			state = true
		case keyRefusalMark:
			refusals = true
		}
	}
	if state {
		writes = append(slices.Clip(writes), write{key: keyStateMark, blind: true})
	}
	if refusals {
		writes = append(slices.Clip(writes), write{key: keyRefusalMark, blind: true})
	}
	batch := nuid.Next()
	for i, w := range writes {
		m := nats.NewMsg(subjectPrefix + w.key)
		m.Data = w.value
		if !w.blind {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(w.rev, 10))
		}
		if w.del {
			m.Data = nil
			m.Header.Set(kvOperation, "DEL")
		}
		if w.ttl > 0 {
			m.Header.Set(jetstream.MsgTTLHeader, w.ttl.String())
		}
		if len(writes) == 1 {
			_, err := s.js.PublishMsg(ctx, m)
			return commitError(err)
		}
		m.Header.Set("Nats-Batch-Id", batch)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(writes)-1 {
			if err := s.nc.PublishMsg(m); err != nil {
				return fmt.Errorf("jsstore: write %s: %w", w.key, err)
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		_, err := s.js.PublishMsg(ctx, m)
		return commitError(err)
	}
	return nil
}

// Error codes of a commit that lost, or that may be tried again at once.
const (
	codeWrongLastSequence         = 10071
	codeWrongLastSequenceConstant = 10164
	codeTooManyInflight           = 10210
	codeIncompleteBatch           = 10176
)

// commitError sorts a commit's error: lost races are ErrConflict.
func commitError(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case codeWrongLastSequence, codeWrongLastSequenceConstant, codeTooManyInflight, codeIncompleteBatch:
			return fmt.Errorf("%w (%s)", ErrConflict, apiErr.Description)
		}
	}
	return fmt.Errorf("jsstore: commit: %w", err)
}

// retry runs a transition until it commits without a conflict: each try
// reads the record afresh. Other errors end it.
func retry(ctx context.Context, what string, try func() error) error {
	backoff := time.Millisecond
	for attempt := 1; ; attempt++ {
		err := try()
		if !errors.Is(err, ErrConflict) {
			return err
		}
		if attempt == 200 {
			return fmt.Errorf("jsstore: %s: gave up after %d conflicting tries: %w", what, attempt, err)
		}
		d := backoff/2 + rand.N(backoff)
		backoff = min(backoff*2, 100*time.Millisecond)
		select {
		case <-ctx.Done():
			return fmt.Errorf("jsstore: %s: %w", what, ctx.Err())
		case <-time.After(d):
		}
	}
}
