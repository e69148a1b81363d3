package util

import (
	"fmt"
	"hash/fnv"
	"strconv"
)

// IndexBuckets is how many hashes the key index is spread over, so that on a
// Redis Cluster the index is not one hot slot.
const IndexBuckets = 64

// Keys builds every Redis key of one namespace. Building keys in one place
// keeps the layout documented by code: see docs/design.md for the picture.
// A Keys is safe for concurrent use.
type Keys struct {
	ns     string
	shards int
	tags   *tagCache
}

// NewKeys returns the key builder for namespace ns with one shard per
// minute (see WithShards). The caller validates ns (see ValidNamespace);
// Keys does not.
func NewKeys(ns string) Keys {
	return Keys{ns: ns, shards: 1, tags: &tagCache{}}
}

// WithShards returns a copy of k for minutes split into n shards (n < 1
// counts as 1). The shard count changes the slice tags, so every wheel of a
// namespace must use the same one.
func (k Keys) WithShards(n int) Keys {
	k.shards = max(n, 1)
	k.tags = &tagCache{}
	return k
}

// Shards returns the number of shards per minute.
func (k Keys) Shards() int { return k.shards }

// Namespace returns the namespace the keys are built in.
func (k Keys) Namespace() string { return k.ns }

// SliceKeys are the four keys of one slice of the wheel: one minute, one
// shard. They share a hash tag, so a script may touch all of them on a
// Redis Cluster.
type SliceKeys struct {
	Due   string // zset: task key -> due time (ms)
	Body  string // hash: task key -> stored task JSON
	Lease string // zset: task key -> lease deadline (ms) while a worker owns it
	Del   string // set: tombstones of removed task keys
}

// List returns the slice keys in the order every slice script declares them
// as KEYS[1..4]: due, body, lease, del.
func (s SliceKeys) List() []string {
	return []string{s.Due, s.Body, s.Lease, s.Del}
}

// SliceTag returns the hash tag shared by the keys of a slice,
// "{ns:minute:shard:salt}". The salt is the smallest number that puts the
// tag's cluster slot in ShardSlots(shard, shards), so the shards of every
// minute spread evenly over the masters of a Redis Cluster.
func (k Keys) SliceTag(minute int64, shard int) string {
	id := sliceID{minute: minute, shard: shard}
	if tag, ok := k.tags.get(id); ok {
		return tag
	}
	tag := "{" + saltedTag(k.ns, minute, shard, max(k.shards, 1)) + "}"
	k.tags.put(id, tag)
	return tag
}

// Slice returns the keys of the slice for an epoch minute and shard.
func (k Keys) Slice(minute int64, shard int) SliceKeys {
	tag := k.SliceTag(minute, shard)
	return SliceKeys{
		Due:   tag + ":due",
		Body:  tag + ":body",
		Lease: tag + ":lease",
		Del:   tag + ":del",
	}
}

// Index returns the hash that maps taskKey to where the task lives now.
func (k Keys) Index(taskKey string) string {
	return fmt.Sprintf("%s:index:%d", k.ns, KeyHash(taskKey)%IndexBuckets)
}

// ShardCount returns the key holding the namespace's shards per minute, set
// by its first wheel; later wheels adopt it.
func (k Keys) ShardCount() string {
	return k.ns + ":shards"
}

// Near returns the counter that adds of tasks due within two ticks bump,
// so that every worker pulls them at once.
func (k Keys) Near() string {
	return k.ns + ":near"
}

// Watermark returns the key holding the oldest epoch minute not yet drained.
func (k Keys) Watermark() string {
	return k.ns + ":watermark"
}

// DeadKeys are the two keys of the dead-letter store; they share a hash tag.
type DeadKeys struct {
	At   string // zset: task key -> time it died (ms)
	Body string // hash: task key -> stored task JSON with its last error
}

// List returns the dead-letter keys in script order: at, body.
func (d DeadKeys) List() []string { return []string{d.At, d.Body} }

// Dead returns the keys of the dead-letter store.
func (k Keys) Dead() DeadKeys {
	tag := "{" + k.ns + ":dead}"
	return DeadKeys{At: tag + ":at", Body: tag + ":body"}
}

// Worker returns the heartbeat key of one worker.
func (k Keys) Worker(id string) string {
	return k.ns + ":worker:" + id
}

// Stats returns the hash of one epoch minute's callback statistics: counts
// of outcomes and a lateness histogram, added to by every worker.
func (k Keys) Stats(minute int64) string {
	return k.ns + ":stats:" + strconv.FormatInt(minute, 10)
}

// WorkerRegistry returns the zset of live workers (id -> last seen, ms). It
// shares a hash tag with every WorkerHeartbeat key.
func (k Keys) WorkerRegistry() string {
	return "{" + k.ns + ":workers}:ids"
}

// WorkerHeartbeat returns the hash a worker reports itself in (host, start,
// callbacks in flight); it expires when the worker stops reporting.
func (k Keys) WorkerHeartbeat(id string) string {
	return "{" + k.ns + ":workers}:w:" + id
}

// KeyHash is the stable 32-bit FNV-1a hash of a task key. It picks the index
// bucket and the shard of a task, so both are found from the key alone.
func KeyHash(taskKey string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(taskKey))
	return h.Sum32()
}

// Shard returns the shard of a task key when each minute has shards slices.
func Shard(taskKey string, shards int) int {
	if shards <= 1 {
		return 0
	}
	return int(KeyHash(taskKey) % uint32(shards))
}

// ValidNamespace reports whether ns can prefix keys: 1 to 64 characters of
// letters, digits, '-', '_' and '.', so it never breaks a hash tag.
func ValidNamespace(ns string) bool {
	if len(ns) == 0 || len(ns) > 64 {
		return false
	}
	for _, r := range ns {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}
