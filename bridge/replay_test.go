package bridge

import "testing"

// TestReminderShowsQuestion checks a reminder carries a restricted
// question's content only to those who may read it (docs/contract.md
// "Who may do what").
func TestReminderShowsQuestion(t *testing.T) {
	t.Parallel()
	open := &Question{Answerers: []string{"slack:UANA"}}
	restricted := &Question{Answerers: []string{"slack:UANA"}, Owner: "slack:UJOB", Visibility: VisibilityRestricted}
	nobodyNamed := &Question{Visibility: VisibilityRestricted}
	for _, c := range []struct {
		name   string
		step   string
		q      *Question
		target string
		want   bool
	}{
		{"tenant visibility", TargetAnswerers, open, "slack:UOP", true},
		{"no question", TargetAnswerers, nil, "slack:UOP", true},
		{"restricted, to its answerer", TargetAnswerers, restricted, "slack:UANA", true},
		{"restricted, to its owner", TargetOwner, restricted, "slack:UJOB", true},
		{"restricted, operators stand in for answerers", TargetAnswerers, nobodyNamed, "slack:UOP", false},
		{"restricted, configured owners stand in for the owner", TargetOwner, nobodyNamed, "slack:UBOSS", true},
		{"restricted, to admins", TargetAdmins, restricted, "slack:UADMIN", true},
		{"restricted, no step", "", restricted, "slack:UOP", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ReminderShowsQuestion(&Event{Step: c.step}, c.q, c.target); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
