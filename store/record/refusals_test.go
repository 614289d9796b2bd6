package record

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRefusalsAreWrittenOnce reads every Go file of the module but the
// tests (and the conformance suite, which expects the sentences people
// read) and checks each refusal sentence is written in refusals.go alone:
// a backend that spelled one out itself could drift from the other's.
func TestRefusalsAreWrittenOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not two folders up: %v", err)
	}
	found := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || path == filepath.Join(root, "store", "storetest")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, r := range refusals {
			// The sentence's longest run of words between its verbs, so
			// that a copy with other arguments or a prefix is found too.
			if strings.Contains(string(body), longestPart(r)) {
				found[r] = append(found[r], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "store", "record", "refusals.go")
	for _, r := range refusals {
		if got := found[r]; len(got) != 1 || got[0] != want {
			t.Errorf("refusal %s is written in %v, want in %s alone", strconv.Quote(r), got, want)
		}
	}
}

// longestPart is the longest piece of a format string between its %s.
func longestPart(format string) string {
	var longest string
	for _, part := range strings.Split(format, "%s") {
		if len(part) > len(longest) {
			longest = part
		}
	}
	return longest
}
