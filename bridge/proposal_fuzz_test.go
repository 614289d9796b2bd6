package bridge

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzDecodeProposal: an approval's proposal never makes decoding panic;
// every refusal has words; an accepted proposal re-encodes to one that is
// accepted again, unchanged.
func FuzzDecodeProposal(f *testing.F) {
	for _, s := range []string{
		`{"id":"pr_8f2a","action":"refund","summary":["Refund $240"],"arguments":{"order":4471},"amount":240,"currency":"USD","expires_at":"2030-01-02T15:04:05Z"}`,
		`{"id":"pr_1","action":"refund","summary":["s"],"arguments":[1]}`,
		`{"id":"pr_1","action":"refund","summary":["s"],"arguments":null,"expires_at":null}`,
		`{"id":"pr_1","action":"refund","summary":["s"],"amount":-0,"currency":"EUR"}`,
		`{"id":"pr_1","action":"refund","summary":["s"],"amount":1e308,"currency":"usd"}`,
		`{"id":"pr_1","action":"a b","summary":"s","expires_at":"tomorrow"}`,
		`{"id":"pr_1","action":"refund","summary":["s"],"expires_at":12}`,
		`{"id":"pr_1","action":"refund","summary":["s"],"arguments":{"a":{"b":[null,true]}}}`,
		`[]`, `null`, `{}`, `{"expires_at":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, prop []byte) {
		data := []byte(`{"tenant":"acme","job_id":"job-1","question_id":"q-1","kind":"approval","question":"May I?","proposal":` + string(prop) + `}`)
		q, err := DecodeQuestion(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without words")
			}
			return
		}
		raw, err := json.Marshal(q)
		if err != nil {
			t.Fatalf("re-encoding a valid approval: %v", err)
		}
		q2, err := DecodeQuestion(raw)
		if err != nil {
			t.Fatalf("re-encoded approval %s is refused: %v", raw, err)
		}
		raw2, _ := json.Marshal(q2)
		if !bytes.Equal(raw, raw2) {
			t.Fatalf("round trip changed the approval:\n%s\n%s", raw, raw2)
		}
		_ = CheckProposalAt(q.Proposal, time.Now())
	})
}

// FuzzDecodeExecution: an execution report never makes decoding panic, and
// every refusal has words.
func FuzzDecodeExecution(f *testing.F) {
	for _, s := range []string{
		`{"tenant":"acme","job_id":"j","proposal_id":"pr_1","result":"succeeded","detail":"ok"}`,
		`{"tenant":"acme","job_id":"j","proposal_id":"pr_1","result":"nope"}`,
		`{"proposal_id":7}`, `[]`, ``, `{"at":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeExecution(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without words")
			}
			return
		}
		if e.Result != ResultSucceeded && e.Result != ResultFailed {
			t.Fatalf("accepted result %q", e.Result)
		}
	})
}
