//go:build !race

package testmain

const raceEnabled = false
