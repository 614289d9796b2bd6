package slack

import (
	"testing"

	"github.com/askbridge/askbridge/internal/testenv/testmain"
)

// TestMain runs eight tests at once: they wait on the fake Slack, NATS and
// Retry-After far more than they compute (see testmain.Run).
func TestMain(m *testing.M) { testmain.Main(m, 8) }
