package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/askbridge/askbridge/store/record"
)

// The outbox is the keys out.<nuid>, written in the batch of the
// transition whose messages they are (txn.outbox). A row's ID is its
// key's revision: the stream sequence of the commit that wrote it, unique
// and in commit order across every replica, as SQLite's row ids are. The
// relay of the replica holding the relay lease (relaylease.go) reads the
// rows in that order and publishes each under Nats-Msg-Id
// "ob-<instance>-<id>" (record.OutboxRow.MsgID): the instance is the
// record's, shared by the replicas, so when two relays publish one row
// during a handover JetStream keeps the first and drops the other.
//
// Published rows are deleted outright (MarkSentThrough), their messages
// purged from the stream rather than covered by delete markers: the
// relay's reads start just after its cursor, and the markers of every row
// published in the last minutes would lie across that range, read and
// skipped on every read, and counted by OutboxBacklogAfter.

// outFilter is the subject of every outbox row.
const outFilter = subjectPrefix + "out.>"

// Unsent returns up to limit unsent rows after row afterID, oldest first,
// with OldAt set on those written before oldBefore, as SQLite's Unsent.
//
// Sequences are given out in commit order in the one stream, and a read
// from afterID+1 sees every row committed before it began: a row committed
// later has a higher sequence than any the read returned, so a relay's
// cursor (the last row it read) never passes over a row, whichever
// replica wrote it.
func (s *Store) Unsent(ctx context.Context, afterID int64, limit int, oldBefore time.Time) ([]record.OutboxRow, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []record.OutboxRow
	var bad error
	err := s.scan(ctx, outFilter, uint64(max(afterID, 0))+1, func(key string, rev uint64, value []byte) bool {
		var d outboxDoc
		if err := json.Unmarshal(value, &d); err != nil {
			bad = fmt.Errorf("jsstore: outbox row %d (%s): %w", rev, key, err)
			return false
		}
		row := record.OutboxRow{ID: int64(rev), Subject: d.Subject, Data: d.Data, Instance: s.instance}
		if !d.CreatedAt.IsZero() && d.CreatedAt.Before(oldBefore) {
			row.OldAt = d.CreatedAt.UnixMilli()
		}
		out = append(out, row)
		return len(out) < limit
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("jsstore: outbox: %w", err)
	}
	return out, nil
}

// scan calls each, in revision order, with every live key matching filter
// (a full subject) written at revision from or later, until each returns
// false or none are left. Deleted keys are skipped.
func (s *Store) scan(ctx context.Context, filter string, from uint64, each func(key string, rev uint64, value []byte) bool) error {
	key := strings.TrimPrefix(filter, subjectPrefix)
	w, err := s.kv.WatchFiltered(ctx, []string{key}, jetstream.IgnoreDeletes(), jetstream.ResumeFromRevision(max(from, 1)))
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("read %s: %w", key, ctx.Err())
		case e, open := <-w.Updates():
			if !open {
				return fmt.Errorf("read %s: the watch ended early", key)
			}
			if e == nil || !each(e.Key(), e.Revision(), e.Value()) {
				return nil
			}
		}
	}
}

// MarkSentThrough deletes every outbox row up to row through: one purge
// of out.> below the next sequence, whatever keys lie between. The relay
// marks a run of rows it published in order, so one purge covers every
// row it published since its last mark. A row already gone is no error.
func (s *Store) MarkSentThrough(ctx context.Context, through int64, at time.Time) error {
	if through <= 0 {
		return nil
	}
	if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(outFilter), jetstream.WithPurgeSequence(uint64(through)+1)); err != nil {
		return fmt.Errorf("jsstore: mark the outbox sent through row %d: %w", through, err)
	}
	return nil
}

// OutboxBacklogAfter counts unsent rows after row after. The server
// counts them: a direct get of the first row after it, in a batch of one,
// comes with the number of rows pending behind it. (A follower answering
// it may not have the newest commits yet: the count is of the rows it has.)
func (s *Store) OutboxBacklogAfter(ctx context.Context, after int64) (int64, error) {
	n, err := s.countAfter(ctx, outFilter, uint64(max(after, 0))+1)
	if err != nil {
		return 0, fmt.Errorf("jsstore: outbox backlog: %w", err)
	}
	return n, nil
}

// countAfter counts the messages on subject filter (wildcards allowed)
// at sequence from or later, with one direct get: no consumer is made.
func (s *Store) countAfter(ctx context.Context, filter string, from uint64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	sub, err := s.nc.SubscribeSync(s.nc.NewInbox())
	if err != nil {
		return 0, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(map[string]any{"seq": from, "next_by_subj": filter, "batch": 1})
	if err := s.nc.PublishRequest(jetstream.DefaultAPIPrefix+"DIRECT.GET."+streamName, sub.Subject, req); err != nil {
		return 0, err
	}
	m, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		return 0, err
	}
	pending := func() (int64, error) { return strconv.ParseInt(m.Header.Get("Nats-Num-Pending"), 10, 64) }
	switch status := m.Header.Get("Status"); status {
	case "404":
		return 0, nil // none
	case "":
		// The first of them; the header counts those after it.
		n, err := pending()
		return n + 1, err
	case "204":
		return pending()
	default:
		return 0, fmt.Errorf("direct get: %s %s", status, m.Header.Get("Description"))
	}
}

// PruneSent deletes nothing: a published row is deleted when it is marked
// sent, and JetStream keeps the messages.
func (s *Store) PruneSent(ctx context.Context, before time.Time) (int64, error) {
	return 0, nil
}

// PruneAttempts deletes the attempt keys decided before the cutoff that
// were written before attempt keys expired on their own (attemptTTL), as
// SQLite prunes its attempts rows. Once a prune finds none of them left, it
// notes so in the record, and every later one reads nothing: a list of
// every attempt key each hour grew with the answers of a month. Each batch
// deletes a key only if it still holds what was read.
func (s *Store) PruneAttempts(ctx context.Context, before time.Time) (int64, error) {
	if done, err := s.Meta(ctx, metaAttemptsExpire); err != nil || done != "" {
		return 0, err
	}
	entries, err := s.list(ctx, "att.>")
	if err != nil {
		return 0, fmt.Errorf("jsstore: prune attempts: %w", err)
	}
	var n int64
	left := 0 // keys that do not expire and stay
	t := &txn{}
	flush := func() error {
		if t.empty() {
			return nil
		}
		err := s.commit(ctx, t)
		if errors.Is(err, ErrConflict) {
			// One was decided again meanwhile: the next prune takes the rest.
			err, left = nil, left+len(t.writes)
		} else if err == nil {
			n += int64(len(t.writes))
		}
		t = &txn{}
		return err
	}
	for _, e := range entries {
		var a attemptDoc
		if err := json.Unmarshal(e.Value, &a); err == nil && a.Expires {
			continue
		}
		if !a.At.Before(before) {
			left++
			continue
		}
		t.del(e.Key, e.Rev)
		if len(t.writes) == maxBatch {
			if err := flush(); err != nil {
				return n, fmt.Errorf("jsstore: prune attempts: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return n, fmt.Errorf("jsstore: prune attempts: %w", err)
	}
	if left == 0 {
		if err := s.SetMeta(ctx, metaAttemptsExpire, "yes"); err != nil {
			return n, fmt.Errorf("jsstore: prune attempts: %w", err)
		}
	}
	return n, nil
}

// metaAttemptsExpire is set once no attempt key is left that does not
// expire on its own.
const metaAttemptsExpire = "jsstore.attempts-expire"
