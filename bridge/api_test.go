package bridge

import (
	"encoding/json"
	"testing"
)

// TestAPIErrorRepliesCarryOnlyTheError checks refused API requests come
// back as {"error": "..."} (docs/contract.md), and answered ones whole.
func TestAPIErrorRepliesCarryOnlyTheError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		reply any
		want  string
	}{
		{"list refused", ListReply{Error: "list: limit: must be a whole number, not text"}, `{"error":"list: limit: must be a whole number, not text"}`},
		{"list empty", ListReply{Questions: []QuestionView{}}, `{"questions":[]}`},
		{"list with next", ListReply{Questions: []QuestionView{}, Next: "c1"}, `{"questions":[],"next":"c1"}`},
		{"list by pointer", &ListReply{Error: "as: bad"}, `{"error":"as: bad"}`},
		{"stats refused", StatsReply{Error: "stats: the store could not be read"}, `{"error":"stats: the store could not be read"}`},
		{"stats", StatsReply{ByState: map[string]int64{"pending": 3}}, `{"by_state":{"pending":3},"outbox_backlog":0}`},
		{"show refused", ShowReply{Error: "question_id: is required"}, `{"error":"question_id: is required"}`},
	} {
		b, err := json.Marshal(c.reply)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(b) != c.want {
			t.Errorf("%s: %s, want %s", c.name, b, c.want)
		}
	}
	// A reply still decodes into its type.
	var back ListReply
	if err := json.Unmarshal([]byte(`{"questions":[],"next":"c1"}`), &back); err != nil || back.Next != "c1" || back.Questions == nil {
		t.Fatalf("decode: %+v %v", back, err)
	}
}
