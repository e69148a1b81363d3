package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
	"github.com/rtimewheel/rtimewheel/util"
)

// scalePhase adds cfg.scaleTasks tasks that wait in the future and reports
// Redis's memory per task beyond its body, then the pull time per tick of
// a worker that scans the slice holding them against one that scans an
// empty namespace, both running side by side.
//
// The waiting tasks are all due in the 15 seconds after dueFrom, which is
// 45 s into a minute at least three minutes ahead: one slice (per shard)
// holds them all, the worst case for a pull. The measuring workers run on
// a clock set 30 s before dueFrom, so they scan exactly that slice (its
// tasks just beyond their horizon) and fire nothing.
func (e *env) scalePhase(ctx context.Context) error {
	cfg := e.cfg
	n := cfg.scaleTasks
	full, empty := e.namespace("scale"), e.namespace("empty")
	rc := e.client()
	defer rc.Close()
	w := rtimewheel.NewRTimeWheel(rc, nil, e.options(full, rtimewheel.WithoutWorker())...)
	defer w.Stop()
	dueFrom := time.Now().Add(3 * time.Minute).Truncate(time.Minute).Add(45 * time.Second)

	const keyFormat = "task-%07d"
	// Create the watermark first, so "before" counts nothing of ours but
	// the per-task cost; the warm-up task is also the sample of what the
	// wheel stores per task.
	sample, err := e.storedSample(ctx, w, rc, full, "warm-up", dueFrom)
	if err != nil {
		return err
	}
	rawPerTask, err := e.rawMemory(ctx, n, keyFormat, dueFrom, nil)
	if err != nil {
		return err
	}
	rawName := "raw minimum memory per task beyond body (ZADD + HSET)"
	e.res.add(row{Name: rawName, Value: rawPerTask, Unit: "bytes"})
	rawSame, err := e.rawMemory(ctx, n, keyFormat, dueFrom, &sample)
	if err != nil {
		return err
	}
	rawSameName := "raw memory of the same data per task beyond body (ZADD + HSET stored task + HSET index)"
	e.res.add(row{Name: rawSameName, Value: rawSame, Unit: "bytes"})

	before, err := usedMemory(ctx, e.redis)
	if err != nil {
		return err
	}
	err = e.addSpread(ctx, w, n, "scale: adding waiting tasks", func(i int) rtimewheel.TaskAt {
		return rtimewheel.TaskAt{Key: fmt.Sprintf(keyFormat, i), ExecuteAt: dueFrom.Add(time.Duration(i) * 15 * time.Second / time.Duration(n))}
	})
	if err != nil {
		return err
	}
	after, err := usedMemory(ctx, e.redis)
	if err != nil {
		return err
	}
	perTask := float64(after-before)/float64(n) - float64(cfg.bodyBytes)
	okMem := perTask <= 250
	e.res.add(row{Name: fmt.Sprintf("memory per waiting task beyond its %d-byte body", cfg.bodyBytes),
		Value: perTask, Unit: "bytes", Limit: rawName, Ratio: ratio(perTask, rawPerTask), Target: "≤ 250 bytes", Met: &okMem})
	e.res.add(row{Name: fmt.Sprintf("memory per waiting task beyond its %d-byte body (vs raw memory of the same data)", cfg.bodyBytes),
		Value: perTask, Unit: "bytes", Limit: rawSameName, Ratio: ratio(perTask, rawSame)})

	if kinds, body, err := memoryByKind(ctx, e.redis, full); err == nil {
		var parts []string
		for _, k := range []string{"due", "body", "index"} {
			parts = append(parts, fmt.Sprintf("%s %.0f B", k, float64(kinds[k])/float64(n)))
		}
		field, _ := rc.Do(ctx, "HRANDFIELD", body)
		sample, _ := rc.Do(ctx, "HSTRLEN", body, cast.ToString(field))
		e.res.note("memory: %d waiting tasks with %d-byte keys; per task by structure (MEMORY USAGE, sampled; body included): %s; one stored task is %d bytes (version, JSON with the %d-byte body)",
			n, len(fmt.Sprintf(keyFormat, 0)), strings.Join(parts, ", "), cast.ToInt64(sample), cfg.bodyBytes)
	}

	// Both namespaces scan from the same watermark minute.
	wm, err := rc.Do(ctx, "GET", util.NewKeys(full).Watermark())
	if err != nil {
		return fmt.Errorf("read watermark: %w", err)
	}
	if _, err := rc.Do(ctx, "SET", util.NewKeys(empty).Watermark(), wm); err != nil {
		return fmt.Errorf("set watermark: %w", err)
	}
	fullPulls, emptyPulls, fired, err := e.measurePulls(ctx, full, empty, dueFrom.Add(-30*time.Second))
	if err != nil {
		return err
	}
	if fired > 0 {
		return fmt.Errorf("pull measurement: %d waiting tasks fired early", fired)
	}
	emptyMed, fullMed := medianDuration(emptyPulls), medianDuration(fullPulls)
	e.res.add(row{Name: "pull per tick, nothing waiting (median)", Value: float64(emptyMed.Microseconds()), Unit: "µs"})
	e.res.add(row{Name: fmt.Sprintf("pull per tick, %d waiting in the scanned slice (median)", n), Value: float64(fullMed.Microseconds()), Unit: "µs",
		Limit: "nothing waiting", Ratio: ratio(float64(fullMed), float64(emptyMed)), Target: "ratio ≤ 1.2",
		Met: func() *bool { ok := float64(fullMed) <= 1.2*float64(emptyMed); return &ok }()})
	e.res.note("pull times: medians of %d pulls each, tick 50 ms, the two workers taking %d turns each; p90 %s with nothing waiting, %s with %d waiting",
		len(fullPulls), pullRounds, fmtDur(p90(emptyPulls)), fmtDur(p90(fullPulls)), n)
	return nil
}

// rawMemory measures the least any design needs in Redis for n waiting
// tasks: a sorted set of key -> due time and a hash of key -> body, written
// with pipelined ZADD and HSET; it returns the bytes per task beyond the
// body, and deletes the keys again. With same, the hash holds the wheel's
// stored task in place of the body and an index of util.IndexBuckets
// hashes maps each key to the wheel's location: what the wheel stores,
// written raw.
func (e *env) rawMemory(ctx context.Context, n int, keyFormat string, due time.Time, same *stored) (float64, error) {
	ns := e.namespace("rawmem")
	keys := util.NewKeys(ns)
	zkey, hkey := "{"+ns+"}:due", "{"+ns+"}:body"
	body := string(e.body)
	if same != nil {
		body = same.body
	}
	buckets := map[string]bool{} // index keys written, deleted at the end
	before, err := usedMemory(ctx, e.redis)
	if err != nil {
		return 0, err
	}
	pool := &redis.Pool{MaxIdle: 1, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", e.addr) }}
	defer pool.Close()
	conn, err := pool.GetContext(ctx)
	if err != nil {
		return 0, fmt.Errorf("raw memory: %w", err)
	}
	defer conn.Close()
	score := due.UnixMilli()
	for from := 0; from < n; from += e.cfg.batchSize {
		e.p.printf("scale: raw minimum, writing %d/%d", from, n)
		for i := from; i < min(from+e.cfg.batchSize, n); i++ {
			key := fmt.Sprintf(keyFormat, i)
			conn.Send("ZADD", zkey, score+int64(i%15000), key)
			conn.Send("HSET", hkey, key, body)
			if same != nil {
				bucket := keys.Index(key)
				buckets[bucket] = true
				conn.Send("HSET", bucket, key, same.location)
			}
		}
		if _, err := conn.Do(""); err != nil {
			return 0, fmt.Errorf("raw memory: %w", err)
		}
	}
	after, err := usedMemory(ctx, e.redis)
	if err != nil {
		return 0, err
	}
	del := []any{zkey, hkey}
	for b := range buckets {
		del = append(del, b)
	}
	if _, err := conn.Do("DEL", del...); err != nil {
		return 0, fmt.Errorf("raw memory: %w", err)
	}
	return float64(after-before)/float64(n) - float64(e.cfg.bodyBytes), nil
}

// pullRounds is how many times the empty and the full namespace take turns
// in the pull measurement.
const pullRounds = 5

// measurePulls measures the pull time per tick of a worker on each
// namespace, on a clock that reads at when each turn starts. The two take
// turns, one
// worker at a time for cfg.pulls/pullRounds pulls each turn, so that they
// neither queue behind each other's pulls in Redis nor see different loads
// of the machine. The first two pulls of each turn (script loading, the
// watermark catching up) are dropped. It also returns how many callbacks
// fired (there should be none).
func (e *env) measurePulls(ctx context.Context, full, empty string, at time.Time) (fullPulls, emptyPulls []time.Duration, fired int64, err error) {
	const tick, skip = 50 * time.Millisecond, 2
	per := max(e.cfg.pulls/pullRounds, 1)
	var calls countingCaller
	got := map[string][]time.Duration{}
	for r := range pullRounds {
		for _, ns := range []string{empty, full} {
			e.p.printf("scale: pull time, turn %d/%d of %s", r+1, pullRounds, ns)
			ds, err := e.pullTurn(ctx, ns, at, tick, per+skip, &calls)
			if err != nil {
				return nil, nil, 0, err
			}
			got[ns] = append(got[ns], ds[skip:]...)
		}
	}
	return got[full], got[empty], calls.n.Load(), nil
}

// pullTurn runs one worker on ns, on a clock that reads at when it starts,
// until it has pulled n times, and returns the durations of those pulls.
func (e *env) pullTurn(ctx context.Context, ns string, at time.Time, tick time.Duration, n int, calls *countingCaller) ([]time.Duration, error) {
	offset := time.Until(at)
	clock := func() time.Time { return time.Now().Add(offset) }
	rc := e.client()
	defer rc.Close()
	var mu sync.Mutex
	var ds []time.Duration
	done := make(chan struct{})
	w := rtimewheel.NewRTimeWheel(rc, calls, e.options(ns, rtimewheel.WithTick(tick),
		rtimewheel.WithClock(clock), rtimewheel.WithConcurrency(10),
		rtimewheel.WithPullHook(func(ev rtimewheel.PullEvent) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Err != nil || len(ds) >= n {
				return
			}
			if ds = append(ds, ev.Duration); len(ds) == n {
				close(done)
			}
		}))...)
	defer w.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(20 * time.Second):
		return nil, fmt.Errorf("pull measurement on %s: fewer than %d pulls in 20 s", ns, n)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(ds), nil
}

// countingCaller counts callbacks and answers 200 at once.
type countingCaller struct{ n atomic.Int64 }

func (c *countingCaller) Call(context.Context, httpclient.Callback) httpclient.Result {
	c.n.Add(1)
	return httpclient.Result{Delivered: true, StatusCode: 200}
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func p90(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return percentile(s, 90)
}

func fmtDur(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + " µs" }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
