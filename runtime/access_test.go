package runtime

import (
	"strings"
	"testing"

	"github.com/askbridge/askbridge/bridge"
)

// TestAccessFor checks the rule of docs/contract.md "Who may do what",
// identity by identity, for a question of each visibility, with and
// without answerers.
func TestAccessFor(t *testing.T) {
	t.Parallel()
	roles := Roles{
		Owners:    []string{"slack:UOWNER"},
		Admins:    []string{"slack:UADMIN", "acme/discord:111"},
		Operators: []string{"slack:UOP", "acme/discord:222", "other/discord:333"},
		Readers:   []string{"slack:UREADER"},
	}
	open := &bridge.Question{Tenant: "acme"}
	named := &bridge.Question{Tenant: "acme", Answerers: []string{"slack:UANA"}, Owner: "slack:UJOB"}
	restricted := &bridge.Question{Tenant: "acme", Answerers: []string{"slack:UANA"}, Owner: "slack:UJOB", Visibility: bridge.VisibilityRestricted}
	tenantWord := &bridge.Question{Tenant: "acme", Answerers: []string{"slack:UANA"}, Visibility: bridge.VisibilityTenant}

	all := access{Exists: true, See: true, Answer: true, Decline: true}
	admin := access{Exists: true, See: true, Answer: true, Decline: true, Admin: true}
	declineUnseen := access{Exists: true, Decline: true}
	waits := access{Exists: true}
	for _, c := range []struct {
		name  string
		id    string
		extra []string
		q     *bridge.Question
		want  access
	}{
		{"owner role, restricted", "slack:UOWNER", nil, restricted, admin},
		{"admin, restricted", "slack:UADMIN", nil, restricted, admin},
		{"tenant-scoped admin in its tenant", "discord:111", nil, restricted, admin},
		{"admin by a platform role", "discord:999", []string{RoleAdmin}, restricted, admin},
		{"answerer, restricted", "slack:UANA", nil, restricted, all},
		{"question owner, restricted", "slack:UJOB", nil, restricted, all},
		{"operator, no answerers", "slack:UOP", nil, open, all},
		{"operator, answerers name someone else", "slack:UOP", nil, named, all},
		{"operator, visibility tenant named", "slack:UOP", nil, tenantWord, all},
		{"operator, restricted", "slack:UOP", nil, restricted, declineUnseen},
		{"tenant-scoped operator, restricted", "discord:222", nil, restricted, declineUnseen},
		{"operator by a platform role, answerers name someone else", "discord:999", []string{RoleOperator}, named, all},
		{"operator by a platform role, restricted", "discord:999", []string{RoleOperator}, restricted, declineUnseen},
		{"another tenant's operator", "discord:333", nil, named, access{}},
		{"reader", "slack:UREADER", nil, open, waits},
		{"reader, restricted", "slack:UREADER", nil, restricted, waits},
		{"reader named as answerer", "slack:UREADER", nil, &bridge.Question{Tenant: "acme", Answerers: []string{"slack:UREADER"}, Visibility: bridge.VisibilityRestricted}, all},
		{"stranger", "slack:USTRANGER", nil, open, access{}},
		{"stranger, restricted", "slack:USTRANGER", nil, restricted, access{}},
		{"nobody", "", nil, open, access{}},
		{"operator, no question (a cancel)", "slack:UOP", nil, nil, all},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := roles.accessFor("acme", c.id, c.extra, c.q); got != c.want {
				t.Errorf("accessFor(%s) = %+v, want %+v", c.id, got, c.want)
			}
		})
	}
}

// TestHeld checks the roles the list reply names: unscoped and
// tenant-scoped, from the configuration and from the adapter, none for a
// stranger (the console then says why nothing shows).
func TestHeld(t *testing.T) {
	t.Parallel()
	roles := Roles{
		Admins:    []string{"acme/discord:111"},
		Operators: []string{"slack:UOP", "acme/discord:111", "other/discord:111"},
		Readers:   []string{"slack:UOP"},
	}
	for _, c := range []struct {
		id    string
		extra []string
		want  string
	}{
		{"slack:UOP", nil, "operator reader"},
		{"discord:111", nil, "acme/admin acme/operator other/operator"},
		{"discord:999", []string{RoleOperator, "bogus"}, "operator"},
		{"slack:USTRANGER", nil, ""},
	} {
		if got := strings.Join(roles.held(c.id, c.extra), " "); got != c.want {
			t.Errorf("held(%s, %v) = %q, want %q", c.id, c.extra, got, c.want)
		}
	}
}

// TestForbiddenText checks each refusal names what was wrong and what the
// person may still do.
func TestForbiddenText(t *testing.T) {
	t.Parallel()
	restricted := &bridge.Question{Answerers: []string{"slack:UANA"}, Owner: "slack:UJOB", Visibility: bridge.VisibilityRestricted}
	nobodyNamed := &bridge.Question{Visibility: bridge.VisibilityRestricted}
	for _, c := range []struct {
		name   string
		a      access
		action string
		q      *bridge.Question
		want   string
	}{
		{"operator answers a restricted question", access{Exists: true, Decline: true}, bridge.ActionAnswer, restricted,
			"You can't answer this question: it is restricted to slack:UANA, slack:UJOB and admins; you may decline it without seeing it."},
		{"operator approves a restricted approval", access{Exists: true, Decline: true}, bridge.ActionApprove, restricted,
			"You can't answer this question: it is restricted to slack:UANA, slack:UJOB and admins; you may decline it without seeing it."},
		{"restricted, nobody named", access{Exists: true, Decline: true}, bridge.ActionAnswer, nobodyNamed,
			"You can't answer this question: it is restricted to admins; you may decline it without seeing it."},
		{"reader answers", access{Exists: true}, bridge.ActionAnswer, restricted,
			"You can't answer this question: slack:UX is a reader: it may see that the question waits, but not answer or decline it."},
		{"reader declines", access{Exists: true}, bridge.ActionDecline, nil,
			"You can't answer this question: slack:UX is a reader: it may see that the question waits, but not answer or decline it."},
		{"stranger", access{}, bridge.ActionAnswer, nil,
			"You can't answer this question: slack:UX is not one of its answerers and has no operator, admin or owner role."},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := forbiddenText("slack:UX", c.a, c.action, c.q); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
