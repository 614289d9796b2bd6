//go:build unix

package freeport

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// held keeps open the lock file of every port this process reserved: the
// kernel lets go of a lock only when its file closes, which a process that
// ends, however it ends, does for it.
var held = map[int]*os.File{}

// reserve reserves port for the rest of the process, by an exclusive lock
// on a file named by it in a directory every process shares; false when
// this process or another holds it. A directory that cannot be made
// reserves nothing beyond this process.
func reserve(port int) bool {
	if _, ok := held[port]; ok {
		return false
	}
	dir := filepath.Join(os.TempDir(), "askbridge-freeport")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		held[port] = nil
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		held[port] = nil
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	held[port] = f
	return true
}
