package slack

import (
	"os"
	"testing"

	"github.com/askbridge/askbridge/internal/testenv/parallel"
)

// TestMain runs eight tests at once: they wait on the fake Slack, NATS and
// Retry-After far more than they compute (see parallel.Run).
func TestMain(m *testing.M) { os.Exit(parallel.Run(m, 8)) }
