package bridge

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

type counter struct {
	N    int      `json:"n"`
	Seen []string `json:"seen,omitempty"`
}

// TestUpdateJSONCountsEveryWriter checks concurrent compare-and-set
// updates of one record each land once: a lost race reads again.
func TestUpdateJSONCountsEveryWriter(t *testing.T) {
	_, kv, ctx := startKV(t)
	noTTL := func(*counter) time.Duration { return 0 }
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			_, err := UpdateJSON(ctx, kv, "c", noTTL, func(cur *counter) *counter {
				next := counter{N: 1, Seen: []string{fmt.Sprint(i)}}
				if cur != nil {
					next = counter{N: cur.N + 1, Seen: append(cur.Seen, fmt.Sprint(i))}
				}
				return &next
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("update: %v", err)
		}
	}
	var got counter
	if _, _, found, err := GetJSON(ctx, kv, "c", &got); err != nil || !found || got.N != writers || len(got.Seen) != writers {
		t.Fatalf("record %+v (found %v, %v), want %d updates", got, found, err, writers)
	}
	// A change that writes nothing returns the record as it is.
	cur, err := UpdateJSON(ctx, kv, "c", noTTL, func(*counter) *counter { return nil })
	if err != nil || cur == nil || cur.N != writers {
		t.Fatalf("unchanged update = %+v, %v", cur, err)
	}
	if cur, err := UpdateJSON(ctx, kv, "absent", noTTL, func(*counter) *counter { return nil }); err != nil || cur != nil {
		t.Fatalf("unchanged update of an absent record = %+v, %v", cur, err)
	}
}

// TestUpdateJSONGivesUpOnEndlessConflicts checks a record another writer
// changes on every round is given up with ErrConflict, not retried
// forever.
func TestUpdateJSONGivesUpOnEndlessConflicts(t *testing.T) {
	_, kv, ctx := startKV(t)
	noTTL := func(*counter) time.Duration { return 0 }
	rounds := 0
	_, err := UpdateJSON(ctx, kv, "busy", noTTL, func(cur *counter) *counter {
		rounds++
		// Another replica writes between this read and its write.
		if _, err := PutJSON(ctx, kv, "busy", 0, counter{N: rounds}, 0); err != nil && !IsConflict(err) {
			t.Fatal(err)
		}
		if cur != nil {
			if _, err := kv.Put(ctx, "busy", []byte(fmt.Sprintf(`{"n":%d}`, rounds))); err != nil {
				t.Fatal(err)
			}
		}
		return &counter{N: -1}
	})
	if !errors.Is(err, ErrConflict) || rounds != updateTries {
		t.Fatalf("err %v after %d rounds, want ErrConflict after %d", err, rounds, updateTries)
	}
}
