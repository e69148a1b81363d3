package rtimewheel

import (
	"testing"
	"time"
)

func TestLatenessBucket(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want int64
	}{
		{0, 0}, {-time.Millisecond, 0}, {time.Microsecond, 1}, {time.Millisecond, 1},
		{7*time.Millisecond + 1, 8}, {20 * time.Millisecond, 20}, {21 * time.Millisecond, 22},
		{100 * time.Millisecond, 103}, {103 * time.Millisecond, 103}, {104 * time.Millisecond, 113}, {48 * time.Hour, 89698108},
	} {
		if got := latenessBucket(c.in); got != c.want {
			t.Errorf("latenessBucket(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	// Bounds only grow, and each bound is its own bucket.
	prev := int64(-1)
	for ms := int64(0); ms < 100000; ms++ {
		b := latenessBucket(time.Duration(ms) * time.Millisecond)
		if b < prev || b < ms || latenessBucket(time.Duration(b)*time.Millisecond) != b {
			t.Fatalf("latenessBucket(%dms) = %d after %d", ms, b, prev)
		}
		prev = b
	}
}

func TestMinuteStatsPercentiles(t *testing.T) {
	fields := map[string]string{"fired": "100", "delivered": "97", "retried": "2", "dead": "1", "l3": "50", "l5": "49", "l110": "1"}
	s := minuteStats(29000000, fields)
	if s.Fired != 100 || s.Delivered != 97 || s.Retried != 2 || s.Dead != 1 {
		t.Errorf("counts = %+v", s)
	}
	if s.LatenessP50 != 3*time.Millisecond || s.LatenessP99 != 5*time.Millisecond {
		t.Errorf("p50 %v, p99 %v; want 3ms, 5ms", s.LatenessP50, s.LatenessP99)
	}
	if !s.Minute.Equal(time.Unix(29000000*60, 0)) {
		t.Errorf("minute = %v", s.Minute)
	}
	if s := minuteStats(1, map[string]string{}); s.LatenessP99 != 0 || s.Fired != 0 {
		t.Errorf("empty minute = %+v", s)
	}
}
