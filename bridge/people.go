package bridge

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// PersonPrefix marks a person among a question's answerers: person:kevin
// names every identity ASK_PEOPLE or the policy file links to kevin
// (docs/contract.md, "People").
const PersonPrefix = "person:"

// People links identities into persons: a person's name to their
// identities, in the order listed (the first is where a DM goes when the
// person was not seen anywhere yet).
type People map[string][]string

// CheckPersonName checks a person's name: 1 to 64 letters, digits, '-'
// or '_', as tenant names are.
func CheckPersonName(name string) error {
	if !ValidToken(name) {
		return fmt.Errorf("%q is not a person's name: 1 to 64 letters, digits, '-' or '_'", name)
	}
	return nil
}

// CheckAnswerer checks one entry of a question's answerers: an identity,
// or person:<name>.
func CheckAnswerer(a string) error {
	if name, ok := strings.CutPrefix(a, PersonPrefix); ok {
		if CheckPersonName(name) != nil {
			return fmt.Errorf("%q must be person:<name>, the name 1 to 64 letters, digits, '-' or '_'", a)
		}
		return nil
	}
	if CheckIdentity(a) != nil {
		return fmt.Errorf("%q must be slack:<user>, discord:<user>, console:<user>, cli:<user> or person:<name>", a)
	}
	return nil
}

// ParsePeople reads ASK_PEOPLE:
// kevin=slack:U0KEV|discord:333333333333333333|console:kevin,ana=slack:U0ANA.
// Errors name the entry in the user's words.
func ParsePeople(s string) (People, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	p := People{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, list, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || strings.TrimSpace(list) == "" {
			return nil, fmt.Errorf("%q must be name=identity|identity, such as kevin=slack:U0KEV|discord:333333333333333333", entry)
		}
		if err := CheckPersonName(name); err != nil {
			return nil, err
		}
		if _, dup := p[name]; dup {
			return nil, fmt.Errorf("%s is given twice; list all of a person's identities in one entry, separated by |", name)
		}
		var ids []string
		for id := range strings.SplitSeq(list, "|") {
			ids = append(ids, strings.TrimSpace(id))
		}
		p[name] = ids
	}
	return p, p.Check()
}

// Check refuses an identity that is not one, or that two persons (or one
// person twice) claim: an identity is one person's.
func (p People) Check() error {
	owner := map[string]string{}
	for _, name := range p.Names() {
		if err := CheckPersonName(name); err != nil {
			return err
		}
		if len(p[name]) == 0 {
			return fmt.Errorf("%s has no identities; list them, such as slack:U0KEV", name)
		}
		for _, id := range p[name] {
			if err := CheckIdentity(id); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			switch first, ok := owner[id]; {
			case ok && first == name:
				return fmt.Errorf("%s: %s is listed twice", name, id)
			case ok:
				return fmt.Errorf("%s is linked to both %s and %s; an identity belongs to one person", id, first, name)
			}
			owner[id] = name
		}
	}
	return nil
}

// Names are the persons' names, sorted.
func (p People) Names() []string {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MergePeople joins ASK_PEOPLE and the policy file's people: into one
// list. A person named in both, or an identity linked in both, is
// refused: the operator keeps one person in one place.
func MergePeople(sets ...People) (People, error) {
	out := People{}
	for _, set := range sets {
		for name, ids := range set {
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("person %s is given both in ASK_PEOPLE and in the policy file's people:; keep one", name)
			}
			out[name] = slices.Clone(ids)
		}
	}
	return out, out.Check()
}
