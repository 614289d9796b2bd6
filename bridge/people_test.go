package bridge

import (
	"slices"
	"testing"
)

func TestParsePeople(t *testing.T) {
	p, err := ParsePeople(" kevin=slack:U0KEV|discord:333333333333333333|console:kevin, ana=slack:U0ANA ,")
	if err != nil {
		t.Fatal(err)
	}
	if got := p["kevin"]; !slices.Equal(got, []string{"slack:U0KEV", "discord:333333333333333333", "console:kevin"}) {
		t.Errorf("kevin = %v", got)
	}
	if got := p["ana"]; !slices.Equal(got, []string{"slack:U0ANA"}) {
		t.Errorf("ana = %v", got)
	}
	for in, want := range map[string]string{
		"kevin":                           `"kevin" must be name=identity|identity, such as kevin=slack:U0KEV|discord:333333333333333333`,
		"kevin=":                          `"kevin=" must be name=identity|identity, such as kevin=slack:U0KEV|discord:333333333333333333`,
		"ke vin=slack:U1":                 `"ke vin" is not a person's name: 1 to 64 letters, digits, '-' or '_'`,
		"kevin=slack:U1|U2":               `kevin: "U2" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`,
		"kevin=slack:U1,kevin=discord:1":  `kevin is given twice; list all of a person's identities in one entry, separated by |`,
		"ana=slack:U1,kevin=slack:U1":     `slack:U1 is linked to both ana and kevin; an identity belongs to one person`,
		"kevin=slack:U1|slack:U1":         `kevin: slack:U1 is listed twice`,
		"kevin=slack:U1|discord:2|slack:": `kevin: "slack:" must be slack:<user>, discord:<user>, console:<user> or cli:<user>`,
	} {
		if _, err := ParsePeople(in); err == nil || err.Error() != want {
			t.Errorf("ParsePeople(%q) = %v, want %s", in, err, want)
		}
	}
}

func TestMergePeople(t *testing.T) {
	env := People{"kevin": {"slack:U0KEV"}}
	if _, err := MergePeople(env, People{"kevin": {"discord:3"}}); err == nil ||
		err.Error() != "person kevin is given both in ASK_PEOPLE and in the policy file's people:; keep one" {
		t.Errorf("same person twice: %v", err)
	}
	if _, err := MergePeople(env, People{"kev": {"slack:U0KEV"}}); err == nil ||
		err.Error() != "slack:U0KEV is linked to both kev and kevin; an identity belongs to one person" {
		t.Errorf("same identity twice: %v", err)
	}
	got, err := MergePeople(env, People{"ana": {"slack:U0ANA"}})
	if err != nil || len(got) != 2 {
		t.Errorf("merge = %v, %v", got, err)
	}
}
