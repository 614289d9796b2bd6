package jsstore

import (
	"context"
	"encoding/json"
	"fmt"
)

// prefetched are keys read together, in a multi read, before a batch of
// transitions decides with them: a batch of questions reads its jobs and
// uniqueness keys in a request or two instead of two round trips a
// question. Each key is taken once; a later read of it goes to the record,
// which the batch itself may have written since. A stale value costs a
// compare-and-set that loses, and the transition is read again.
type prefetched struct {
	// read holds each key read and not yet taken: nil when it held
	// nothing.
	read map[string]*entry
}

// prefetch reads keys at once.
func (s *Store) prefetch(ctx context.Context, keys []string) (*prefetched, error) {
	got, err := s.getMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	p := &prefetched{read: make(map[string]*entry, len(keys))}
	for _, k := range keys {
		if e, ok := got[k]; ok {
			p.read[k] = &e
		} else {
			p.read[k] = nil
		}
	}
	return p, nil
}

// take is key as the prefetch read it; known is false when it did not
// read it, or it was taken before.
func (p *prefetched) take(key string) (e entry, ok, known bool) {
	if p == nil {
		return entry{}, false, false
	}
	got, known := p.read[key]
	if !known {
		return entry{}, false, false
	}
	delete(p.read, key)
	if got == nil {
		return entry{}, false, true
	}
	return *got, true, true
}

// getVia is get, from p when p holds key. A key p read as holding nothing
// is at revision 0: were it a delete marker, the write expecting 0 loses
// its compare-and-set and the transition is read again without p.
func (s *Store) getVia(ctx context.Context, p *prefetched, key string) (value []byte, rev uint64, ok bool, err error) {
	if e, ok, known := p.take(key); known {
		return e.Value, e.Rev, ok, nil
	}
	return s.get(ctx, key)
}

// getJSONVia is getJSON, from p when p holds key.
func (s *Store) getJSONVia(ctx context.Context, p *prefetched, key string, v any) (rev uint64, ok bool, err error) {
	data, rev, ok, err := s.getVia(ctx, p, key)
	if err != nil || !ok {
		return rev, ok, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return 0, false, fmt.Errorf("jsstore: decode %s: %w", key, err)
	}
	return rev, true, nil
}
