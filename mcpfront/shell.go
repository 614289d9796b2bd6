package mcpfront

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// simpleCommands reads command as bash does and returns the words of each
// simple command in it, across ;, &&, ||, pipes, subshells, blocks, if,
// while, until, for and case. It refuses, with what it found, whatever
// could run or write something no word names: command substitution
// ($(…) and backticks), process substitution, parameter and arithmetic
// expansion, brace expansion, variable assignments, redirection other
// than between file descriptors (2>&1), here-documents, background jobs,
// function definitions and the other compound commands; and a command
// it cannot parse.
func simpleCommands(command string) ([][]string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, fmt.Errorf("not a command the shell parser reads: %w", err)
	}
	w := &cmdWalker{}
	w.stmts(f.Stmts)
	if w.err != nil {
		return nil, w.err
	}
	return w.cmds, nil
}

// cmdWalker collects the simple commands of a parsed command, stopping at
// the first construct it refuses.
type cmdWalker struct {
	cmds [][]string
	err  error
}

func (w *cmdWalker) refuse(what string) {
	if w.err == nil {
		w.err = fmt.Errorf("%s is never auto-allowed", what)
	}
}

func (w *cmdWalker) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		w.stmt(s)
	}
}

func (w *cmdWalker) stmt(s *syntax.Stmt) {
	if w.err != nil {
		return
	}
	if s.Background || s.Coprocess || s.Disown {
		w.refuse("a command in the background (&)")
		return
	}
	for _, r := range s.Redirs {
		if !fdDuplication(r) {
			w.refuse("redirection (" + r.Op.String() + ")")
			return
		}
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(c)
	case *syntax.BinaryCmd: // &&, ||, |, |&
		w.stmt(c.X)
		w.stmt(c.Y)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond)
			w.stmts(ic.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		w.forClause(c)
	case *syntax.CaseClause:
		w.caseClause(c)
	case nil:
		w.refuse("a redirection without a command")
	case *syntax.FuncDecl:
		w.refuse("a function definition")
	default:
		w.refuse(fmt.Sprintf("a compound command (%T)", c))
	}
}

func (w *cmdWalker) call(c *syntax.CallExpr) {
	if len(c.Assigns) > 0 {
		w.refuse("a variable assignment")
		return
	}
	words := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		s, err := literal(a)
		if err != nil {
			w.refuse(err.Error())
			return
		}
		words = append(words, s)
	}
	w.cmds = append(w.cmds, words)
}

func (w *cmdWalker) forClause(c *syntax.ForClause) {
	it, ok := c.Loop.(*syntax.WordIter)
	if !ok || c.Select {
		w.refuse("a C-style for or a select")
		return
	}
	for _, item := range it.Items {
		if _, err := literal(item); err != nil {
			w.refuse(err.Error())
			return
		}
	}
	w.stmts(c.Do)
}

func (w *cmdWalker) caseClause(c *syntax.CaseClause) {
	if _, err := literal(c.Word); err != nil {
		w.refuse(err.Error())
		return
	}
	for _, item := range c.Items {
		for _, p := range item.Patterns {
			if _, err := literal(p); err != nil {
				w.refuse(err.Error())
				return
			}
		}
		w.stmts(item.Stmts)
	}
}

// fdDuplication says whether r only joins two file descriptors (2>&1,
// >&2, <&0, 2>&-), which writes nowhere new.
func fdDuplication(r *syntax.Redirect) bool {
	if r.Op != syntax.DplOut && r.Op != syntax.DplIn {
		return false
	}
	if r.N != nil && !allDigits(r.N.Value) {
		return false
	}
	target, err := literal(r.Word)
	return err == nil && (allDigits(target) || target == "-")
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// literal is the value of a word made only of plain text and quotes, as
// the shell would pass it; any expansion in it is refused, naming it.
func literal(word *syntax.Word) (string, error) {
	if word == nil {
		return "", fmt.Errorf("a missing word")
	}
	// Brace expansions become BraceExp parts, refused below; a brace that
	// expands to nothing else ({} of find -exec) stays literal text.
	syntax.SplitBraces(word)
	var b strings.Builder
	for _, part := range word.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", fmt.Errorf("an ANSI-C quoted string ($'…')")
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", fmt.Errorf("a translated string ($\"…\")")
			}
			for _, in := range p.Parts {
				lit, ok := in.(*syntax.Lit)
				if !ok {
					return "", expansion(in)
				}
				b.WriteString(unescape(lit.Value, true))
			}
		default:
			return "", expansion(part)
		}
	}
	return b.String(), nil
}

// expansion names a word part that expands to what no rule can see.
func expansion(part syntax.WordPart) error {
	switch p := part.(type) {
	case *syntax.CmdSubst:
		if p.Backquotes {
			return fmt.Errorf("command substitution (`…`)")
		}
		return fmt.Errorf("command substitution ($(…))")
	case *syntax.ProcSubst:
		return fmt.Errorf("process substitution (%s…))", p.Op)
	case *syntax.ParamExp:
		return fmt.Errorf("parameter expansion ($…)")
	case *syntax.ArithmExp:
		return fmt.Errorf("arithmetic expansion ($((…)))")
	case *syntax.ExtGlob:
		return fmt.Errorf("an extended glob")
	case *syntax.BraceExp:
		return fmt.Errorf("brace expansion ({a,b})")
	}
	return fmt.Errorf("an expansion (%T)", part)
}

// unescape removes the backslashes the shell removes: before any
// character outside quotes, and before $ ` " \ and a newline inside
// double quotes. A backslash before a newline joins the lines.
func unescape(s string, inDouble bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		if inDouble && !strings.ContainsRune("$`\"\\\n", rune(next)) {
			b.WriteByte('\\')
			continue
		}
		i++
		if next != '\n' {
			b.WriteByte(next)
		}
	}
	return b.String()
}
