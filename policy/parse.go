package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/askbridge/askbridge/bridge"
)

// MaxFileSize bounds a policy file: a policy is a few lines per action,
// and a file this large is a mistake, not a policy.
const MaxFileSize = 1 << 20

// Roles are the roles an approvers list may name, as the runtime's role
// lists call them (runtime.RoleOwner, RoleAdmin, RoleOperator). Readers
// may not decide anything, so they are not among them.
var Roles = []string{"owner", "admin", "operator"}

// Error is a policy file's first problem: where it is and what is wrong,
// printed on one line as file:line: path: problem.
type Error struct {
	File string
	// Line is 1-based; 0 when the problem is the file itself (unreadable,
	// too large).
	Line int
	// Path names the key the problem is in, such as
	// tenants.acme.actions.refund.required_approvals; empty for the file's
	// syntax.
	Path    string
	Problem string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Load reads and checks the policy file at path; errors name the path.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Problem: "cannot read: " + unwrapPath(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Problem: "cannot read: " + unwrapPath(err)}
	}
	return Parse(path, data)
}

// unwrapPath drops the path an *os.PathError repeats: the error names the
// file already.
func unwrapPath(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse checks a policy file's text and returns its policy, or an *Error
// naming name, the line and the first problem (docs/contract.md, "The
// policy file"). It is strict: an unknown key, a value of the wrong kind,
// a second document, an alias or a repeated key is refused, so that a typo
// never silently gates less than the operator meant.
func Parse(name string, data []byte) (*Policy, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Problem: fmt.Sprintf("the file is larger than %d bytes; a policy file is a few lines per action", MaxFileSize)}
	}
	if line, problem := checkText(data); problem != "" {
		return nil, &Error{File: name, Line: line, Problem: problem}
	}
	w := &walker{name: name}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, w.fail(1, "", "the file is empty; a policy file holds tenants: (write tenants: {} for none)")
		}
		return nil, w.syntax(err, data)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, w.syntax(err, data)
	default:
		return nil, w.fail(next.Line, "", "a second YAML document (after ---); a policy file is one document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, w.fail(max(root.Line, 1), "", "the file is empty; a policy file holds tenants: (write tenants: {} for none)")
	}
	return w.policy(root)
}

// checkText finds what the YAML library would refuse without naming a
// line: bytes that are not UTF-8, and control characters.
func checkText(data []byte) (int, string) {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return line, "the file is not UTF-8 text"
		case r == '\n':
			line++
		case r == '\t' || r == '\r' || r == 0x85 || (r == 0xFEFF && i == 0):
		case r < 0x20 || r == 0x7F || (r >= 0x80 && r < 0xA0) || r == 0xFEFF || r == 0xFFFE || r == 0xFFFF:
			return line, fmt.Sprintf("control character %U; a policy file is text", r)
		}
		i += size
	}
	return 0, ""
}

// yamlLine is the line the YAML library's message names.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// aliasName finds an alias the library could not resolve.
var aliasName = regexp.MustCompile(`anchor '([^']*)'`)

// syntax turns the YAML library's error into one line naming the file and
// the line.
func (w *walker) syntax(err error, data []byte) error {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		// The library names no line for a bad alias: find it.
		if m := aliasName.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				line = 1 + bytes.Count(data[:i], []byte("\n"))
			}
		}
	}
	return w.fail(line, "", "not valid YAML: %s", msg)
}

// walker checks a parsed file against the policy's shape, key by key.
type walker struct{ name string }

func (w *walker) fail(line int, path, format string, args ...any) error {
	return &Error{File: w.name, Line: line, Path: path, Problem: fmt.Sprintf(format, args...)}
}

// entries calls fn for each key and value of the mapping n, in the file's
// order, refusing a node that is not a mapping (want says what it should
// be), a key that is not a name, a repeated key and aliases.
func (w *walker) entries(n *yaml.Node, path, want string, fn func(key string, k, v *yaml.Node) error) error {
	if n.Kind == yaml.AliasNode {
		return w.alias(n, path)
	}
	if n.Kind != yaml.MappingNode {
		return w.fail(n.Line, path, "must be %s, not %s", want, describe(n))
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode {
			return w.alias(k, path)
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
			return w.fail(k.Line, path, "a key must be a name, not %s", describe(k))
		}
		if first, ok := seen[k.Value]; ok {
			return w.fail(k.Line, path, "%q is given twice (first at line %d)", k.Value, first)
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.AliasNode {
			return w.alias(v, join(path, k.Value))
		}
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) alias(n *yaml.Node, path string) error {
	return w.fail(n.Line, path, "aliases (*%s) are not allowed in a policy file: write each rule out", n.Value)
}

func (w *walker) policy(root *yaml.Node) (*Policy, error) {
	p := &Policy{}
	found := false
	err := w.entries(root, "", "a mapping with tenants:", func(key string, k, v *yaml.Node) error {
		switch key {
		case "tenants":
			found = true
			return w.tenants(p, v)
		case "mcp":
			var err error
			p.MCP, err = w.mcp(v)
			return err
		case "people":
			var err error
			p.People, err = w.people(v)
			return err
		}
		return w.fail(k.Line, "", "unknown key %q; a policy file holds only tenants:, mcp: and people:", key)
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, w.fail(root.Line, "", "tenants: is missing (write tenants: {} for none)")
	}
	return p, nil
}

func (w *walker) tenants(p *Policy, n *yaml.Node) error {
	p.Tenants = map[string]Tenant{}
	return w.entries(n, "tenants", "a mapping of tenant names", func(name string, k, v *yaml.Node) error {
		if !bridge.ValidToken(name) {
			return w.fail(k.Line, "tenants", "%q is not a tenant name: 1 to 64 letters, digits, '-' or '_'", name)
		}
		path := "tenants." + name
		t := Tenant{}
		found := false
		err := w.entries(v, path, "a mapping with actions:", func(key string, k, v *yaml.Node) error {
			if key != "actions" {
				return w.fail(k.Line, path, "unknown key %q; a tenant holds only actions:", key)
			}
			found = true
			var err error
			t.Actions, err = w.actions(v, path+".actions")
			return err
		})
		if err != nil {
			return err
		}
		if !found {
			return w.fail(v.Line, path, "actions: is missing")
		}
		p.Tenants[name] = t
		return nil
	})
}

func (w *walker) actions(n *yaml.Node, path string) (map[string]Rule, error) {
	actions := map[string]Rule{}
	err := w.entries(n, path, "a mapping of action names", func(name string, k, v *yaml.Node) error {
		// An action is the tool the gate is asked about, named as a
		// question's blocked_tools name it.
		if err := bridge.CheckTool(path, name); err != nil {
			return w.fail(k.Line, "", "%s", err)
		}
		r, err := w.rule(v, path+"."+name)
		if err != nil {
			return err
		}
		actions[name] = r
		return nil
	})
	return actions, err
}

// ruleKeys are a rule's keys, in the order an error lists them.
const ruleKeys = "require_approval, required_approvals, forbid_self_approval, max_amount, currency, approvers"

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

func (w *walker) rule(n *yaml.Node, path string) (Rule, error) {
	var r Rule
	var currencyLine int
	err := w.entries(n, path, "a mapping such as {require_approval: true}", func(key string, k, v *yaml.Node) error {
		at := join(path, key)
		var err error
		switch key {
		case "require_approval":
			r.RequireApproval, err = w.boolean(v, at)
		case "forbid_self_approval":
			r.ForbidSelfApproval, err = w.boolean(v, at)
		case "required_approvals":
			r.RequiredApprovals, err = w.approvals(v, at)
		case "max_amount":
			r.MaxAmount, err = w.amount(v, at)
		case "currency":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || !currencyPattern.MatchString(v.Value) {
				return w.fail(v.Line, at, "must be a 3-letter ISO 4217 code in capitals such as USD, not %s", describe(v))
			}
			r.Currency, currencyLine = v.Value, v.Line
		case "approvers":
			r.Approvers, err = w.approvers(v, at)
		default:
			return w.fail(k.Line, path, "unknown key %q; a rule's keys are %s", key, ruleKeys)
		}
		return err
	})
	if err != nil {
		return Rule{}, err
	}
	switch {
	case r.MaxAmount != nil && r.Currency == "":
		return Rule{}, w.fail(n.Line, path, "max_amount needs currency, a 3-letter ISO 4217 code such as USD")
	case r.MaxAmount == nil && r.Currency != "":
		return Rule{}, w.fail(currencyLine, join(path, "currency"), "is the currency of max_amount, which is not set")
	}
	return r, nil
}

func (w *walker) boolean(n *yaml.Node, path string) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, w.fail(n.Line, path, "must be true or false, not %s", describe(n))
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, w.fail(n.Line, path, "must be true or false, not %s", describe(n))
	}
	return b, nil
}

func (w *walker) approvals(n *yaml.Node, path string) (int, error) {
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil || v < 1 {
		return 0, w.fail(n.Line, path, "must be a whole number of 1 or more, not %s", describe(n))
	}
	return v, nil
}

func (w *walker) amount(n *yaml.Node, path string) (*float64, error) {
	var v float64
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&v) != nil {
		return nil, w.fail(n.Line, path, "must be a number of 0 or more, not %s", describe(n))
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, w.fail(n.Line, path, "must be a finite number of 0 or more, not %s", describe(n))
	}
	if v < 0 {
		return nil, w.fail(n.Line, path, "must be a number of 0 or more, not %s", describe(n))
	}
	return &v, nil
}

func (w *walker) approvers(n *yaml.Node, path string) ([]string, error) {
	if n.Kind == yaml.AliasNode {
		return nil, w.alias(n, path)
	}
	if n.Kind != yaml.SequenceNode {
		return nil, w.fail(n.Line, path, "must be a list of roles (%s) or identities (such as slack:U0FIN), not %s",
			strings.Join(Roles, ", "), describe(n))
	}
	if len(n.Content) == 0 {
		return nil, w.fail(n.Line, path, "must name at least one role or identity; leave it out to let whoever may answer approve")
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		at := fmt.Sprintf("%s[%d]", path, i)
		if item.Kind == yaml.AliasNode {
			return nil, w.alias(item, at)
		}
		if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" || !approver(item.Value) {
			return nil, w.fail(item.Line, at, "%s is neither a role (%s) nor an identity such as slack:U0FIN",
				describe(item), strings.Join(Roles, ", "))
		}
		out = append(out, item.Value)
	}
	return out, nil
}

// people reads the people: section, a mapping of person names to lists
// of identities (docs/contract.md, "People"): an identity belongs to one
// person.
func (w *walker) people(n *yaml.Node) (bridge.People, error) {
	p := bridge.People{}
	owner := map[string]string{}
	err := w.entries(n, "people", "a mapping of person names to identities, such as {kevin: [slack:U0KEV]}", func(name string, k, v *yaml.Node) error {
		if err := bridge.CheckPersonName(name); err != nil {
			return w.fail(k.Line, "people", "%s", err)
		}
		path := "people." + name
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return w.fail(v.Line, path, "must be a list of identities such as [slack:U0KEV, discord:333333333333333333], not %s", describe(v))
		}
		for i, item := range v.Content {
			at := fmt.Sprintf("%s[%d]", path, i)
			if item.Kind == yaml.AliasNode {
				return w.alias(item, at)
			}
			if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" || bridge.CheckIdentity(item.Value) != nil {
				return w.fail(item.Line, at, "%s is not an identity such as slack:U0KEV, discord:333333333333333333, console:kevin or cli:kevin", describe(item))
			}
			switch first, ok := owner[item.Value]; {
			case ok && first == name:
				return w.fail(item.Line, at, "%s is listed twice", item.Value)
			case ok:
				return w.fail(item.Line, at, "%s is linked to %s already; an identity belongs to one person", item.Value, first)
			}
			owner[item.Value] = name
			p[name] = append(p[name], item.Value)
		}
		return nil
	})
	if len(p) == 0 {
		// people: {} links nobody, as no people: does.
		return nil, err
	}
	return p, err
}

// approver reports whether s is a role an approvers list may name, or an
// identity.
func approver(s string) bool {
	for _, r := range Roles {
		if s == r {
			return true
		}
	}
	return bridge.CheckIdentity(s) == nil
}

// describe names what a node holds, for "must be X, not Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.ShortTag() == "!!null" && (n.Value == "" || n.Value == "~" || strings.EqualFold(n.Value, "null")) {
		return "nothing"
	}
	return strconv.Quote(bridge.Truncate(n.Value, 40))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// mcp reads the mcp: section: auto_allow, a list of tools or tools with
// their input in parentheses.
func (w *walker) mcp(n *yaml.Node) (*MCP, error) {
	m := &MCP{}
	err := w.entries(n, "mcp", "a mapping with auto_allow:", func(key string, k, v *yaml.Node) error {
		if key != "auto_allow" {
			return w.fail(k.Line, "mcp", "unknown key %q; mcp: holds only auto_allow:", key)
		}
		if v.Kind != yaml.SequenceNode {
			return w.fail(v.Line, "mcp.auto_allow", "must be a list of tools such as Read or Bash(git status), not %s", describe(v))
		}
		for i, item := range v.Content {
			at := fmt.Sprintf("mcp.auto_allow[%d]", i)
			if item.Kind == yaml.AliasNode {
				return w.alias(item, at)
			}
			tool, _, _ := strings.Cut(item.Value, "(")
			if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" || bridge.CheckTool(at, tool) != nil ||
				(strings.Contains(item.Value, "(") && !strings.HasSuffix(item.Value, ")")) {
				return w.fail(item.Line, at, "%s is not a tool (Read) or a tool with its input (Bash(git status))", describe(item))
			}
			m.AutoAllow = append(m.AutoAllow, item.Value)
		}
		return nil
	})
	return m, err
}
