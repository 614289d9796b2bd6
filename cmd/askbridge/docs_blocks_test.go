package main

// The docs test reads the fenced blocks of README.md and docs/*.md and
// the marks before them (docs/design.md, "Testing": "The docs' examples").
// This file reads them; docs_session_test.go runs them.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// How a block is run, as its mark says.
const (
	modeUnmarked   = ""
	modeRun        = "run"        // <!-- docs-test -->: run, wait, compare
	modeRepo       = "repo"       // <!-- docs-test: repo -->: run in the repository's root
	modeService    = "service"    // <!-- docs-test: service -->: the service, started and left running
	modeBackground = "background" // <!-- docs-test: background T/J/Q -->: beside the next blocks
	modeSkip       = "skip"       // <!-- docs-test: skip (why) -->: not run, and why
)

// shellLangs are the info strings of the blocks that must be marked.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// docBlock is one fenced block of a Markdown file.
type docBlock struct {
	file string // relative to the repository's root
	line int    // of the opening fence, from 1
	lang string // the first word of the fence's info string
	mode string
	arg  string   // background: TENANT/JOB/QUESTION; skip: why
	bad  string   // what is wrong with the mark, when something is
	body []string // the lines between the fences, less the fence's indentation
}

func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// promptLine is a line that runs askbridge at a shell's prompt: "$ " or
// a user's "alice$ ".
var promptLine = regexp.MustCompile(`^[\w.@-]*\$ askbridge\b`)

// showsCommands reports whether the block shows askbridge run at a
// prompt, whatever its fence says (a ```text transcript too).
func (b docBlock) showsCommands() bool {
	for _, l := range b.body {
		if promptLine.MatchString(l) {
			return true
		}
	}
	return false
}

// markProblem says what is wrong with a block's mark, or "": a shell
// block, or any block that shows askbridge run at a prompt, must be
// marked; only a shell block runs, so another may only be skipped.
func markProblem(b docBlock) string {
	switch {
	case b.bad != "":
		return b.bad
	case (shellLangs[b.lang] || b.showsCommands()) && b.mode == modeUnmarked:
		return fmt.Sprintf("a ```%s block without a mark: put <!-- docs-test --> before it to run it, "+
			"or <!-- docs-test: skip (why) --> to say why it cannot run (docs/design.md, \"The docs' examples\")", b.lang)
	case b.mode != modeUnmarked && b.mode != modeSkip && !shellLangs[b.lang]:
		return fmt.Sprintf("a mark before a ```%s block; only shell blocks run", b.lang)
	case b.mode == modeSkip && !shellLangs[b.lang] && !b.showsCommands():
		return fmt.Sprintf("a skip mark before a ```%s block that shows no command", b.lang)
	}
	return ""
}

// runs reports whether the test runs the block in some way.
func (b docBlock) runs() bool { return b.mode != modeUnmarked && b.mode != modeSkip }

var (
	markLine     = regexp.MustCompile(`^<!--\s*docs-test\b(.*?)-->$`)
	fenceLine    = regexp.MustCompile("^( *)(```+|~~~+)\\s*(\\S*)")
	questionPath = regexp.MustCompile(`^[\w.-]+/[\w.-]+/[\w.-]+$`)
	exitLine     = regexp.MustCompile(`^\(exit (\d+)\)$`)
)

// parseMark reads what follows "docs-test" in a mark.
func parseMark(rest string) (mode, arg, bad string) {
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return modeRun, "", ""
	}
	rest, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return "", "", fmt.Sprintf("a mark is <!-- docs-test --> or <!-- docs-test: MODE ... -->, not %q", rest)
	}
	mode, arg, _ = strings.Cut(strings.TrimSpace(rest), " ")
	arg = strings.TrimSpace(arg)
	switch mode {
	case modeRepo, modeService:
		if arg != "" {
			return mode, arg, fmt.Sprintf("%s takes nothing after it, not %q", mode, arg)
		}
	case modeBackground:
		if !questionPath.MatchString(arg) {
			return mode, arg, "background names the question the next blocks wait for: background TENANT/JOB/QUESTION"
		}
	case modeSkip:
		if !strings.HasPrefix(arg, "(") || !strings.HasSuffix(arg, ")") || strings.TrimSpace(arg[1:len(arg)-1]) == "" {
			return mode, arg, "skip says why in brackets: <!-- docs-test: skip (needs Docker) -->"
		}
		arg = strings.TrimSpace(arg[1 : len(arg)-1])
	default:
		return mode, arg, fmt.Sprintf("unknown mode %q: run (no mode), repo, service, background or skip", mode)
	}
	return mode, arg, ""
}

// parseDoc reads the fenced blocks of a Markdown file and their marks: a
// mark is the HTML comment on the last non-blank line before the fence
// (invisible on GitHub). A mark before anything but a fence is a block
// whose bad says so.
func parseDoc(file, text string) []docBlock {
	lines := strings.Split(text, "\n")
	var blocks []docBlock
	var mark *docBlock // the mark waiting for its fence
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if m := markLine.FindStringSubmatch(line); m != nil {
			mode, arg, bad := parseMark(m[1])
			mark = &docBlock{file: file, line: i + 1, mode: mode, arg: arg, bad: bad}
			continue
		}
		f := fenceLine.FindStringSubmatch(lines[i])
		if f == nil {
			if line != "" && mark != nil {
				mark.bad = "the mark is not followed by a fenced block"
				blocks, mark = append(blocks, *mark), nil
			}
			continue
		}
		b := docBlock{file: file, line: i + 1, lang: f[3]}
		if mark != nil {
			b.mode, b.arg, b.bad = mark.mode, mark.arg, mark.bad
			mark = nil
		}
		indent, fence := len(f[1]), f[2]
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != fence; i++ {
			l := lines[i]
			l = l[min(indent, len(l)-len(strings.TrimLeft(l, " "))):]
			b.body = append(b.body, l)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// readDocs reads README.md and docs/*.md under root.
func readDocs(root string) ([]docBlock, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	var blocks []docBlock
	for _, path := range append([]string{filepath.Join(root, "README.md")}, files...) {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, path)
		blocks = append(blocks, parseDoc(rel, string(text))...)
	}
	return blocks, nil
}

// docCommand is one "$ " command of a block and what the docs show it
// print: every line up to the next "$ ", less trailing blank lines; a last
// line "(exit N)" is its exit status, else it must exit 0.
type docCommand struct {
	line int    // the file's line of the "$ "
	text string // the command; a line ending in \ goes on on the next
	want []string
	exit int
}

// parseCommands reads a block's "$ " commands; none means the block is a
// script that must exit 0.
func parseCommands(b docBlock) ([]docCommand, error) {
	if !hasPrompt(b.body) {
		return nil, nil
	}
	var cmds []docCommand
	for i := 0; i < len(b.body); i++ {
		line := b.body[i]
		text, isCmd := strings.CutPrefix(line, "$ ")
		switch {
		case isCmd:
			c := docCommand{line: b.line + 1 + i, text: text}
			for strings.HasSuffix(c.text, `\`) && i+1 < len(b.body) {
				i++
				c.text += "\n" + b.body[i]
			}
			cmds = append(cmds, c)
		case len(cmds) > 0:
			cmds[len(cmds)-1].want = append(cmds[len(cmds)-1].want, line)
		case strings.TrimSpace(line) != "":
			return nil, fmt.Errorf("%s: line %d comes before the first \"$ \" command: %q", b.where(), b.line+1+i, line)
		}
	}
	for i := range cmds {
		c := &cmds[i]
		c.want = trimLines(c.want)
		if n := len(c.want); n > 0 {
			if m := exitLine.FindStringSubmatch(c.want[n-1]); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
				c.want = trimLines(c.want[:n-1])
			}
		}
	}
	return cmds, nil
}

func hasPrompt(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "$ ") {
			return true
		}
	}
	return false
}

// trimLines is lines without trailing spaces, and without the blank lines
// at their end: neither shows in Markdown or on a terminal.
func trimLines(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.TrimRight(l, " \t\r"))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// lineMatches reports whether a printed line is the line the docs show,
// where "..." stands for any text within the line (an id, a time, a user
// name): the rest must be there, in that order, and nothing else.
func lineMatches(want, got string) bool {
	parts := strings.Split(want, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

// outputDiff says how got differs from the lines the docs show, or ""
// when they match.
func outputDiff(want, got []string) string {
	got = trimLines(got)
	for i := 0; i < max(len(want), len(got)); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("line %d: the docs show %q; the command printed no more", i+1, want[i])
		case i >= len(want):
			return fmt.Sprintf("line %d: the command printed %q, which the docs do not show", i+1, got[i])
		case !lineMatches(want[i], got[i]):
			return fmt.Sprintf("line %d: the docs show %q; the command printed %q", i+1, want[i], got[i])
		}
	}
	return ""
}
