// Package parallel sets how many of a package's parallel tests run at
// once, for packages whose tests mostly wait: on loopback servers, NATS
// acknowledgements and timers, not the CPU. It imports nothing of
// askbridge, so any package's tests can use it. docs/benchmarks.md says
// what it saves.
package parallel

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Run runs m's tests with at least n parallel tests at once, and returns
// their exit code, for TestMain to pass to os.Exit. go test's default, -parallel GOMAXPROCS, suits tests
// that compute; a test of these packages spends most of its time waiting,
// so on a 2-core machine two at a time leave the cores idle. An explicit
// -parallel wins, and fuzzing is left alone: there -parallel is the number
// of fuzzing processes.
func Run(m *testing.M, n int) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
		}
	})
	fuzz := flag.Lookup("test.fuzz")
	fuzzing := fuzz != nil && fuzz.Value.String() != ""
	if !set && !fuzzing && n > runtime.GOMAXPROCS(0) {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
