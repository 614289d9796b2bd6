package bridge

import "testing"

func TestPlatformIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id              string
		slack, snowflak bool
	}{
		{"C0123ABC", true, false},
		{"U0KEV", true, false},
		{"general", false, false},
		{"#general", false, false},
		{"C", false, false},
		{"1234567890123456789", true, true},
		{"123456789012345678901", true, false},
		{"", false, false},
	} {
		if got := ValidSlackID(c.id); got != c.slack {
			t.Errorf("ValidSlackID(%q) = %v", c.id, got)
		}
		if got := ValidSnowflake(c.id); got != c.snowflak {
			t.Errorf("ValidSnowflake(%q) = %v", c.id, got)
		}
	}
}
