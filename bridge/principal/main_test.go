package principal

import (
	"testing"

	"github.com/askbridge/askbridge/internal/testenv/testmain"
)

func TestMain(m *testing.M) { testmain.Main(m, 0) }
