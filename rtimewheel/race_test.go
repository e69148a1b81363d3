//go:build race

package rtimewheel_test

const raceEnabled = true
