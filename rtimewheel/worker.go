package rtimewheel

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

const (
	// pullBatch bounds the tasks one pull script takes from one slice.
	pullBatch = 1000
	// scanPipeline bounds the slice pulls sent in one round trip.
	scanPipeline = 512
	// maxScanMinutes bounds the minutes scanned behind the present in one
	// tick while catching up after a long outage; the watermark advances
	// past drained minutes, so the next tick goes on from there.
	maxScanMinutes = 4096
	// drainGrace is how long after a minute ends before its slices may be
	// drained and the watermark moved past it. A writer whose clock lags
	// Redis's by more than this could add to a drained minute.
	drainGrace = time.Minute
	// tombstoneTTL is how long tombstones outlive their slice's drain.
	tombstoneTTL = 10 * time.Minute
	// batchTimeout bounds each batch of callbacks after its last due time.
	batchTimeout = 30 * time.Second
	// maxPullBackoff caps the wait between pulls while Redis fails.
	maxPullBackoff = 5 * time.Second
	// pullTimeout bounds one pull, all its round trips included.
	pullTimeout = 30 * time.Second
	// minPullGap spaces out the extra pulls that adds of tasks due before
	// the latest pull's horizon ask for.
	minPullGap = 10 * time.Millisecond
	// clockCheckEvery is how often the worker measures its clock against
	// Redis's.
	clockCheckEvery = 30 * time.Second
)

// leased is a task a worker pulled and owns until its lease ends.
type leased struct {
	key     string
	version string
	task    *storedTask
	minute  int64 // the slice it was pulled from
	shard   int
	batch   *batch
}

// batch is the tasks of one pull; their callbacks share a context that
// ends batchTimeout after the last of them is due.
type batch struct {
	ctx     context.Context
	cancel  context.CancelFunc
	pending atomic.Int32
}

func (b *batch) done() {
	if b.pending.Add(-1) == 0 {
		b.cancel()
	}
}

// worker pulls due tasks and fires them. One pull loop fills a local timer
// queue; a dispatcher hands each task to a fixed pool of callback
// goroutines at its exact millisecond.
type worker struct {
	w *RTimeWheel

	loopCtx   context.Context // ends when the worker stops pulling
	stopLoop  context.CancelFunc
	callCtx   context.Context // ends only when the worker is halted
	haltCalls context.CancelFunc
	halted    atomic.Bool
	inFlight  atomic.Int64
	loops     sync.WaitGroup // pull loop and dispatcher
	pool      sync.WaitGroup // callback goroutines
	ready     chan *leased
	wake      chan struct{}
	// pulledTo is the horizon (ms) of the latest pull. A task added due
	// before it may have missed that pull, so adding one sends on
	// pullSoon and the pull loop pulls again at once instead of a tick
	// later: a task added for the next moment fires on time too.
	pulledTo atomic.Int64
	pullSoon chan struct{}
	// nearOwn is the value of the near counter after this handle's latest
	// bump of it; nearLoop does not pull again for a change that was only
	// that bump, whose task added() already had pulled.
	nearOwn    atomic.Int64
	mu         sync.Mutex
	queue      dueQueue
	lastClockC time.Time
	completer  *completer

	id      string // names the worker in heartbeats
	host    string
	started time.Time
	stats   *statsBuffer // outcomes counted, not yet flushed to Redis
}

func newWorker(w *RTimeWheel) *worker {
	host := hostname()
	wk := &worker{w: w, ready: make(chan *leased), wake: make(chan struct{}, 1), pullSoon: make(chan struct{}, 1),
		id: newWorkerID(host), host: host, started: w.now(), stats: newStatsBuffer()}
	wk.loopCtx, wk.stopLoop = context.WithCancel(context.Background())
	wk.callCtx, wk.haltCalls = context.WithCancel(context.Background())
	return wk
}

func (wk *worker) start() {
	wk.completer = newCompleter(wk.w)
	wk.loops.Add(4)
	go wk.pullLoop()
	go wk.dispatch()
	go wk.statsLoop()
	go wk.nearLoop()
	wk.pool.Add(wk.w.cfg.concurrency)
	for range wk.w.cfg.concurrency {
		go wk.callbackLoop()
	}
}

// stop ends the worker. Graceful: tasks not yet fired are handed back and
// in-flight callbacks finish and record their outcome. Otherwise (halt, for
// tests of crashes) everything is abandoned as if the process died.
func (wk *worker) stop(graceful bool) {
	if !graceful {
		wk.halted.Store(true)
		wk.haltCalls()
	}
	wk.stopLoop()
	wk.loops.Wait()
	if graceful {
		wk.handBack()
	}
	wk.pool.Wait()
	wk.completer.close()
	if graceful {
		wk.farewell()
	}
}

// farewell writes the last statistics and takes the worker off the
// registry, so the dashboard stops listing it at once.
func (wk *worker) farewell() {
	ctx, cancel := context.WithTimeout(context.Background(), statsFlushTimeout)
	defer cancel()
	if err := wk.flushStats(ctx); err != nil {
		wk.w.log.Warn("rtimewheel: could not write the last statistics", "error", err)
	}
	if err := wk.leave(ctx); err != nil {
		wk.w.log.Warn("rtimewheel: could not leave the worker registry; it drops out after its heartbeat expires", "error", err)
	}
}

func (wk *worker) pullLoop() {
	defer wk.loops.Done()
	log := wk.w.log
	ticker := time.NewTicker(wk.w.cfg.tick)
	defer ticker.Stop()
	failures := 0
	for {
		wk.checkClock()
		start := time.Now()
		// A pull runs to its end even when Stop comes meanwhile: cut off
		// after Redis ran it, its tasks would stay leased by nobody until
		// the lease ends. Stop only interrupts the wait between pulls.
		pullCtx, cancel := context.WithTimeout(context.Background(), pullTimeout)
		n, err := wk.pullAll(pullCtx)
		cancel()
		if hook := wk.w.cfg.onPull; hook != nil {
			hook(PullEvent{Tasks: n, Duration: time.Since(start), Err: err})
		}
		wait := time.Duration(0)
		switch {
		case err != nil:
			failures++
			// From 200 ms (or two ticks, if shorter) doubling to 5 s: a
			// worker is back soon after Redis is.
			wait = min(min(wk.w.cfg.tick, 100*time.Millisecond)<<min(failures, 16), maxPullBackoff)
			if failures == 1 || failures%30 == 0 {
				log.Error("rtimewheel: pull failed; retrying", "error", err, "failures", failures, "retry_in", wait)
			}
		case failures > 0:
			log.Info("rtimewheel: pull works again", "after_failures", failures)
			failures = 0
		}
		if wait > 0 {
			select {
			case <-wk.loopCtx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		select {
		case <-wk.loopCtx.Done():
			return
		case <-ticker.C:
		case <-wk.pullSoon:
			// Pulls asked for by adds come at most every minPullGap.
			if gap := minPullGap - time.Since(start); gap > 0 {
				select {
				case <-wk.loopCtx.Done():
					return
				case <-time.After(gap):
				}
			}
		}
	}
}

// added tells the worker that a task due at dueMs was stored. If the
// latest pull's horizon already covers dueMs, that pull may have run before
// the task was there, so the worker pulls again now.
func (wk *worker) added(dueMs int64) {
	if dueMs > wk.pulledTo.Load() {
		return // the next regular pull takes it in time
	}
	wk.pullNow()
}

// pullNow asks the pull loop for a pull at once.
func (wk *worker) pullNow() {
	select {
	case wk.pullSoon <- struct{}{}:
	default: // a pull is asked for already
	}
}

// checkClock measures Redis's clock against ours every clockCheckEvery,
// unless the clock was set with WithClock.
func (wk *worker) checkClock() {
	if wk.w.cfg.customClock || time.Since(wk.lastClockC) < clockCheckEvery {
		return
	}
	wk.lastClockC = time.Now()
	ctx, cancel := context.WithTimeout(wk.loopCtx, time.Second)
	defer cancel()
	sent := time.Now()
	reply, err := wk.w.redis.Do(ctx, "TIME")
	got := time.Now()
	parts, _ := cast.ToSliceE(reply)
	if err != nil || len(parts) != 2 {
		return
	}
	redisNow := time.Unix(cast.ToInt64(cast.ToString(parts[0])), cast.ToInt64(cast.ToString(parts[1]))*1000)
	ours := sent.Add(got.Sub(sent) / 2)
	offset := redisNow.Sub(ours)
	if old := time.Duration(wk.w.clockOffset.Swap(int64(offset))); (offset < -time.Second) != (old < -time.Second) {
		wk.w.log.Warn("rtimewheel: this host's clock is ahead of Redis's; firing by Redis's clock", "ahead_by", -offset)
	}
}

type sliceRef struct {
	minute int64
	shard  int
}

// pullAll takes every task due up to two ticks ahead from the
// slices between the watermark and that horizon, queues them for firing,
// and moves the watermark past the minutes found drained. It returns how
// many tasks it took.
func (wk *worker) pullAll(ctx context.Context) (int, error) {
	w := wk.w
	now := util.Millis(w.now())
	horizon := now + 2*w.cfg.tick.Milliseconds()
	wk.pulledTo.Store(horizon)
	if err := w.ready(ctx); err != nil {
		return 0, err
	}
	if err := w.ensureWatermark(ctx); err != nil {
		return 0, err
	}
	reply, err := w.redis.Do(ctx, "GET", w.keys.Watermark())
	if err != nil {
		return 0, storeErr("read watermark", err)
	}
	if reply == nil {
		// Deleted behind our back (a flush): create it again next tick
		// rather than scan from the epoch.
		w.watermarkSet.Store(false)
		return 0, nil
	}
	first := cast.ToInt64(cast.ToString(reply))
	last := util.EpochMinute(horizon)
	finalBefore := util.EpochMinute(now - drainGrace.Milliseconds())

	var minutes []int64
	for m := first; m <= last && m < first+maxScanMinutes; m++ {
		minutes = append(minutes, m)
	}
	for m := max(last-2, first+maxScanMinutes); m <= last; m++ {
		minutes = append(minutes, m) // the present, while catching up
	}
	var slices []sliceRef
	for _, m := range minutes {
		for s := range w.cfg.shards {
			slices = append(slices, sliceRef{m, s})
		}
	}

	drained := make(map[int64]int) // minute -> shards drained
	taken := 0
	for len(slices) > 0 {
		chunk := slices[:min(len(slices), scanPipeline)]
		slices = slices[len(chunk):]
		calls := make([]redisclient.ScriptCall, len(chunk))
		for i, sl := range chunk {
			final := "0"
			if sl.minute < finalBefore {
				final = "1"
			}
			calls[i] = redisclient.ScriptCall{Script: w.scripts.Pull, Keys: w.slice(sl.minute, sl.shard),
				Args: []any{now, horizon, w.cfg.lease.Milliseconds(), pullBatch, final, tombstoneTTL.Milliseconds()}}
		}
		replies, err := w.redis.EvalBatch(ctx, calls)
		if err != nil {
			return taken, storeErr("pull", err)
		}
		for i, r := range replies {
			if r.Err != nil {
				return taken, storeErr("pull", r.Err)
			}
			more, isDrained, n := wk.accept(chunk[i], r.Value)
			taken += n
			if more {
				slices = append(slices, chunk[i]) // pull again
			}
			if isDrained {
				drained[chunk[i].minute]++
			}
		}
	}

	next := first
	for next < finalBefore && drained[next] == w.cfg.shards {
		next++
	}
	if next > first {
		if _, err := w.redis.Eval(ctx, w.scripts.Watermark, []string{w.keys.Watermark()}, next); err != nil {
			return taken, storeErr("advance watermark", err)
		}
	}
	return taken, nil
}

// accept queues the tasks of one pull reply for firing.
func (wk *worker) accept(sl sliceRef, value any) (more, drained bool, n int) {
	flat, err := cast.ToSliceE(value)
	if err != nil || len(flat) < 2 {
		wk.w.log.Error("rtimewheel: malformed pull reply", "error", err)
		return false, false, 0
	}
	more, drained = cast.ToInt(flat[0]) == 1, cast.ToInt(flat[1]) == 1
	items := make([]*leased, 0, (len(flat)-2)/2)
	var lastDue int64
	for i := 2; i+1 < len(flat); i += 2 {
		key := cast.ToString(flat[i])
		version, t, err := decodeTask(key, cast.ToString(flat[i+1]))
		if err != nil {
			// Left leased: it comes back after the lease, and is logged
			// again, rather than being dropped silently.
			wk.w.log.Error("rtimewheel: cannot decode a pulled task", "key", key, "error", err)
			continue
		}
		items = append(items, &leased{key: key, version: version, task: t, minute: sl.minute, shard: sl.shard})
		lastDue = max(lastDue, t.DueMs)
	}
	if len(items) == 0 {
		return more, drained, 0
	}
	b := &batch{}
	b.ctx, b.cancel = context.WithDeadline(wk.callCtx, util.FromMillis(lastDue).Add(batchTimeout))
	b.pending.Store(int32(len(items)))
	wk.mu.Lock()
	for _, it := range items {
		it.batch = b
		heap.Push(&wk.queue, it)
	}
	wk.mu.Unlock()
	select {
	case wk.wake <- struct{}{}:
	default:
	}
	return more, drained, len(items)
}

// dispatch hands each queued task to the callback pool at its due time.
func (wk *worker) dispatch() {
	defer wk.loops.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var next *leased
		wait := time.Hour
		wk.mu.Lock()
		if len(wk.queue) > 0 {
			wait = util.FromMillis(wk.queue[0].task.DueMs).Sub(wk.w.now())
			if wait <= 0 {
				next = heap.Pop(&wk.queue).(*leased)
			}
		}
		wk.mu.Unlock()
		if next != nil {
			select {
			case wk.ready <- next:
			case <-wk.loopCtx.Done():
				wk.requeue(next)
				return
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-wk.wake:
		case <-wk.loopCtx.Done():
			return
		}
	}
}

func (wk *worker) requeue(it *leased) {
	wk.mu.Lock()
	heap.Push(&wk.queue, it)
	wk.mu.Unlock()
}

func (wk *worker) callbackLoop() {
	defer wk.pool.Done()
	for {
		select {
		case it := <-wk.ready:
			wk.inFlight.Add(1)
			wk.deliver(it)
			wk.inFlight.Add(-1)
			it.batch.done()
		case <-wk.loopCtx.Done():
			return
		}
	}
}

// handBack returns the queued tasks to their slices, due at their own time,
// so other workers fire them on time instead of after the lease.
func (wk *worker) handBack() {
	wk.mu.Lock()
	items := wk.queue
	wk.queue = nil
	wk.mu.Unlock()
	if len(items) == 0 {
		return
	}
	w := wk.w
	bySlice := make(map[sliceRef][]any)
	for _, it := range items {
		ref := sliceRef{it.minute, it.shard}
		bySlice[ref] = append(bySlice[ref], it.key, it.version, it.task.DueMs)
		it.batch.done()
	}
	calls := make([]redisclient.ScriptCall, 0, len(bySlice))
	for ref, args := range bySlice {
		calls = append(calls, redisclient.ScriptCall{Script: w.scripts.Handback, Keys: w.slice(ref.minute, ref.shard), Args: args})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	handed := 0
	replies, err := w.redis.EvalBatch(ctx, calls)
	for _, r := range replies {
		if r.Err != nil {
			err = r.Err
		}
		handed += cast.ToInt(r.Value)
	}
	if err != nil {
		w.log.Error("rtimewheel: could not hand back unfired tasks; they fire after their lease", "tasks", len(items), "error", err)
		return
	}
	w.log.Info("rtimewheel: handed back unfired tasks", "tasks", handed)
	soonest := items[0].task.DueMs
	for _, it := range items[1:] {
		soonest = min(soonest, it.task.DueMs)
	}
	w.signalNear(ctx, soonest) // the other workers pulled past them already
}

// dueQueue is a min-heap of leased tasks by due time.
type dueQueue []*leased

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].task.DueMs < q[j].task.DueMs }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(*leased)) }
func (q *dueQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return it
}
