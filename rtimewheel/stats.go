package rtimewheel

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

const (
	// statsFlushEvery is how often a worker adds the outcomes it counted to
	// the per-minute statistics in Redis.
	statsFlushEvery = time.Second
	// statsTTL is how long a minute's statistics are kept.
	statsTTL = 2 * time.Hour
	// statsFlushTimeout bounds one flush.
	statsFlushTimeout = 5 * time.Second
	// latenessExactMs is the lateness up to which the histogram has a bucket
	// per millisecond; above it buckets grow by a tenth.
	latenessExactMs = 20
	// latenessMaxMs is the upper bound of the last lateness bucket.
	latenessMaxMs = 24 * 60 * 60 * 1000
)

// Fields of a minute's statistics hash.
const (
	statFired     = "fired"
	statDelivered = "delivered"
	statRetried   = "retried"
	statDead      = "dead"
	statDropped   = "dropped"
	statLateness  = "l" // prefix of the histogram buckets: "l<upper bound ms>"
)

// statsBuffer counts callback outcomes per minute in memory until the
// worker flushes them, so recording costs a callback no Redis round trip.
type statsBuffer struct {
	mu      sync.Mutex
	minutes map[int64]map[string]int64 // epoch minute -> field -> increment
}

func newStatsBuffer() *statsBuffer {
	return &statsBuffer{minutes: make(map[int64]map[string]int64)}
}

// record counts one callback attempt in the minute it started.
func (b *statsBuffer) record(ev CallbackEvent) {
	minute := util.EpochMinute(util.Millis(ev.FiredAt))
	bucket := statLateness + strconv.FormatInt(latenessBucket(ev.Lateness()), 10)
	outcome := ""
	switch ev.Outcome {
	case OutcomeDelivered:
		outcome = statDelivered
	case OutcomeRetry:
		outcome = statRetried
	case OutcomeDead:
		outcome = statDead
	case OutcomeDropped:
		outcome = statDropped
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	counts := b.minutes[minute]
	if counts == nil {
		counts = make(map[string]int64)
		b.minutes[minute] = counts
	}
	counts[statFired]++
	counts[bucket]++
	if outcome != "" {
		counts[outcome]++
	}
}

// take returns the counts so far and empties the buffer.
func (b *statsBuffer) take() map[int64]map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.minutes
	b.minutes = make(map[int64]map[string]int64)
	return out
}

// putBack returns counts that could not be written, for the next flush.
// Minutes older than the statistics are kept are dropped.
func (b *statsBuffer) putBack(taken map[int64]map[string]int64, now time.Time) {
	oldest := util.EpochMinute(util.Millis(now.Add(-statsTTL)))
	b.mu.Lock()
	defer b.mu.Unlock()
	for minute, counts := range taken {
		if minute < oldest {
			continue
		}
		into := b.minutes[minute]
		if into == nil {
			b.minutes[minute] = counts
			continue
		}
		for field, n := range counts {
			into[field] += n
		}
	}
}

// latenessBucket returns the upper bound, in milliseconds, of the histogram
// bucket of lateness d: d rounded up to the millisecond up to
// latenessExactMs, then bounds that grow by a tenth, up to latenessMaxMs.
// Integer steps keep the bounds identical on every worker.
func latenessBucket(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if ms <= latenessExactMs {
		return max(ms, 0)
	}
	bound := int64(latenessExactMs)
	for bound < ms && bound < latenessMaxMs {
		bound += max(bound/10, 1)
	}
	return bound
}

// flushStats adds the buffered counts to the per-minute statistics in
// Redis, one script call per minute in one round trip. Counts that could
// not be written stay buffered for the next flush.
func (wk *worker) flushStats(ctx context.Context) error {
	w := wk.w
	taken := wk.stats.take()
	if len(taken) == 0 {
		return nil
	}
	calls := make([]redisclient.ScriptCall, 0, len(taken))
	minutes := make([]int64, 0, len(taken))
	for minute, counts := range taken {
		args := make([]any, 0, 1+2*len(counts))
		args = append(args, statsTTL.Milliseconds())
		for field, n := range counts {
			args = append(args, field, n)
		}
		calls = append(calls, redisclient.ScriptCall{Script: w.scripts.StatsAdd, Keys: []string{w.keys.Stats(minute)}, Args: args})
		minutes = append(minutes, minute)
	}
	replies, err := w.redis.EvalBatch(ctx, calls)
	if err != nil {
		wk.stats.putBack(taken, w.now())
		return storeErr("flush statistics", err)
	}
	var firstErr error
	failed := make(map[int64]map[string]int64)
	for i, r := range replies {
		if r.Err != nil {
			failed[minutes[i]] = taken[minutes[i]]
			if firstErr == nil {
				firstErr = storeErr("flush statistics", r.Err)
			}
		}
	}
	wk.stats.putBack(failed, w.now())
	return firstErr
}

// statsLoop flushes the statistics every statsFlushEvery and sends a
// heartbeat every heartbeatEvery, until the worker stops pulling. The last
// flush and the farewell are Stop's (after the callbacks in flight end).
func (wk *worker) statsLoop() {
	defer wk.loops.Done()
	ticker := time.NewTicker(statsFlushEvery)
	defer ticker.Stop()
	var lastBeat time.Time
	failing := false
	for {
		// Not loopCtx: a flush cut off by Stop after Redis counted it would
		// be put back and counted again by Stop's last flush.
		ctx, cancel := context.WithTimeout(context.Background(), statsFlushTimeout)
		err := wk.flushStats(ctx)
		if err == nil && time.Since(lastBeat) >= heartbeatEvery {
			if err = wk.heartbeat(ctx); err == nil {
				lastBeat = time.Now()
			}
		}
		cancel()
		if err != nil && !failing && wk.loopCtx.Err() == nil {
			wk.w.log.Warn("rtimewheel: could not write statistics or heartbeat; retrying", "error", err)
		}
		failing = err != nil
		select {
		case <-wk.loopCtx.Done():
			return
		case <-ticker.C:
		}
	}
}
