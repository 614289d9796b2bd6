package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrConflict is a compare-and-set on a key-value record lost too often
// to other writers.
var ErrConflict = errors.New("concurrent updates of a key-value record")

// IsConflict says err is a lost compare-and-set race.
func IsConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// updateTries bounds the compare-and-set rounds of UpdateJSON.
const updateTries = 20

// GetJSON reads key into v. found is false (and rev 0) when there is no
// such key; at is when it was last written.
func GetJSON(ctx context.Context, kv *KV, key string, v any) (rev uint64, at time.Time, found bool, err error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, time.Time{}, false, fmt.Errorf("decode %s: %w", key, err)
	}
	return e.Revision(), e.Created(), true, nil
}

// PutJSON writes v at key if the key is still at rev (0: absent); with
// ttl > 0 the key goes ttl later. A lost race is an error IsConflict
// recognises.
func PutJSON(ctx context.Context, kv *KV, key string, rev uint64, v any, ttl time.Duration) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", key, err)
	}
	rev, err = kv.Write(ctx, key, rev, data, ttl)
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", key, err)
	}
	return rev, nil
}

// HintJSON writes v at key as a hint (KV.Hint): without waiting for it.
func HintJSON(kv *KV, key string, v any, ttl time.Duration) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	if err := kv.Hint(key, data, ttl); err != nil {
		return fmt.Errorf("hint %s: %w", key, err)
	}
	return nil
}

// UpdateJSON is the one way the adapters change a record they share
// between replicas: a compare-and-set, read again after each lost race
// (up to 20 times, then ErrConflict); any other error ends it, for the
// caller's retry. change sees the current record (nil when absent) and
// returns the record to write, or nil to write nothing; UpdateJSON then
// returns the current record. ttl gives a new record's lifetime (0: the
// bucket's).
func UpdateJSON[T any](ctx context.Context, kv *KV, key string, ttl func(*T) time.Duration, change func(cur *T) *T) (*T, error) {
	for range updateTries {
		cur := new(T)
		rev, _, found, err := GetJSON(ctx, kv, key, cur)
		if err != nil {
			return nil, err
		}
		if !found {
			cur = nil
		}
		next := change(cur)
		if next == nil {
			return cur, nil
		}
		if _, err := PutJSON(ctx, kv, key, rev, next, ttl(next)); IsConflict(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		return next, nil
	}
	return nil, fmt.Errorf("%s: %w", key, ErrConflict)
}
