package util

import (
	"strconv"
	"sync"
)

// maxSaltTries bounds the search for a salt; past it the salt is 0. With
// at most 1024 shards the expected number of tries is 2 × shards.
const maxSaltTries = 1 << 20

// tagCacheSize bounds the slice tags a Keys remembers before it starts over.
const tagCacheSize = 1 << 14

// sliceID names a slice: an epoch minute and a shard.
type sliceID struct {
	minute int64
	shard  int
}

// tagCache remembers computed slice tags; the search for a salt costs a few
// hundred nanoseconds, and every added task needs its slice's tag.
type tagCache struct {
	mu   sync.RWMutex
	tags map[sliceID]string
}

func (c *tagCache) get(id sliceID) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	tag, ok := c.tags[id]
	return tag, ok
}

func (c *tagCache) put(id sliceID, tag string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tags == nil || len(c.tags) >= tagCacheSize {
		c.tags = make(map[sliceID]string)
	}
	c.tags[id] = tag
}

// ShardSlots returns the cluster slots [lo, hi) that the tags of shard (of
// shards) fall in: the middle half of the shard's equal share of the slot
// space, or every slot when there is one shard. Redis Cluster tools give
// each master an equal, contiguous range of slots, so when shards is a
// multiple of the masters every master holds the same number of shards,
// whatever the rounding at the range edges.
func ShardSlots(shard, shards int) (lo, hi int) {
	if shards <= 1 {
		return 0, ClusterSlots
	}
	start := (shard*ClusterSlots + shards - 1) / shards
	end := ((shard+1)*ClusterSlots + shards - 1) / shards
	quarter := (end - start) / 4
	return start + quarter, end - quarter
}

// saltedTag returns "ns:minute:shard:salt" with the smallest salt whose
// CRC16 slot lies in ShardSlots(shard, shards).
func saltedTag(ns string, minute int64, shard, shards int) string {
	prefix := ns + ":" + strconv.FormatInt(minute, 10) + ":" + strconv.Itoa(shard) + ":"
	lo, hi := ShardSlots(shard, shards)
	base := crc16Update(0, prefix)
	var buf [20]byte
	for salt := range maxSaltTries {
		s := strconv.AppendInt(buf[:0], int64(salt), 10)
		slot := int(crc16Update(base, s) % ClusterSlots)
		if slot >= lo && slot < hi {
			return prefix + string(s)
		}
	}
	return prefix + "0"
}
