package runtime

import "testing"

func TestAttemptOrderAccountsForEarlierSequences(t *testing.T) {
	tests := []struct {
		name    string
		floor   uint64
		decided []uint64 // decided here before the batch
		batch   []uint64
		want    uint64 // the first sequence before the batch's last unaccounted for
	}{
		{"one runtime taking each in turn", 0, []uint64{1, 2, 3}, []uint64{4, 5}, 0},
		{"decided here out of order", 0, []uint64{1, 3, 2}, []uint64{4}, 0},
		{"below the consumer's floor", 10, nil, []uint64{11, 12}, 0},
		{"held by another replica", 0, []uint64{1, 2, 4}, []uint64{5}, 3},
		{"inside the batch", 0, []uint64{1, 2}, []uint64{3, 5, 6}, 4},
		{"a runtime just started", 0, nil, []uint64{1000}, 1},
		{"just started, the floor read", 999, nil, []uint64{1000}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &attemptOrder{}
			o.raise(tt.floor)
			o.decidedHere(tt.decided)
			if got := o.firstUnknown(tt.batch, tt.batch[len(tt.batch)-1]); got != tt.want {
				t.Errorf("firstUnknown = %d, want %d (floor %d, decided here %v)", got, tt.want, o.floor, o.done)
			}
		})
	}
}

func TestAttemptOrderFloorMovesOverWhatWasDecidedHere(t *testing.T) {
	o := &attemptOrder{}
	o.decidedHere([]uint64{1, 2, 4, 5})
	if o.floor != 2 || len(o.done) != 2 {
		t.Fatalf("floor %d, above it %v; want 2 and {4, 5}", o.floor, o.done)
	}
	o.raise(3) // the consumer's ack floor: 3 was decided elsewhere
	if o.floor != 5 || len(o.done) != 0 {
		t.Fatalf("floor %d, above it %v; want 5 and nothing", o.floor, o.done)
	}
}
