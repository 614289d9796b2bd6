package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The docs' examples run as written: every shell block of README.md and
// docs/*.md is marked, and the marked ones run against the service they
// start, their output compared with the docs (docs/design.md, "Testing":
// "The docs' examples"; docs_blocks_test.go reads the blocks,
// docs_session_test.go runs them).

// docsRoot is the repository's root, two folders above this package.
func docsRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod two folders above cmd/askbridge: %v", err)
	}
	return root
}

func readDocsOrFail(t *testing.T) []docBlock {
	t.Helper()
	blocks, err := readDocs(docsRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestDocsMarkEveryShellBlock: a shell example nobody marked would go
// untested without a word, so every one, and every block of another kind
// that shows askbridge run at a prompt (a ```text transcript), is marked
// to run or to be skipped with its reason, and every mark can be read and
// stands before a block whose commands can be read.
func TestDocsMarkEveryShellBlock(t *testing.T) {
	t.Parallel()
	services := map[string]int{}
	for _, b := range readDocsOrFail(t) {
		if problem := markProblem(b); problem != "" {
			t.Errorf("%s: %s", b.where(), problem)
		}
		if b.mode == modeService {
			services[b.file]++
		}
		if b.runs() {
			if _, err := parseCommands(b); err != nil {
				t.Error(err)
			}
		}
	}
	for file, n := range services {
		if n > 1 {
			t.Errorf("%s: %d service blocks; a file's blocks share one service", file, n)
		}
	}
}

// TestDocsMarkRule: the rule catches a transcript in any fence, and
// takes a justified skip for it.
func TestDocsMarkRule(t *testing.T) {
	t.Parallel()
	doc := "```text\nalice$ askbridge answer job-1 q-1 blue\nAnswered: The answer: blue\n```\n\n" +
		"<!-- docs-test: skip (runs as alice) -->\n```text\nalice$ askbridge list\n```\n\n" +
		"```text\nplain words\n```\n\n" +
		"<!-- docs-test: skip (why) -->\n```text\nplain words\n```\n\n" +
		"<!-- docs-test -->\n```text\n$ askbridge list\n```\n"
	var got []string
	for _, b := range parseDoc("x.md", doc) {
		got = append(got, fmt.Sprintf("%d:%s", b.line, strings.SplitN(markProblem(b), ":", 2)[0]))
	}
	want := "1:a ```text block without a mark 7: 11: 16:a skip mark before a ```text block that shows no command 21:a mark before a ```text block; only shell blocks run"
	if strings.Join(got, " ") != want {
		t.Errorf("the rule says\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

// TestDocsRunTheTools: the examples that run show the tools people use
// first, so a change to any of them meets the docs.
func TestDocsRunTheTools(t *testing.T) {
	t.Parallel()
	var run strings.Builder
	for _, b := range readDocsOrFail(t) {
		if b.runs() {
			run.WriteString(strings.Join(b.body, "\n") + "\n")
		}
	}
	for _, tool := range []string{"askbridge ask ", "askbridge ask --no-wait", "askbridge await ", "askbridge list",
		"askbridge queue ", "askbridge show ", "askbridge answer ", "askbridge decline ", "askbridge gate ",
		"askbridge trace ", "askbridge creds agent ", "askbridge creds list", "askbridge serve"} {
		if !strings.Contains(run.String(), tool) {
			t.Errorf("no example that runs shows %q", tool)
		}
	}
}

// TestDocsExamples runs each file's marked blocks in order, in a session
// of its own: a folder that holds ./data, askbridge first on PATH, and the
// service its service block starts.
func TestDocsExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the docs' examples are bash; no bash on PATH")
	}
	root := docsRoot(t)
	byFile := map[string][]docBlock{}
	var files []string
	for _, b := range readDocsOrFail(t) {
		if !b.runs() {
			continue
		}
		if byFile[b.file] == nil {
			files = append(files, b.file)
		}
		byFile[b.file] = append(byFile[b.file], b)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			s := newDocSession(t, root)
			for _, b := range byFile[file] {
				if err := s.run(b); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.finish(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
