package engine

import (
	"testing"

	"github.com/askbridge/askbridge/internal/testenv/testmain"
)

// The tests wait on AckWaits and redeliveries far more than they compute.
func TestMain(m *testing.M) { testmain.Main(m, 8) }
