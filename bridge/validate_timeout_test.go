package bridge

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "4h", want: 4 * time.Hour},
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "2d", want: 48 * time.Hour},
		{in: " 2d ", want: 48 * time.Hour},
		{in: "90d", want: MaxTimeout},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "2d30m", want: 48*time.Hour + 30*time.Minute},
		{in: "89d24h", want: MaxTimeout},
		{in: "89d24h1s", err: `"89d24h1s" must be at most 90 days`},
		{in: "1d12", err: `"1d12" is not a duration such as 30m, 4h or 2d`},
		{in: "1d-1h", err: `"1d-1h" is not a duration such as 30m, 4h or 2d`},
		{in: "1d2d", err: `"1d2d" is not a duration such as 30m, 4h or 2d`},
		{in: "2160h", want: MaxTimeout},
		{in: "1s", want: time.Second},
		{in: "0s", err: `"0s" must be at least one second`},
		{in: "999ms", err: `"999ms" must be at least one second`},
		{in: "-1h", err: `"-1h" must be at least one second`},
		{in: "-2d", err: `"-2d" must be at least one second`},
		{in: "0d", err: `"0d" must be at least one second`},
		{in: "91d", err: `"91d" must be at most 90 days`},
		{in: "2160h1s", err: `"2160h1s" must be at most 90 days`},
		// Would overflow time.Duration if multiplied first.
		{in: "106751992d", err: `"106751992d" must be at most 90 days`},
		{in: "9223372036854775807d", err: `"9223372036854775807d" must be at most 90 days`},
		{in: "99999999999999999999d", err: `"99999999999999999999d" is not a duration such as 30m, 4h or 2d`},
		{in: "banana", err: `"banana" is not a duration such as 30m, 4h or 2d`},
		{in: "d", err: `"d" is not a duration such as 30m, 4h or 2d`},
		{in: "1.5d", err: `"1.5d" is not a duration such as 30m, 4h or 2d`},
		{in: "4", err: `"4" is not a duration such as 30m, 4h or 2d`},
		{in: "", err: `"" is not a duration such as 30m, 4h or 2d`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTimeout(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("ParseTimeout(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestTimeoutDuration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		timeout string
		want    time.Duration
	}{{"", DefaultTimeout}, {"4h", 4 * time.Hour}, {"2d", 48 * time.Hour}, {"banana", DefaultTimeout}} {
		q := &Question{Timeout: tt.timeout}
		if got := q.TimeoutDuration(); got != tt.want {
			t.Errorf("TimeoutDuration(%q) = %v, want %v", tt.timeout, got, tt.want)
		}
	}
}

func TestLadder(t *testing.T) {
	t.Parallel()
	custom := []LadderStep{{At: 0.5, To: TargetOwner}}
	for _, tt := range []struct {
		name string
		e    *Escalation
		want []LadderStep
	}{
		{"default", nil, DefaultLadder},
		{"empty reshaping", &Escalation{}, DefaultLadder},
		{"off", &Escalation{Off: true}, nil},
		{"custom", &Escalation{Steps: custom}, custom},
	} {
		q := &Question{Escalation: tt.e}
		got, _ := json.Marshal(q.Ladder())
		want, _ := json.Marshal(tt.want)
		if string(got) != string(want) {
			t.Errorf("%s: Ladder() = %s, want %s", tt.name, got, want)
		}
	}
	// The spellings an agent may publish, and what survives a round trip
	// through the store (which writes the object form).
	for _, tt := range []struct {
		escalation string
		want       []LadderStep
	}{
		{`null`, DefaultLadder}, {`true`, DefaultLadder}, {`"default"`, DefaultLadder}, {`{}`, DefaultLadder},
		{`false`, nil}, {`"off"`, nil}, {`"None"`, nil}, {`{"off":true}`, nil},
		{`[{"at":0.5,"to":"owner"}]`, custom}, {`{"steps":[{"at":0.5,"to":"owner"}]}`, custom},
	} {
		var q Question
		if err := json.Unmarshal([]byte(`{"escalation":`+tt.escalation+`}`), &q); err != nil {
			t.Fatalf("%s: %v", tt.escalation, err)
		}
		stored, _ := json.Marshal(&q)
		var back Question
		if err := json.Unmarshal(stored, &back); err != nil {
			t.Fatalf("%s: stored as %s: %v", tt.escalation, stored, err)
		}
		for _, q := range []*Question{&q, &back} {
			got, _ := json.Marshal(q.Ladder())
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("escalation %s: Ladder() = %s, want %s", tt.escalation, got, want)
			}
		}
	}
	if DefaultLadder[0].At != 0.25 || DefaultLadder[1].At != 0.5 || DefaultLadder[2].At != 0.75 {
		t.Errorf("DefaultLadder = %+v, want ¼, ½, ¾", DefaultLadder)
	}
}
