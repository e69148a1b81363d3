package rtimewheel_test

import (
	"os"
	"strconv"
	"strings"
)

// hostCPU returns the CPU time the hypervisor stole from this machine and
// the total, in clock ticks, from /proc/stat (zeros where it is missing).
// Precision tests use it to tell a slow wheel from a starved machine.
func hostCPU() (steal, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0
	}
	for i, f := range fields[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		total += n
		if i == 7 {
			steal = n
		}
	}
	return steal, total
}

// stolenDuring runs f and returns the share of CPU time stolen meanwhile.
func stolenDuring(f func()) float64 {
	s0, t0 := hostCPU()
	f()
	s1, t1 := hostCPU()
	if t1 <= t0 {
		return 0
	}
	return float64(s1-s0) / float64(t1-t0)
}
