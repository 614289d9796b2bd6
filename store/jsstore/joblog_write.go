package jsstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/askbridge/askbridge/store/record"
)

// gateLogTTL is how long a gate decision stays in the job log: as long as
// the runtime keeps them in SQLite (runtime/prune.go, keepGateLog). The
// bucket deletes them itself when it is up, so PruneGateLog has nothing
// to do.
const gateLogTTL = 30 * 24 * time.Hour

// Classes of job log entries, a token of their key: the gate's refusals
// apart from its allowed decisions (GateDecisions reads only refusals), and
// both apart from the trail people follow, which is kept.
const (
	logClassGate    = "g"
	logClassRefusal = "r"
	logClassTrail   = "t"
)

// logDoc is one job log entry under log.<day>.<class>.<tenant>.<job>.<nuid>:
// short names, for the gate writes one per request. Body is kept as the
// JSON it is; a body that is not JSON is kept as text.
type logDoc struct {
	Kind       string          `json:"k"`
	QuestionID string          `json:"q,omitempty"`
	Body       json.RawMessage `json:"b,omitempty"`
	Text       string          `json:"s,omitempty"`
	At         int64           `json:"at"`
}

// gateCode is what a gate entry's body says of its decision.
type gateCode struct {
	Code *string `json:"code"`
}

// logDay is the day token of an entry at at (UTC).
func logDay(at time.Time) string { return at.UTC().Format("20060102") }

// logClass sorts an entry: a gate decision whose body has a code other
// than allowed is a refusal (as SQLite's job_log_gate_refusals index).
func logClass(e *record.LogEntry) string {
	if e.Kind != record.LogGate {
		return logClassTrail
	}
	var c gateCode
	if json.Unmarshal(e.Body, &c) == nil && c.Code != nil && *c.Code != "allowed" {
		return logClassRefusal
	}
	return logClassGate
}

// appendLog writes entries, in order, as new keys of the transaction: blind
// puts, for no other transition writes a new entry's key. An entry's ID is
// its key's revision, so entries read back in commit order. Gate decisions
// go on their own after gateLogTTL.
func (t *txn) appendLog(entries []record.LogEntry) error {
	for i := range entries {
		e := &entries[i]
		d := logDoc{Kind: e.Kind, QuestionID: e.QuestionID, At: e.At.UnixMilli()}
		if e.At.IsZero() {
			d.At = 0
		}
		switch body := strings.TrimSpace(string(e.Body)); {
		case body == "":
		case json.Valid(e.Body):
			d.Body = e.Body
		default:
			d.Text = string(e.Body)
		}
		data, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("jsstore: encode a job log entry of %s/%s: %w", e.Tenant, e.JobID, err)
		}
		class, ttl := logClass(e), time.Duration(0)
		if class != logClassTrail {
			ttl = gateLogTTL
		}
		t.putBlind(keyLog(logDay(e.At), class, e.Tenant, e.JobID, nuid.Next()), data, ttl)
	}
	return nil
}

// logEntry decodes a job log entry of tenant's job.
func logEntry(tenant, job string, en entry) (record.LogEntry, error) {
	var d logDoc
	if err := json.Unmarshal(en.Value, &d); err != nil {
		return record.LogEntry{}, fmt.Errorf("jsstore: decode %s: %w", en.Key, err)
	}
	e := record.LogEntry{ID: int64(en.Rev), Tenant: tenant, JobID: job, Kind: d.Kind, QuestionID: d.QuestionID, Body: d.Body}
	switch {
	case d.Text != "":
		e.Body = json.RawMessage(d.Text)
	case len(d.Body) == 0:
		e.Body = json.RawMessage("{}")
	}
	if d.At != 0 {
		e.At = time.UnixMilli(d.At).UTC()
	}
	return e, nil
}
