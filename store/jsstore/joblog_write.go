package jsstore

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nuid"

	"github.com/askbridge/askbridge/store"
)

// appendLog writes entries to their jobs' logs as new keys of the
// transaction, log.<tenant>.<job>.<nuid>: written only if it commits, each
// entry's id its key's revision. A body left empty is kept as {}, as the
// SQLite store keeps it.
func (t *txn) appendLog(entries []store.LogEntry) error {
	for _, e := range entries {
		e.ID, e.At = 0, msTime(e.At)
		if len(e.Body) == 0 {
			e.Body = json.RawMessage("{}")
		}
		data, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("jsstore: encode a %s log entry of job %s/%s: %w", e.Kind, e.Tenant, e.JobID, err)
		}
		t.putBlind(keyLog(e.Tenant, e.JobID, nuid.Next()), data, 0)
	}
	return nil
}
