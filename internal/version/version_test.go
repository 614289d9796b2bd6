package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"a tagged module", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0"},
		{"a version stamped from the repository",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206045410-89c0d42a1b2c+dirty"}},
			"v0.0.0-20261206045410-89c0d42a1b2c+dirty"},
		{"a build in the work tree", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "89c0d42a1b2c3d4e5f60718293a4b5c6d7e8f901", "vcs.modified", "false")},
			"devel (89c0d42a1b2c)"},
		{"a build with changes", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.modified", "true", "vcs.revision", "89c0d42a1b2c3d4e5f60718293a4b5c6d7e8f901")},
			"devel (89c0d42a1b2c, modified)"},
		{"no commit recorded", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"a short revision", &debug.BuildInfo{Settings: vcs("vcs.revision", "abc")}, "devel (abc)"},
		{"no build information", nil, "devel"},
	} {
		if got := fromBuildInfo(c.info, c.info != nil); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if String() == "" {
		t.Error("the test binary's version is empty")
	}
}
