package util

import (
	"fmt"
	"math"
	"testing"
)

// clusterRanges returns the slot ranges redis-cli --cluster create gives
// masters masters: equal, contiguous, rounded to the nearest slot.
func clusterRanges(masters int) [][2]int {
	per := float64(ClusterSlots) / float64(masters)
	var out [][2]int
	first, cursor := 0, 0.0
	for i := range masters {
		last := int(math.Round(cursor + per - 1))
		if i == masters-1 {
			last = ClusterSlots - 1
		}
		out = append(out, [2]int{first, last})
		first = last + 1
		cursor += per
	}
	return out
}

func masterOf(ranges [][2]int, slot int) int {
	for i, r := range ranges {
		if slot >= r[0] && slot <= r[1] {
			return i
		}
	}
	return -1
}

// Every minute's shards spread evenly over the masters of a cluster made by
// redis-cli: with 12 shards, each of 1, 2, 3, 4 or 6 masters holds exactly
// its share of every minute, and 5 masters hold 2 or 3 shards each.
func TestSliceTagsSpreadShardsEvenlyOverMasters(t *testing.T) {
	const shards = 12
	keys := NewKeys("rtw").WithShards(shards)
	for masters := 1; masters <= 6; masters++ {
		ranges := clusterRanges(masters)
		for minute := int64(29_000_000); minute < 29_000_200; minute++ {
			count := make([]int, masters)
			for shard := range shards {
				sk := keys.Slice(minute, shard)
				slot := HashSlot(sk.Due)
				if lo, hi := ShardSlots(shard, shards); slot < lo || slot >= hi {
					t.Fatalf("minute %d shard %d: slot %d outside [%d, %d)", minute, shard, slot, lo, hi)
				}
				for _, k := range sk.List() {
					if HashSlot(k) != slot {
						t.Fatalf("slice keys in two slots: %v", sk.List())
					}
				}
				count[masterOf(ranges, slot)]++
			}
			lo, hi := shards/masters, (shards+masters-1)/masters
			for m, n := range count {
				if n < lo || n > hi {
					t.Fatalf("%d masters, minute %d: master %d holds %d shards, want %d..%d (%v)", masters, minute, m, n, lo, hi, count)
				}
			}
		}
	}
}

func TestSliceTagIsStableAndCached(t *testing.T) {
	a := NewKeys("ns").WithShards(12)
	b := NewKeys("ns").WithShards(12)
	for shard := range 12 {
		if x, y := a.SliceTag(42, shard), b.SliceTag(42, shard); x != y {
			t.Fatalf("two builders disagree on shard %d: %s vs %s", shard, x, y)
		}
		if x, y := a.SliceTag(42, shard), a.SliceTag(42, shard); x != y {
			t.Fatalf("cached tag differs: %s vs %s", x, y)
		}
	}
	if got := NewKeys("ns").SliceTag(7, 0); got != "{ns:7:0:0}" {
		t.Fatalf("one shard: tag %s, want {ns:7:0:0}", got)
	}
}

func BenchmarkSliceTag(b *testing.B) {
	k := NewKeys("rtw").WithShards(12)
	b.Run("cached", func(b *testing.B) {
		for i := range b.N {
			_ = k.SliceTag(1, i%12)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for i := range b.N {
			_ = saltedTag("rtw", int64(i/12), i%12, 12)
		}
	})
}

func ExampleKeys_SliceTag() {
	keys := NewKeys("rtw").WithShards(12)
	tag := keys.SliceTag(29_000_000, 5)
	lo, hi := ShardSlots(5, 12)
	slot := HashSlot(tag)
	fmt.Println(slot >= lo && slot < hi)
	// Output: true
}
