// Package version is askbridge's version as the build recorded it, for
// `askbridge --version` and the MCP server's serverInfo (docs/mcp.md).
package version

import (
	"runtime/debug"
	"strings"
)

// String is the module's version when the binary was built from a tagged
// module (go install …@v1.2.0) or with a version the go command stamped
// from the repository; otherwise "devel", with the commit and whether the
// work tree had changes when the build recorded them: "devel (89c0d42a1b2c,
// modified)".
func String() string {
	info, ok := debug.ReadBuildInfo()
	return fromBuildInfo(info, ok)
}

func fromBuildInfo(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	parts := []string{rev[:min(12, len(rev))]}
	if modified == "true" {
		parts = append(parts, "modified")
	}
	return "devel (" + strings.Join(parts, ", ") + ")"
}
