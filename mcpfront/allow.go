package mcpfront

import (
	"fmt"
	"slices"
	"strings"

	"github.com/askbridge/askbridge/bridge"
)

// The auto-allow list of approve_tool_use (docs/mcp.md, "approve_tool_use"):
// rules in the form coding agents use for their own permissions. A rule
// for a command (the input's "command", as Claude Code's Bash tool has
// it) is matched against the command read by a shell parser, never
// against its text: every simple command in it must be covered by a rule,
// and anything that could run or write what no rule names (command
// substitution, process substitution, expansions, redirection to a file)
// is never auto-allowed. shell.go reads the commands.

// matchKind is how a rule's input is matched.
type matchKind int

const (
	// matchAny takes every use of the tool: "Read", "Bash(*)".
	matchAny matchKind = iota
	// matchExact takes exactly this input: "Bash(npm run build)".
	matchExact
	// matchWords takes these words and then any: "Bash(git diff:*)",
	// "Bash(git diff *)". For an input that is not a command it is a
	// prefix of the text, as matchPrefix.
	matchWords
	// matchPrefix takes text that starts so: "Bash(git diff*)" (also
	// git difftool), "WebFetch(https://go.dev/*)".
	matchPrefix
)

// allowRule is one entry of the auto-allow list.
type allowRule struct {
	tool string
	// spec is what the parentheses hold, without the trailing * or :*.
	spec  string
	match matchKind
	// words are spec read as a shell command's words, for matching a
	// command; nil when spec is not plain words (then it matches no
	// command).
	words []string
}

// commandTools are the tools whose rules must be plain words: their input
// is a shell command.
var commandTools = []string{"Bash"}

func parseAllowRule(s string) (allowRule, error) {
	s = strings.TrimSpace(s)
	r := allowRule{tool: s, match: matchAny}
	bad := func(why string) error {
		return fmt.Errorf("auto_allow: %q %s", s, why)
	}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return r, bad("must be a tool (Read) or a tool with its input (Bash(git status), Bash(git diff:*))")
		}
		r.tool = s[:i]
		r.spec, r.match = splitSpec(strings.TrimSpace(s[i+1 : len(s)-1]))
	}
	if err := bridge.CheckTool("auto_allow", r.tool); err != nil {
		return r, err
	}
	if r.match == matchAny {
		return r, nil
	}
	words, err := specWords(r.spec)
	if err != nil && slices.Contains(commandTools, r.tool) {
		return r, bad("must be a command of plain words, with * or :* only at the end: " + err.Error())
	}
	r.words = words
	return r, nil
}

// splitSpec reads the kind of match from how a rule's input ends.
func splitSpec(spec string) (string, matchKind) {
	k := matchExact
	switch {
	case strings.HasSuffix(spec, ":*"):
		spec, k = strings.TrimSuffix(spec, ":*"), matchWords
	case spec == "*" || strings.HasSuffix(spec, " *"):
		spec, k = strings.TrimSuffix(spec, "*"), matchWords
	case strings.HasSuffix(spec, "*"):
		spec, k = strings.TrimSuffix(spec, "*"), matchPrefix
	}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return "", matchAny
	}
	return spec, k
}

// specWords are a rule's command as words; a * inside it is refused, as
// askbridge has no wildcard within a command ("Bash(git * main)").
func specWords(spec string) ([]string, error) {
	cmds, err := simpleCommands(spec)
	if err != nil {
		return nil, err
	}
	if len(cmds) != 1 {
		return nil, fmt.Errorf("it holds %d commands", len(cmds))
	}
	for _, w := range cmds[0] {
		if strings.Contains(w, "*") {
			return nil, fmt.Errorf("a * may only end the rule: askbridge has no wildcard inside a command")
		}
	}
	return cmds[0], nil
}

// covers says whether the rule takes one simple command, given as its
// words.
func (r allowRule) covers(words []string) bool {
	if r.match == matchAny {
		return true
	}
	if len(r.words) == 0 {
		return false
	}
	switch r.match {
	case matchExact:
		return slices.Equal(words, r.words)
	case matchWords:
		return len(words) >= len(r.words) && slices.Equal(words[:len(r.words)], r.words)
	case matchPrefix:
		return strings.HasPrefix(strings.Join(words, " "), strings.Join(r.words, " "))
	}
	return false
}

// takesText says whether the rule takes an input that is not a command
// (a file path, a URL): the same text, or text that starts with it.
func (r allowRule) takesText(v string) bool {
	switch r.match {
	case matchAny:
		return true
	case matchExact:
		return v == r.spec
	}
	return strings.HasPrefix(v, r.spec)
}

// mainInputs are the keys that carry what a tool acts on, in the order
// they are looked for.
var mainInputs = []string{"command", "file_path", "notebook_path", "path", "url", "pattern", "query"}

// autoAllows says whether the rules take this tool use; when they do not,
// why says why, for the log.
func autoAllows(rules []allowRule, tool string, input map[string]any) (ok bool, why string) {
	var mine []allowRule
	for _, r := range rules {
		if r.tool != tool {
			continue
		}
		if r.match == matchAny {
			return true, ""
		}
		mine = append(mine, r)
	}
	if len(mine) == 0 {
		return false, "no rule for " + tool
	}
	for _, k := range mainInputs {
		v, found := input[k].(string)
		if !found {
			continue
		}
		v = strings.TrimSpace(v)
		if k == "command" {
			return commandCovered(mine, v)
		}
		if slices.ContainsFunc(mine, func(r allowRule) bool { return r.takesText(v) }) {
			return true, ""
		}
		return false, "no rule takes its " + k
	}
	return false, "its input has none of " + strings.Join(mainInputs, ", ")
}

// commandCovered says whether every simple command of command is covered
// by a rule.
func commandCovered(rules []allowRule, command string) (bool, string) {
	cmds, err := simpleCommands(command)
	if err != nil {
		return false, err.Error()
	}
	if len(cmds) == 0 {
		return false, "no command"
	}
	for _, words := range cmds {
		if !slices.ContainsFunc(rules, func(r allowRule) bool { return r.covers(words) }) {
			return false, fmt.Sprintf("no rule covers %q", strings.Join(words, " "))
		}
	}
	return true, ""
}
