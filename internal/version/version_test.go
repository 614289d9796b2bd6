package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"(devel)", vcs("abc1234def567890", "false"), "askbridge devel (commit abc1234)"},
		{"(devel)", vcs("abc1234def567890", "true"), "askbridge devel (commit abc1234, modified)"},
		{"v1.2.3", vcs("abc1234def567890", "false"), "askbridge v1.2.3 (commit abc1234)"},
		{"v0.0.0-20261206045200-abc1234def56", vcs("abc1234def567890", "false"), "askbridge v0.0.0-20261206045200-abc1234def56"},
		{"", nil, "askbridge devel"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Version: c.version}, Settings: c.settings}
		if got := format(info); got != c.want {
			t.Errorf("format(%s, %v) = %q, want %q", c.version, c.settings, got, c.want)
		}
	}
}

// String works in a test binary, which records no commit.
func TestString(t *testing.T) {
	t.Parallel()
	if got := String(); !strings.HasPrefix(got, "askbridge ") {
		t.Fatalf("String() = %q", got)
	}
}
