package record

import "testing"

func TestSnoozeStepIsApartFromTheLadder(t *testing.T) {
	for _, tt := range []struct {
		last int
		has  bool
		want int
	}{{0, false, 1000}, {3, true, 1000}, {1000, true, 1001}, {1004, true, 1005}} {
		if got := SnoozeStep(tt.last, tt.has); got != tt.want {
			t.Errorf("SnoozeStep(%d, %v) = %d, want %d", tt.last, tt.has, got, tt.want)
		}
	}
}
