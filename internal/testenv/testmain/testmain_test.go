package testmain

import "testing"

func TestQuietRaceExitKeepsWhatGORACESays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ gorace, want string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=500", "atexit_sleep_ms=500"},
		{"log_path=/tmp/r atexit_sleep_ms=0", "log_path=/tmp/r atexit_sleep_ms=0"},
		{"history_size=3 log_path=/tmp/atexit_sleep_ms", "history_size=3 log_path=/tmp/atexit_sleep_ms atexit_sleep_ms=0"},
	} {
		if got := quietRaceExit(tc.gorace); got != tc.want {
			t.Errorf("quietRaceExit(%q) = %q, want %q", tc.gorace, got, tc.want)
		}
	}
}

func TestMain(m *testing.M) { Main(m, 0) }

func TestTempDirIsTheCallersOrARoomyTmpfs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		callers string
		free    uint64
		ok      bool
		want    string
	}{
		{"the caller's TMPDIR wins", "/var/tmp/mine", 64 << 30, true, "/var/tmp/mine"},
		{"a tmpfs with room", "", 24 << 30, true, memoryTemp},
		{"a container's 64 MB /dev/shm", "", 64 << 20, true, ""},
		{"no /dev/shm to write in", "", 0, false, ""},
	} {
		if got := tempDir(tc.callers, tc.free, tc.ok); got != tc.want {
			t.Errorf("%s: tempDir(%q, %d, %v) = %q, want %q", tc.name, tc.callers, tc.free, tc.ok, got, tc.want)
		}
	}
}
