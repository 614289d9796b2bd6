//go:build !linux

package testmain

// freeBytes reports no tmpfs: elsewhere the tests keep the system's
// temporary directory.
func freeBytes(string) (uint64, bool) { return 0, false }
