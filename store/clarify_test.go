package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/store/record"
)

// The clarification index catches up a page of ids at a time: questions
// asked and settled across several pages, before its first read and
// between reads, all show as they stand.
func TestClarifyCatchesUpPageByPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.clarify.page = 3
	var ids []int64
	ask := func(n int) {
		for range n {
			nq := newQ(fmt.Sprintf("job-%d", len(ids)), "q-1", 1)
			nq.Supersede = nil
			ids = append(ids, mustAsk(t, s, nq).Record.ID)
		}
	}
	answer := func(from, to int) {
		for _, id := range ids[from:to] {
			if err := s.Settle(ctx, record.Settlement{Question: id, State: bridge.StateAnswered, By: "slack:U1", At: t0.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := func(answered int) {
		t.Helper()
		qs, err := s.ClarifyQuestions(ctx, "", t0)
		if err != nil || len(qs) != len(ids) {
			t.Fatalf("%d questions, %v; want %d", len(qs), err, len(ids))
		}
		n := 0
		for _, q := range qs {
			if q.State == bridge.StateAnswered {
				n++
			}
		}
		if n != answered {
			t.Errorf("%d of %d questions answered, want %d", n, len(qs), answered)
		}
	}
	ask(8)
	answer(0, 4)
	want(4)
	ask(7)
	answer(4, 11)
	want(11)
}
