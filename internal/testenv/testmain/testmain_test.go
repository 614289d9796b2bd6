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
