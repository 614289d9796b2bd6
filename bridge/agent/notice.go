package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/askbridge/askbridge/bridge"
)

// Notify reports, durably, a failure the job met that is not a question
// (docs/contract.md, "Notices"): people see it in the job's thread, and
// nothing waits for a reply. A notice without an id gets one here, so
// publishing the same notice value again is one notice: the runtime
// records a notice id of a job once.
func (c *Client) Notify(ctx context.Context, n *bridge.Notice) error {
	if n.NoticeID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		n.NoticeID = "n-" + hex.EncodeToString(b[:])
	}
	if err := bridge.ValidateNotice(n); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	msgID := fmt.Sprintf("notice.%s.%s.%s.%s", n.Tenant, n.JobID, n.NoticeID, nonce())
	return bridge.Publish(ctx, c.js, bridge.NoticeSubject(n.Tenant, n.JobID), msgID, n)
}
