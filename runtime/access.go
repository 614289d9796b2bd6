package runtime

import (
	"slices"
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// Role names, as configured (ASK_OWNERS, ...) or reported by an adapter.
const (
	RoleOwner    = "owner"
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleReader   = "reader"
)

// Roles are the configured role lists. An entry is an identity
// ("slack:U0123"), holding the role in every tenant, or a tenant-scoped
// identity ("acme/slack:U0123"), holding it in that tenant only.
type Roles struct {
	Owners    []string
	Admins    []string
	Operators []string
	Readers   []string
	// dir resolves identities into people (set by New): a role given to
	// any of a person's identities is the person's.
	dir func() *directory
}

// people is the directory in force; nil links nobody.
func (r Roles) people() *directory {
	if r.dir == nil {
		return nil
	}
	return r.dir()
}

// has reports whether id holds role in tenant, from the configuration or
// from the roles its adapter established (a mapped Discord role, say): id
// holds a role given to any identity of its person.
func (r Roles) has(tenant, id, role string, extra []string) bool {
	if slices.Contains(extra, role) {
		return true
	}
	var list []string
	switch role {
	case RoleOwner:
		list = r.Owners
	case RoleAdmin:
		list = r.Admins
	case RoleOperator:
		list = r.Operators
	case RoleReader:
		list = r.Readers
	}
	held := func(one string) bool {
		return slices.Contains(list, one) || (tenant != "" && slices.Contains(list, tenant+"/"+one))
	}
	if d := r.people(); d.personOf(id) != "" {
		return slices.ContainsFunc(d.identities(id), held)
	}
	return held(id)
}

// held lists the roles id holds, as its person, from the configuration
// and extra (the roles its adapter established): "operator" for a role in
// every tenant, "acme/operator" for one in tenant acme. Sorted; none for
// an identity that holds no role (it sees only the questions naming it).
func (r Roles) held(id string, extra []string) []string {
	ids := []string{id}
	if d := r.people(); d.personOf(id) != "" {
		ids = d.identities(id)
	}
	var out []string
	for _, role := range extra {
		if slices.Contains([]string{RoleOwner, RoleAdmin, RoleOperator, RoleReader}, role) {
			out = append(out, role)
		}
	}
	for role, list := range map[string][]string{RoleOwner: r.Owners, RoleAdmin: r.Admins, RoleOperator: r.Operators, RoleReader: r.Readers} {
		for _, e := range list {
			t, one, scoped := strings.Cut(e, "/")
			if !scoped {
				t, one = "", e
			}
			if slices.Contains(ids, one) {
				out = append(out, strings.TrimPrefix(t+"/"+role, "/"))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// answersFor reports whether id is q's owner or one of its answerers, as a
// person: another identity of the same person, or person:<name>, counts.
func (r Roles) answersFor(id string, q *bridge.Question) bool {
	d := r.people()
	return d.same(q.Owner, id) || slices.ContainsFunc(q.Answerers, func(a string) bool { return d.same(a, id) })
}

// inTenant lists the identities of a role list that hold it in tenant.
func inTenant(list []string, tenant string) []string {
	var out []string
	for _, e := range list {
		t, id, scoped := strings.Cut(e, "/")
		switch {
		case !scoped:
			out = append(out, e)
		case t == tenant:
			out = append(out, id)
		}
	}
	return out
}

// access is what one identity may do with one question.
type access struct {
	// Exists: may know that the question waits.
	Exists bool
	// See: may read what it asks.
	See     bool
	Answer  bool
	Decline bool
	// Admin: owner or admin, who may also cancel.
	Admin bool
}

// accessFor applies the rule of docs/contract.md "Who may do what": owners,
// admins, operators, the question's owner and its answerers answer it (its
// answerers add people, they do not take it from the operators); a
// restricted question's content is for its answerers, its owner, admins and
// owners only, so an operator may only decline it, unseen; readers learn
// only that a question waits; everyone else learns nothing. A nil question
// (a cancel naming none) is weighed as one of tenant visibility.
func (r Roles) accessFor(tenant, id string, extra []string, q *bridge.Question) access {
	switch {
	case id == "":
		return access{}
	case r.has(tenant, id, RoleOwner, extra) || r.has(tenant, id, RoleAdmin, extra):
		return access{Exists: true, See: true, Answer: true, Decline: true, Admin: true}
	case q != nil && r.answersFor(id, q):
		return access{Exists: true, See: true, Answer: true, Decline: true}
	case r.has(tenant, id, RoleOperator, extra):
		if q != nil && q.Restricted() {
			return access{Exists: true, Decline: true}
		}
		return access{Exists: true, See: true, Answer: true, Decline: true}
	case r.has(tenant, id, RoleReader, extra):
		return access{Exists: true}
	}
	return access{}
}

// restrictedTo says, in a person's words, whom a restricted question's
// content is for.
func restrictedTo(q *bridge.Question) string {
	var people []string
	if q != nil {
		people = q.WaitsFor()
	}
	return bridge.RestrictedReaders(people, func(id string) string { return id })
}

// forbiddenText explains a refused answer in words the clicker can act on:
// what they lack, and what they may still do.
func forbiddenText(id string, a access, action string, q *bridge.Question) string {
	const prefix = "You can't answer this question: "
	switch {
	case a.Decline && action != bridge.ActionDecline:
		return prefix + "it is restricted to " + restrictedTo(q) + "; you may decline it without seeing it."
	case a.Exists:
		return prefix + id + " is a reader: it may see that the question waits, but not answer or decline it."
	}
	return prefix + id + " is not one of its answerers and has no operator, admin or owner role."
}
