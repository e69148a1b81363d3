// Package lua holds the Redis Lua scripts of rtimewheel, one .lua file each,
// embedded into the binary. Each file starts with a header naming its KEYS,
// ARGV and reply; every script touches keys of a single hash tag, so it runs
// on one Redis Cluster slot.
package lua

import (
	_ "embed"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

var (
	//go:embed add.lua
	addSource string
	//go:embed ack.lua
	ackSource string
	//go:embed pull.lua
	pullSource string
	//go:embed remove.lua
	removeSource string
	//go:embed retry.lua
	retrySource string
	//go:embed handback.lua
	handbackSource string
	//go:embed index_swap.lua
	indexSwapSource string
	//go:embed index_cas.lua
	indexCASSource string
	//go:embed dead_put.lua
	deadPutSource string
	//go:embed dead_take.lua
	deadTakeSource string
	//go:embed dead_list.lua
	deadListSource string
	//go:embed watermark.lua
	watermarkSource string
	//go:embed stats_add.lua
	statsAddSource string
	//go:embed heartbeat.lua
	heartbeatSource string
	//go:embed hash_read.lua
	hashReadSource string
	//go:embed slice_count.lua
	sliceCountSource string
)

// Scripts are the wheel's scripts, ready to run. See each .lua file for its
// KEYS, ARGV and reply.
type Scripts struct {
	Add       *redisclient.Script // schedule tasks in a slice
	Pull      *redisclient.Script // lease due tasks of a slice, take over expired leases, drain
	Ack       *redisclient.Script // forget delivered tasks of a slice
	Remove    *redisclient.Script // remove a task's entry from a slice
	Retry     *redisclient.Script // schedule the next attempt of a failed task
	Handback  *redisclient.Script // return unfired leased tasks on shutdown
	IndexSwap *redisclient.Script // set or delete keys' locations, returning the old ones
	IndexCAS  *redisclient.Script // set or delete keys' locations if their versions match
	DeadPut   *redisclient.Script // store a dead letter
	DeadTake  *redisclient.Script // remove and return a dead letter
	DeadList  *redisclient.Script // list dead letters, newest first
	Watermark *redisclient.Script // advance the drain watermark

	StatsAdd   *redisclient.Script // add a worker's counts to a minute's statistics
	Heartbeat  *redisclient.Script // record that a worker is alive
	HashRead   *redisclient.Script // read a whole hash (statistics, heartbeats)
	SliceCount *redisclient.Script // count the waiting and leased tasks of a slice
}

// New returns the scripts.
func New() *Scripts {
	return &Scripts{
		Add:       redisclient.NewScript("add", addSource),
		Pull:      redisclient.NewScript("pull", pullSource),
		Ack:       redisclient.NewScript("ack", ackSource),
		Remove:    redisclient.NewScript("remove", removeSource),
		Retry:     redisclient.NewScript("retry", retrySource),
		Handback:  redisclient.NewScript("handback", handbackSource),
		IndexSwap: redisclient.NewScript("index_swap", indexSwapSource),
		IndexCAS:  redisclient.NewScript("index_cas", indexCASSource),
		DeadPut:   redisclient.NewScript("dead_put", deadPutSource),
		DeadTake:  redisclient.NewScript("dead_take", deadTakeSource),
		DeadList:  redisclient.NewScript("dead_list", deadListSource),
		Watermark: redisclient.NewScript("watermark", watermarkSource),

		StatsAdd:   redisclient.NewScript("stats_add", statsAddSource),
		Heartbeat:  redisclient.NewScript("heartbeat", heartbeatSource),
		HashRead:   redisclient.NewScript("hash_read", hashReadSource),
		SliceCount: redisclient.NewScript("slice_count", sliceCountSource),
	}
}

// All returns every script, for loading ahead of use and for tests.
func (s *Scripts) All() []*redisclient.Script {
	return []*redisclient.Script{s.Add, s.Pull, s.Ack, s.Remove, s.Retry, s.Handback, s.IndexSwap, s.IndexCAS, s.DeadPut, s.DeadTake, s.DeadList, s.Watermark,
		s.StatsAdd, s.Heartbeat, s.HashRead, s.SliceCount}
}
