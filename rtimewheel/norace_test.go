//go:build !race

package rtimewheel_test

const raceEnabled = false
