//go:build linux

package testmain

import "syscall"

// freeBytes is the space free to this user in the file system at dir, and
// whether dir is a directory this process may write in and run programs
// from (the tests build askbridge into their temporary directories).
func freeBytes(dir string) (uint64, bool) {
	const (
		wx       = 0x2 | 0x1 // W_OK | X_OK
		stNoexec = 0x8       // ST_NOEXEC in statfs's flags
	)
	if syscall.Access(dir, wx) != nil {
		return 0, false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Flags&stNoexec != 0 {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}
