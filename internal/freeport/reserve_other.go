//go:build !unix

package freeport

// held is every port this process reserved.
var held = map[int]bool{}

// reserve reserves port for the rest of this process; false when it
// reserved it before. Other processes are not told.
func reserve(port int) bool {
	if held[port] {
		return false
	}
	held[port] = true
	return true
}
