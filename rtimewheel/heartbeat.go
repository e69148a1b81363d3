package rtimewheel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

const (
	// heartbeatEvery is how often a worker reports itself alive.
	heartbeatEvery = 5 * time.Second
	// heartbeatTTL is how long a heartbeat counts: a worker silent for
	// longer is no longer listed.
	heartbeatTTL = 30 * time.Second
)

// Fields of a worker's heartbeat hash.
const (
	beatHost        = "host"
	beatPID         = "pid"
	beatStarted     = "started"
	beatSeen        = "seen"
	beatInFlight    = "in_flight"
	beatQueued      = "queued"
	beatConcurrency = "concurrency"
)

// WorkerInfo is a worker as its last heartbeat reported it.
type WorkerInfo struct {
	ID          string
	Host        string
	PID         int
	StartedAt   time.Time
	LastSeenAt  time.Time
	InFlight    int // callbacks in flight
	Queued      int // tasks pulled, waiting for their time
	Concurrency int // most callbacks in flight at once
}

// newWorkerID returns an id that names the worker in heartbeats: host,
// process id and a random suffix, so two wheels of a process differ.
func newWorkerID(host string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

func hostname() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "unknown"
	}
	return host
}

// heartbeat reports the worker alive in the registry.
func (wk *worker) heartbeat(ctx context.Context) error {
	w := wk.w
	wk.mu.Lock()
	queued := len(wk.queue)
	wk.mu.Unlock()
	_, err := w.redis.Eval(ctx, w.scripts.Heartbeat,
		[]string{w.keys.WorkerRegistry(), w.keys.WorkerHeartbeat(wk.id)},
		wk.id, util.Millis(w.now()), heartbeatTTL.Milliseconds(),
		beatHost, wk.host,
		beatPID, os.Getpid(),
		beatStarted, util.Millis(wk.started),
		beatInFlight, wk.inFlight.Load(),
		beatQueued, queued,
		beatConcurrency, w.cfg.concurrency,
	)
	if err != nil {
		return storeErr("heartbeat", err)
	}
	return nil
}

// leave takes the worker off the registry when it stops.
func (wk *worker) leave(ctx context.Context) error {
	w := wk.w
	if _, err := w.redis.Do(ctx, "ZREM", w.keys.WorkerRegistry(), wk.id); err != nil {
		return storeErr("leave the worker registry", err)
	}
	if _, err := w.redis.Do(ctx, "DEL", w.keys.WorkerHeartbeat(wk.id)); err != nil {
		return storeErr("leave the worker registry", err)
	}
	return nil
}

// Workers returns the workers that sent a heartbeat within the last 30
// seconds, in the order they were last seen, most recent first.
func (w *RTimeWheel) Workers(ctx context.Context) ([]WorkerInfo, error) {
	if err := w.checkStopped("list workers"); err != nil {
		return nil, err
	}
	now := util.Millis(w.now())
	reply, err := w.redis.Do(ctx, "ZREVRANGEBYSCORE", w.keys.WorkerRegistry(), "+inf", now-heartbeatTTL.Milliseconds())
	if err != nil {
		return nil, storeErr("list workers", err)
	}
	ids := cast.ToStringSlice(cast.ToSlice(reply))
	if len(ids) == 0 {
		return []WorkerInfo{}, nil
	}
	calls := make([]redisclient.ScriptCall, len(ids))
	for i, id := range ids {
		calls[i] = redisclient.ScriptCall{Script: w.scripts.HashRead, Keys: []string{w.keys.WorkerHeartbeat(id)}}
	}
	replies, err := w.redis.EvalBatch(ctx, calls)
	if err != nil {
		return nil, storeErr("read heartbeats", err)
	}
	workers := make([]WorkerInfo, 0, len(ids))
	for i, r := range replies {
		if r.Err != nil {
			return nil, storeErr("read heartbeats", r.Err)
		}
		fields := hashFields(r.Value)
		if len(fields) == 0 {
			continue // expired between the two reads
		}
		workers = append(workers, WorkerInfo{
			ID:          ids[i],
			Host:        fields[beatHost],
			PID:         cast.ToInt(fields[beatPID]),
			StartedAt:   util.FromMillis(cast.ToInt64(fields[beatStarted])),
			LastSeenAt:  util.FromMillis(cast.ToInt64(fields[beatSeen])),
			InFlight:    cast.ToInt(fields[beatInFlight]),
			Queued:      cast.ToInt(fields[beatQueued]),
			Concurrency: cast.ToInt(fields[beatConcurrency]),
		})
	}
	return workers, nil
}

// hashFields turns a flat HGETALL reply into a map.
func hashFields(reply any) map[string]string {
	flat := cast.ToSlice(reply)
	out := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		out[cast.ToString(flat[i])] = cast.ToString(flat[i+1])
	}
	return out
}
