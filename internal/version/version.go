// Package version names the build: the module's version and the commit
// it was built from, as the Go toolchain records them in the binary.
package version

import (
	"runtime/debug"
	"strings"
)

// String is "askbridge v1.2.3 (commit abc1234)", "askbridge devel (commit
// abc1234, modified)" for a build from a work tree with changes, or
// "askbridge devel" when the build recorded no commit (go run, tests).
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "askbridge devel"
	}
	return format(info)
}

// format is String of info.
func format(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var commit string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if commit == "" {
		return "askbridge " + v
	}
	commit = commit[:min(7, len(commit))]
	if modified {
		commit += ", modified"
	}
	if strings.Contains(v, commit[:min(7, len(commit))]) {
		// A pseudo-version names the commit already.
		return "askbridge " + v
	}
	return "askbridge " + v + " (commit " + commit + ")"
}
