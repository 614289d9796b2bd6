package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The docs test's own parts: a mark, a block's commands, and the
// comparison, which must fail when the docs show what a command does not
// print.

func TestDocsMarks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ rest, mode, arg, bad string }{
		{"", modeRun, "", ""},
		{": service", modeService, "", ""},
		{": repo", modeRepo, "", ""},
		{": background acme/job-1/q-colour", modeBackground, "acme/job-1/q-colour", ""},
		{": skip (needs Docker)", modeSkip, "needs Docker", ""},
		{": skip", modeSkip, "", "skip says why"},
		{": skip ()", modeSkip, "()", "skip says why"},
		{": background q-colour", modeBackground, "q-colour", "background names the question"},
		{": service now", modeService, "now", "service takes nothing"},
		{": later", "later", "", "unknown mode"},
		{" please", "", "", "a mark is"},
	} {
		mode, arg, bad := parseMark(c.rest)
		if mode != c.mode || (c.bad == "" && arg != c.arg) || !strings.HasPrefix(bad, c.bad) || (c.bad != "") != (bad != "") {
			t.Errorf("parseMark(%q) = %q, %q, %q; want %q, %q, a problem starting %q", c.rest, mode, arg, bad, c.mode, c.arg, c.bad)
		}
	}
}

func TestDocsParse(t *testing.T) {
	t.Parallel()
	doc := "# T\n\n<!-- docs-test -->\n```sh\n$ askbridge list --tenant acme \\\n    --job job-1\nTENANT  JOB\n\n$ askbridge gate job-9 x\nrefused\n(exit 1)\n```\n\n" +
		"1. Step:\n\n   <!-- docs-test: skip (needs Discord) -->\n   ```sh\n   curl -s x\n   ```\n\n<!-- docs-test -->\nNo block.\n\n```json\n{}\n```\n"
	blocks := parseDoc("x.md", doc)
	if len(blocks) != 4 {
		t.Fatalf("%d blocks: %+v", len(blocks), blocks)
	}
	if b := blocks[1]; b.mode != modeSkip || b.arg != "needs Discord" || b.line != 17 || b.body[0] != "curl -s x" {
		t.Errorf("the indented block: %+v", b)
	}
	if b := blocks[2]; b.bad != "the mark is not followed by a fenced block" {
		t.Errorf("the mark before a paragraph: %+v", b)
	}
	if b := blocks[3]; b.mode != modeUnmarked || b.lang != "json" {
		t.Errorf("the JSON block: %+v", b)
	}
	cmds, err := parseCommands(blocks[0])
	if err != nil || len(cmds) != 2 {
		t.Fatalf("commands: %+v, %v", cmds, err)
	}
	if c := cmds[0]; c.line != 5 || c.text != "askbridge list --tenant acme \\\n    --job job-1" || strings.Join(c.want, "|") != "TENANT  JOB" || c.exit != 0 {
		t.Errorf("first command: %+v", c)
	}
	if c := cmds[1]; c.line != 9 || strings.Join(c.want, "|") != "refused" || c.exit != 1 {
		t.Errorf("second command: %+v", c)
	}
	if _, err := parseCommands(docBlock{file: "x.md", line: 1, body: []string{"words", "$ true"}}); err == nil {
		t.Error("text before the first $ command was taken")
	}
}

func TestDocsOutputComparison(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		want, got string
		same      bool
	}{
		{"Answered: The answer: blue", "Answered: The answer: blue", true},
		{"Answered: The answer: blue", "Answered: The answer: red", false},
		{"idempotency key: ik_...", "idempotency key: ik_96afb0345c012eebd9910618a158ab82", true},
		{"idempotency key: ik_...", "idempotency key: 96afb0345c012eebd9910618a158ab82", false},
		{"...  asked     q-7  When?", "08:01:04.084  asked     q-7  When?", true},
		{"...  asked     q-7  When?", "08:01:04.084  asked     q-7  When? (blocks send_report)", false},
		{"cli:... declined to answer: ask Ana.", "cli:root declined to answer: ask Ana.", true},
		{"a (b) [c] *d* $e", "a (b) [c] *d* $e", true}, // no other character is special
		{"a.c", "abc", false},
		{"line one|line two", "line one", false},         // a line the command did not print
		{"line one", "line one|line two", false},         // a line the docs do not show
		{"line one|", "line one||", true},                // blank lines at the end count for nothing
		{"trailing  ", "trailing", true},                 // nor do spaces at a line's end
		{"waiting...", "waiting for an answer...", true}, // ... is text too
	} {
		d := outputDiff(trimLines(strings.Split(c.want, "|")), strings.Split(c.got, "|"))
		if (d == "") != c.same {
			t.Errorf("docs %q, printed %q: diff %q, want same=%v", c.want, c.got, d, c.same)
		}
	}
}

// TestDocsSessionFailsOnWhatTheDocsGetWrong runs blocks whose docs are
// wrong through the session the docs test uses, and checks each is
// refused, and the right ones pass.
func TestDocsSessionFailsOnWhatTheDocsGetWrong(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash on PATH")
	}
	s := newDocSession(t, docsRoot(t))
	for _, c := range []struct {
		body  string
		wrong string // in the error; "" when the block is right
	}{
		{"$ echo hello\nhello", ""},
		{"$ echo hello\nhello world", `the docs show "hello world"; the command printed "hello"`},
		{"$ echo hello; echo again\nhello", `printed "again", which the docs do not show`},
		{"$ false", "exit status 1, the docs show 0"},
		{"$ bash -c 'exit 3'\n(exit 3)", ""},
		{"$ true\n(exit 3)", "exit status 0, the docs show 3"},
		{"$ echo out; echo err >&2\nout\nerr", ""},
		{"$ exit 2\n$ echo never", "never ran"},
		{"# a script\ntrue\necho fine", ""},
		{"false\necho fine", "exit status 1"},
		{"$ askbridge version >/dev/null && echo askbridge is on PATH\naskbridge is on PATH", ""},
	} {
		err := s.run(docBlock{file: "t.md", line: 1, lang: "sh", mode: modeRun, body: strings.Split(c.body, "\n")})
		switch {
		case c.wrong == "" && err != nil:
			t.Errorf("block %q refused: %v", c.body, err)
		case c.wrong != "" && (err == nil || !strings.Contains(err.Error(), c.wrong)):
			t.Errorf("block %q: %v, want an error saying %q", c.body, err, c.wrong)
		}
	}
}
