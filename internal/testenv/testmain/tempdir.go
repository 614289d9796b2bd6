package testmain

import "os"

// memoryTemp is the tmpfs the tests' temporary files go to when the
// caller did not choose a TMPDIR: the suite's stores, NATS servers and
// child processes write there. The kernel's work for a file on disk
// (journal, writeback) was half the suite's system time, and the tests
// measure the code, not the disk; nothing in them survives a power cut
// anyway. docs/design.md ("Testing").
const memoryTemp = "/dev/shm"

// memoryTempRoom is the free space below which the tmpfs is left alone:
// a container's /dev/shm is often 64 MB, less than the suite writes.
const memoryTempRoom = 2 << 30

// tempDir returns the TMPDIR the tests should use, given the caller's
// TMPDIR and the free bytes of memoryTemp (ok false when it is not a
// directory to write in and run programs from): the caller's when set,
// else memoryTemp when it has room, else "" (the system's default).
func tempDir(callers string, free uint64, ok bool) string {
	switch {
	case callers != "":
		return callers
	case ok && free >= memoryTempRoom:
		return memoryTemp
	}
	return ""
}

// useMemoryTemp points TMPDIR at memoryTemp when tempDir says so; the
// tests' t.TempDir and the processes they start follow it.
func useMemoryTemp() {
	free, ok := freeBytes(memoryTemp)
	if dir := tempDir(os.Getenv("TMPDIR"), free, ok); dir != "" {
		_ = os.Setenv("TMPDIR", dir)
	}
}
