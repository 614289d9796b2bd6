package jsstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A bucket with replicas answers a direct get from any of them that has
// caught up to within 90% of its leader (nats-server turns a follower's
// direct gets on at that point), so a reading may miss the latest
// commits. Decisions do not mind: each commits with a compare-and-set on
// what it read. The gate does: it answers from a reading alone, and a
// question recorded a moment ago must block it. So on such a bucket the
// gate's reading is fenced (docs/design.md, "The gate"): it is taken as
// fresh only when the replica that answered had applied the stream up to
// the leader's last sequence, read when the request came, which every
// commit acknowledged before is at or below.

// errBehind is a reading answered by a replica that had not yet applied
// the stream up to the fence.
var errBehind = errors.New("the bucket's replica that answered had not caught up with its leader")

// fenceTries bounds the readings of one fenced read: a follower that
// lags is usually level again within milliseconds, and another may
// answer the next request.
const fenceTries = 8

// fenceWait is the pause before the second reading; it doubles each time.
const fenceWait = 2 * time.Millisecond

// fence is the sequence a reading must have been taken at or after; zero
// on a bucket without replicas, whose one server answers every read.
type fence uint64

// check is nil when a reading the server took up to sequence upTo is
// fresh.
func (f fence) check(upTo uint64) error {
	if upTo < uint64(f) {
		return fmt.Errorf("%w: it had applied up to sequence %d, the leader %d", errBehind, upTo, uint64(f))
	}
	return nil
}

// readFence is the fence for a reading taken now: the leader's last
// sequence (STREAM.INFO, which only the stream's leader answers), or zero
// when the bucket has one replica.
func (s *Store) readFence(ctx context.Context) (fence, error) {
	if !s.replicated {
		return 0, nil
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("jsstore: read the bucket's last sequence from its leader: %w", err)
	}
	if info.Cluster != nil && info.Cluster.Leader == "" {
		return 0, fmt.Errorf("jsstore: read the bucket's last sequence: the bucket has no leader now")
	}
	return fence(info.State.LastSeq), nil
}

// fenced runs read until a reading is fresh (it returns no errBehind),
// pausing between readings, wait and then twice as long each time; after
// fenceTries readings, or when ctx ends, the error says the replicas
// stayed behind.
func fenced[T any](ctx context.Context, wait time.Duration, read func() (T, error)) (T, error) {
	for try := 1; ; try++ {
		v, err := read()
		if !errors.Is(err, errBehind) || try == fenceTries {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// leaderGet reads the value of key from the stream's leader: false when
// the key holds nothing, or was deleted.
func (s *Store) leaderGet(ctx context.Context, key string) ([]byte, uint64, bool, error) {
	m, ok, err := s.leaderMsg(ctx, leaderRequest{LastBySubject: subjectPrefix + key})
	if err != nil || !ok {
		return nil, 0, false, err
	}
	if deleted(m.Header) {
		return nil, m.Seq, false, nil
	}
	return m.Data, m.Seq, true, nil
}

// leaderKeys lists from the leader the keys that filter matches, in the
// order they were written, a request a key: for what one multi read
// cannot answer, as a job with more than a thousand pending questions.
func (s *Store) leaderKeys(ctx context.Context, filter string) ([]string, error) {
	var keys []string
	for next := uint64(1); ; {
		m, ok, err := s.leaderMsg(ctx, leaderRequest{NextBySubject: subjectPrefix + filter, Seq: next})
		if err != nil || !ok {
			return keys, err
		}
		if !deleted(m.Header) {
			keys = append(keys, strings.TrimPrefix(m.Subject, subjectPrefix))
		}
		next = m.Seq + 1
	}
}

// leaderRequest is a STREAM.MSG.GET request: the last message of a
// subject, or the first at or after Seq of a subject pattern.
type leaderRequest struct {
	LastBySubject string `json:"last_by_subj,omitempty"`
	NextBySubject string `json:"next_by_subj,omitempty"`
	Seq           uint64 `json:"seq,omitempty"`
}

// storedMsg is a message as STREAM.MSG.GET returns it.
type storedMsg struct {
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
	Header  []byte `json:"hdrs"`
	Data    []byte `json:"data"`
}

// leaderMsg asks the stream's leader for a message (STREAM.MSG.GET,
// which only the leader answers): false when there is none.
func (s *Store) leaderMsg(ctx context.Context, r leaderRequest) (storedMsg, bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, multiTimeout)
		defer cancel()
	}
	what := cmp.Or(r.LastBySubject, r.NextBySubject)
	req, err := json.Marshal(r)
	if err != nil {
		return storedMsg{}, false, err
	}
	m, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+streamName, req)
	if err != nil {
		return storedMsg{}, false, fmt.Errorf("jsstore: read %s from the leader: %w", what, err)
	}
	var resp struct {
		Error *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *storedMsg `json:"message"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return storedMsg{}, false, fmt.Errorf("jsstore: read %s from the leader: %w", what, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == noMessageFound:
		return storedMsg{}, false, nil
	case resp.Error != nil:
		return storedMsg{}, false, fmt.Errorf("jsstore: read %s from the leader: %s (%d)", what, resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return storedMsg{}, false, fmt.Errorf("jsstore: read %s from the leader: an answer with no message", what)
	}
	return *resp.Message, true, nil
}

// noMessageFound is JetStream's error code for a get that found nothing.
const noMessageFound = 10037

// deleted reports whether a stored message's raw headers mark a key
// deleted or purged.
func deleted(hdr []byte) bool {
	for line := range bytes.SplitSeq(hdr, []byte("\r\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte(kvOperation)) {
			op := string(bytes.TrimSpace(value))
			return op == "DEL" || op == "PURGE"
		}
	}
	return false
}
