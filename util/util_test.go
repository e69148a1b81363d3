package util

import (
	"testing"
	"time"
)

func TestEpochMinuteFloors(t *testing.T) {
	cases := []struct {
		ms   int64
		want int64
	}{
		{0, 0},
		{59_999, 0},
		{60_000, 1},
		{-1, -1},
		{-60_000, -1},
		{-60_001, -2},
	}
	for _, c := range cases {
		if got := EpochMinute(c.ms); got != c.want {
			t.Errorf("EpochMinute(%d) = %d, want %d", c.ms, got, c.want)
		}
	}
}

func TestMinutesAreUTC(t *testing.T) {
	at := time.Date(2026, 11, 22, 8, 0, 30, 0, time.UTC)
	tokyo := at.In(time.FixedZone("JST", 9*3600))
	if EpochMinute(Millis(at)) != EpochMinute(Millis(tokyo)) {
		t.Fatal("the same instant in two zones fell into different minutes")
	}
}

func TestCeilMillisNeverBefore(t *testing.T) {
	at := time.Unix(100, 1_500_000+1) // 100.001500001 s
	if got := CeilMillis(at); got != 100_002 {
		t.Fatalf("CeilMillis = %d, want 100002", got)
	}
	if got := Millis(at); got != 100_001 {
		t.Fatalf("Millis = %d, want 100001", got)
	}
	exact := time.UnixMilli(5)
	if CeilMillis(exact) != 5 {
		t.Fatal("CeilMillis moved an exact millisecond")
	}
	if !FromMillis(5).Equal(exact) || FromMillis(5).Location() != time.UTC {
		t.Fatal("FromMillis did not round-trip to UTC")
	}
}

func TestHashSlotKnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	cases := map[string]int{
		"123456789":            12739, // the spec's CRC16 check value 0x31C3 mod 16384
		"foo":                  12182,
		"{user1000}.following": HashSlot("user1000"),
		"foo{}{bar}":           HashSlot("foo{}{bar}"),
	}
	for key, want := range cases {
		if got := HashSlot(key); got != want {
			t.Errorf("HashSlot(%q) = %d, want %d", key, got, want)
		}
	}
	if crc16("123456789") != 0x31C3 {
		t.Fatalf("crc16 check value = %#x, want 0x31c3", crc16("123456789"))
	}
}

func TestSliceKeysShareOneSlot(t *testing.T) {
	k := NewKeys("rtw")
	for _, minute := range []int64{0, 29_000_000, 29_999_999} {
		for shard := range 4 {
			keys := k.Slice(minute, shard).List()
			for _, key := range keys[1:] {
				if HashSlot(key) != HashSlot(keys[0]) {
					t.Fatalf("%s and %s are in different slots", keys[0], key)
				}
			}
		}
	}
	d := k.Dead()
	if HashSlot(d.At) != HashSlot(d.Body) {
		t.Fatal("dead-letter keys are in different slots")
	}
}

func TestShardStableAndInRange(t *testing.T) {
	for _, key := range []string{"a", "order:42", "ünïcode"} {
		s := Shard(key, 6)
		if s < 0 || s >= 6 || s != Shard(key, 6) {
			t.Fatalf("Shard(%q, 6) = %d", key, s)
		}
		if Shard(key, 1) != 0 {
			t.Fatal("one shard must be shard 0")
		}
	}
}

func TestValidNamespace(t *testing.T) {
	for _, ns := range []string{"rtw", "a.b-c_9"} {
		if !ValidNamespace(ns) {
			t.Errorf("ValidNamespace(%q) = false", ns)
		}
	}
	for _, ns := range []string{"", "a{b}", "a b", "x:y", string(make([]byte, 65))} {
		if ValidNamespace(ns) {
			t.Errorf("ValidNamespace(%q) = true", ns)
		}
	}
}
