// Package testmain is every test binary's TestMain: how many of its
// parallel tests run at once, and an exit without the race runtime's
// pause. It imports nothing of askbridge, so any package's tests can use
// it. docs/design.md ("Testing") says what each saves.
package testmain

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Main runs m's tests and exits with their code: Exit(Run(m, parallel)).
func Main(m *testing.M, parallel int) { Exit(Run(m, parallel)) }

// Run runs m's tests and returns their exit code, for a TestMain with
// work to do after them. parallel > 0 runs at least that many parallel
// tests at once, for packages whose tests mostly wait: on loopback
// servers, NATS acknowledgements and timers, not the CPU. go test's
// default, -parallel GOMAXPROCS, suits tests that compute; two at a time
// would leave a 2-core machine idle. An explicit -parallel wins, and
// fuzzing is left alone: there -parallel is the number of fuzzing
// processes.
func Run(m *testing.M, parallel int) int {
	flag.Parse()
	if parallel > runtime.GOMAXPROCS(0) && !flagSet("test.parallel") && !fuzzing() {
		if err := flag.Set("test.parallel", strconv.Itoa(parallel)); err != nil {
			panic(err)
		}
	}
	// The processes the tests start inherit both.
	_ = os.Setenv("GORACE", quietRaceExit(os.Getenv("GORACE")))
	useMemoryTemp()
	return m.Run()
}

// raceExitPause is the race runtime's option for its pause at exit.
const raceExitPause = "atexit_sleep_ms"

// quietRaceExit is the GORACE that gives the processes the tests start
// (the test binary as askbridge, a docs session's commands) an exit
// without the race runtime's pause: gorace with the pause set to 0,
// unless gorace sets it already. Under -race every process that ends
// sleeps a second first, to let late reports through; a docs session
// runs a hundred commands one after the other.
func quietRaceExit(gorace string) string {
	for _, opt := range strings.Fields(gorace) {
		if name, _, _ := strings.Cut(opt, "="); name == raceExitPause {
			return gorace
		}
	}
	return strings.TrimSpace(gorace + " " + raceExitPause + "=0")
}

// Exit ends the test binary with code. A zero code skips the race
// runtime's second of pause: testing.M.Run has already failed the run for any race the
// detector reported, during a test or outside one, so the pause could
// only catch a goroutine racing after every test ended.
func Exit(code int) {
	if code == 0 && raceEnabled {
		syscall.Exit(0)
	}
	os.Exit(code)
}

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// fuzzing reports whether this run fuzzes (-test.fuzz).
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}
