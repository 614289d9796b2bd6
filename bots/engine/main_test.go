package engine

import (
	"os"
	"testing"

	"github.com/askbridge/askbridge/internal/testenv/parallel"
)

// The tests wait on AckWaits and redeliveries far more than they compute.
func TestMain(m *testing.M) { os.Exit(parallel.Run(m, 8)) }
