package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxMulti is the most keys one multi read asks for: the server answers
// at most 1,024 subjects a request.
const maxMulti = 1000

// multiTimeout bounds a multi read when the caller's context has no
// deadline: a lost answer must not hang a decision.
const multiTimeout = 10 * time.Second

// getMany reads the last values of keys with one request per maxMulti
// keys (a direct get of many subjects' last messages, one consistent
// reading of the bucket) instead of a round trip per key. A key that holds
// nothing is absent from the result.
func (s *Store) getMany(ctx context.Context, keys []string) (map[string]entry, error) {
	out := make(map[string]entry, len(keys))
	for chunk := range slices.Chunk(slices.Compact(slices.Sorted(slices.Values(keys))), maxMulti) {
		if err := s.getChunk(ctx, chunk, out); err != nil {
			return nil, fmt.Errorf("jsstore: read %d keys: %w", len(chunk), err)
		}
	}
	return out, nil
}

// getChunk reads keys (at most maxMulti) into out.
func (s *Store) getChunk(ctx context.Context, keys []string, out map[string]entry) error {
	err := s.multiLast(ctx, keys, out)
	if errors.Is(err, errCutShort) {
		return getRest(ctx, keys, out, s.get)
	}
	return err
}

// errCutShort is a multi read the server answered in part: more than
// 1,024 subjects matched, or the answer outgrew its max pending bytes.
var errCutShort = errors.New("the server cut the answer short")

// multiLast reads into out the last value of every key that patterns
// (keys, or key patterns with * and >; at most maxMulti) match, in one
// direct get of many subjects' last messages: one consistent reading of
// the bucket. Keys that hold nothing are left out. When the server
// answers in part it is errCutShort, and out holds the part.
func (s *Store) multiLast(ctx context.Context, patterns []string, out map[string]entry) error {
	_, err := s.multiLastUpTo(ctx, patterns, out)
	return err
}

// multiLastUpTo is multiLast, and the stream sequence the replica that
// answered had read up to (its last); zero when it found nothing, whose
// answer does not say.
func (s *Store) multiLastUpTo(ctx context.Context, patterns []string, out map[string]entry) (uint64, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, multiTimeout)
		defer cancel()
	}
	subjects := make([]string, len(patterns))
	for i, k := range patterns {
		subjects[i] = subjectPrefix + k
	}
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
	}{subjects})
	if err != nil {
		return 0, err
	}
	inbox := s.nc.NewInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return 0, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.nc.PublishRequest("$JS.API.DIRECT.GET."+streamName, inbox, req); err != nil {
		return 0, err
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return 0, err
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "404": // none of the keys holds anything
			return 0, nil
		case "413":
			return 0, errCutShort
		case "204": // the end
			upTo, _ := strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64)
			if pending := m.Header.Get("Nats-Num-Pending"); pending != "" && pending != "0" {
				return upTo, errCutShort
			}
			return upTo, nil
		default:
			return 0, fmt.Errorf("the server answered %s %s", status, m.Header.Get("Description"))
		}
		key, ok := strings.CutPrefix(m.Header.Get("Nats-Subject"), subjectPrefix)
		rev, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("an answer for %q at %q", m.Header.Get("Nats-Subject"), m.Header.Get("Nats-Sequence"))
		}
		switch m.Header.Get(kvOperation) {
		case "DEL", "PURGE":
			continue
		}
		out[key] = entry{Key: key, Value: m.Data, Rev: rev}
	}
}

// getRest reads with get, one by one, the keys of a multi read not yet in
// out: the server cut it short (it sends at most its max pending bytes an
// answer), or its answer is not to be taken.
func getRest(ctx context.Context, keys []string, out map[string]entry,
	get func(context.Context, string) ([]byte, uint64, bool, error)) error {
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		data, rev, ok, err := get(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			out[k] = entry{Key: k, Value: data, Rev: rev}
		}
	}
	return nil
}

// decodeQuestion reads a question document as getQuestion does.
func decodeQuestion(e entry) (*questionDoc, error) {
	var d questionDoc
	if err := json.Unmarshal(e.Value, &d); err != nil {
		return nil, fmt.Errorf("jsstore: decode %s: %w", e.Key, err)
	}
	d.noteRead()
	return &d, nil
}

// getDocs reads the documents of ids, with their revisions, in a multi
// read; a missing one is nil.
func (s *Store) getDocs(ctx context.Context, ids []int64) ([]*questionDoc, []uint64, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = keyQuestion(id)
	}
	got, err := s.getMany(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	docs, revs := make([]*questionDoc, len(ids)), make([]uint64, len(ids))
	for i, k := range keys {
		e, ok := got[k]
		if !ok {
			continue
		}
		if docs[i], err = decodeQuestion(e); err != nil {
			return nil, nil, err
		}
		revs[i] = e.Rev
	}
	return docs, revs, nil
}

// parseID reads a question id kept as a key's value.
func parseID(data []byte) (int64, error) {
	id, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("jsstore: a question id key holds %q: %w", data, err)
	}
	return id, nil
}
