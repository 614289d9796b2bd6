// Package version names the build: the module's version and the commit
// it was built from, as the Go toolchain records them in the binary.
package version

import (
	"cmp"
	"runtime/debug"
	"strings"
)

// Version and Commit, set at link time (go build -ldflags "-X
// github.com/askbridge/askbridge/internal/version.Commit=$(git rev-parse HEAD)"),
// name a build the toolchain recorded no version control for: one
// built with -buildvcs=false, or in a container without .git.
var Version, Commit string

// String is "askbridge v1.2.3 (commit abc1234)", "askbridge devel (commit
// abc1234, modified)" for a build from a work tree with changes, or
// "askbridge devel" when the build recorded no commit (go run, tests).
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{}
	}
	return format(info)
}

// format is String of info.
func format(info *debug.BuildInfo) string {
	v := cmp.Or(Version, info.Main.Version)
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	commit := Commit
	modified := false
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && Commit == "":
			commit = s.Value
		case s.Key == "vcs.modified" && Commit == "":
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

// Number is String without the program's name: "devel (commit abc1234)",
// for the MCP server's serverInfo.version.
func Number() string { return strings.TrimPrefix(String(), "askbridge ") }
