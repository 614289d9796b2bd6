package runtime

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/askbridge/askbridge/bridge"
	"github.com/askbridge/askbridge/policy"
)

// directory is the people in force: ASK_PEOPLE with the policy file's
// people: section (docs/contract.md, "People"). It resolves an identity
// into its person, so that roles, answerers, approvals, reminders and
// who answered count people, not accounts. The zero directory (or nil)
// links nobody: every identity is a person of its own.
type directory struct {
	// person: identity → person name.
	person map[string]string
	// ids: person name → identities, in the order listed.
	ids map[string][]string
}

// newDirectory joins the sets in order. The service refuses conflicting
// sets at start and on reload; should one still reach here, the earlier
// set (ASK_PEOPLE) keeps the person and the identity.
func newDirectory(sets ...bridge.People) *directory {
	d := &directory{person: map[string]string{}, ids: map[string][]string{}}
	for _, set := range sets {
		for _, name := range set.Names() {
			if _, taken := d.ids[name]; taken {
				continue
			}
			for _, id := range set[name] {
				if _, taken := d.person[id]; !taken {
					d.person[id] = name
					d.ids[name] = append(d.ids[name], id)
				}
			}
		}
	}
	return d
}

// personOf is the name of the person id belongs to: id is an identity or
// person:<name>. "" when it is neither linked nor a known person.
func (d *directory) personOf(id string) string {
	if d == nil {
		return ""
	}
	if name, ok := strings.CutPrefix(id, bridge.PersonPrefix); ok {
		if _, known := d.ids[name]; known {
			return name
		}
		return ""
	}
	return d.person[id]
}

// key is what counts as one person: person:<name> for a linked identity,
// the identity itself otherwise.
func (d *directory) key(id string) string {
	if p := d.personOf(id); p != "" {
		return bridge.PersonPrefix + p
	}
	return id
}

// same reports whether a and b are one person: the same identity, two
// identities linked to one person, or an identity and person:<its person>.
func (d *directory) same(a, b string) bool {
	return a != "" && b != "" && d.key(a) == d.key(b)
}

// identities are every identity of id's person, or id alone when it is
// not linked. person:<name> gives the person's identities.
func (d *directory) identities(id string) []string {
	if p := d.personOf(id); p != "" {
		return d.ids[p]
	}
	if strings.HasPrefix(id, bridge.PersonPrefix) {
		return nil
	}
	return []string{id}
}

// known reports whether person:<name> names a person in the directory.
func (d *directory) known(name string) bool {
	if d == nil {
		return false
	}
	_, ok := d.ids[name]
	return ok
}

// people holds the directory in force, rebuilt when the policy holder's
// policy changes (SIGHUP), and where each person was last active.
type people struct {
	env bridge.People
	pol *policy.Holder
	// on are the chat platforms switched on: a DM goes to an identity on
	// one of them when the person has one.
	on   map[string]bool
	dir  atomic.Pointer[peopleCache]
	mu   sync.Mutex
	last map[string]string // person name → identity last active
}

type peopleCache struct {
	from *policy.Policy
	dir  *directory
}

func newPeople(env bridge.People, pol *policy.Holder, platforms []bridge.Platform) *people {
	on := map[string]bool{}
	for _, p := range platforms {
		if p.On {
			on[p.Name] = true
		}
	}
	return &people{env: env, pol: pol, on: on, last: map[string]string{}}
}

// directory is the people in force now.
func (p *people) directory() *directory {
	if p == nil {
		return nil
	}
	pol := p.pol.Load()
	if c := p.dir.Load(); c != nil && c.from == pol {
		return c.dir
	}
	var fromFile bridge.People
	if pol != nil {
		fromFile = pol.People
	}
	d := newDirectory(p.env, fromFile)
	p.dir.Store(&peopleCache{from: pol, dir: d})
	return d
}

// seen records that id acted (answered, declined, clicked, asked for a
// list): a person's DMs go where they were last active.
func (p *people) seen(id string) {
	if p == nil || id == "" {
		return
	}
	name := p.directory().personOf(id)
	if name == "" {
		return
	}
	p.mu.Lock()
	p.last[name] = id
	p.mu.Unlock()
}

// preferred is the identity a DM to id's person goes to: where the person
// was last active, if a chat platform that is on can DM it there, else the
// first listed identity such a platform can DM; failing both (no platform
// of theirs is on), the same on Slack or Discord whether on or not, else
// the first listed. An identity linked to nobody is its own preference;
// person:<name> of an unknown person has none.
func (p *people) preferred(id string) string {
	d := p.directory()
	name := d.personOf(id)
	if name == "" {
		if strings.HasPrefix(id, bridge.PersonPrefix) {
			return ""
		}
		return id
	}
	p.mu.Lock()
	last := p.last[name]
	p.mu.Unlock()
	ids := d.ids[name]
	for _, can := range []func(string) bool{p.reachable, chat} {
		if last != "" && can(last) && slices.Contains(ids, last) {
			return last
		}
		if i := slices.IndexFunc(ids, can); i >= 0 {
			return ids[i]
		}
	}
	return ids[0]
}

// reachable: a chat platform that is on can send this identity a DM.
func (p *people) reachable(id string) bool {
	platform, _, _ := strings.Cut(id, ":")
	return chat(id) && p.on[platform]
}

// chat: a chat platform (Slack, Discord) can send this identity a DM.
func chat(id string) bool {
	return strings.HasPrefix(id, bridge.PlatformSlack+":") || strings.HasPrefix(id, bridge.PlatformDiscord+":")
}

// reach turns the identities (or person:<name>) a step names into whom it
// DMs: one identity per person, the preferred one, in the order first
// named, so that a person linked on Slack and Discord gets one DM.
func (p *people) reach(targets []string) []string {
	d := p.directory()
	seen := map[string]bool{}
	var out []string
	for _, t := range targets {
		k := d.key(t)
		if seen[k] {
			continue
		}
		seen[k] = true
		if id := p.preferred(t); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// checkAnswerers refuses a question whose answerers name a person nobody
// linked: person:<name> must be in ASK_PEOPLE or the policy's people:.
func (r *Runtime) checkAnswerers(q *bridge.Question) error {
	d := r.people.directory()
	for i, a := range q.Answerers {
		if name, ok := strings.CutPrefix(a, bridge.PersonPrefix); ok && !d.known(name) {
			return fmt.Errorf("answerers[%d]: %s is not a person: ASK_PEOPLE and the policy file's people: name %s", i, a, knownPeople(d))
		}
	}
	return nil
}

// knownPeople lists the persons for an error, or says there are none.
func knownPeople(d *directory) string {
	if d == nil || len(d.ids) == 0 {
		return "nobody"
	}
	names := make([]string, 0, len(d.ids))
	for n := range d.ids {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	return strings.Join(names, ", ")
}

// persons maps each of ids linked to a person to the person's name, for
// an event's Persons; nil when none is.
func (p *people) persons(ids []string) map[string]string {
	d := p.directory()
	var out map[string]string
	for _, id := range ids {
		if name := d.personOf(id); name != "" && !strings.HasPrefix(id, bridge.PersonPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = name
		}
	}
	return out
}
