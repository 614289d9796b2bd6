package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/askbridge/askbridge/store/storetest"
)

// FuzzDecideBatchMatchesOneByOne is the conformance suite's
// BatchMatchesOneByOne over any seed, with what the two SQLite files hold
// compared row by row as well: the attempts' questions and times, the
// ladder's rows, the outbox's times. Its corpus, run by every go test, is
// two seeds the conformance suite does not run; .ci/fuzz explores others.
func FuzzDecideBatchMatchesOneByOne(f *testing.F) {
	f.Add(uint64(4))
	f.Add(uint64(5))
	f.Fuzz(func(t *testing.T, seed uint64) {
		batched, single := open(t), open(t)
		storetest.BatchMatchesOneByOne(t, batched, single, seed)
		if b, s := dump(t, batched), dump(t, single); b != s {
			t.Fatalf("the stores differ:\nbatched:\n%s\none by one:\n%s", b, s)
		}
	})
}

// dump is everything a decision can write, in a stable order.
func dump(t *testing.T, s *Store) string {
	t.Helper()
	var out string
	for _, q := range []string{
		"SELECT id, state, action, answer, by_id, via, text, settled_at FROM questions ORDER BY id",
		"SELECT question, from_state, to_state, by_id, via, reason, at FROM audit ORDER BY id",
		"SELECT question, idx, target, due FROM steps ORDER BY question, idx",
		"SELECT attempt_id, question, at FROM attempts ORDER BY attempt_id",
		"SELECT id, subject, CAST(data AS TEXT), created_at FROM outbox ORDER BY id",
	} {
		rows, err := s.w.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintln(vals...)
		}
		rows.Close()
		out += "--\n"
	}
	return out
}
