package rtimewheel

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

// AddTask schedules task under key for executeAt; a time in the past means
// now (the task fires at once and still reports executeAt as its scheduled
// time). A zero executeAt means now. A task already scheduled, retrying or dead under key is replaced:
// one key, at most one task. AddTask returns an error matching
// ErrInvalidTask (naming the field) without writing anything when the task
// is invalid, and one matching ErrUnavailable when Redis cannot be reached;
// it blocks at most until ctx is done or Redis's dial and read timeouts.
// When ctx ends first, the task may or may not have been stored.
//
// Concurrent calls share round trips: while one batch of adds is being
// written, the calls that arrive wait and are written together as the next
// batch (see addQueue), so many goroutines adding one task each cost Redis
// about what AddTasks costs.
func (w *RTimeWheel) AddTask(ctx context.Context, key string, task *RTaskElement, executeAt time.Time) error {
	if err := w.checkStopped("add task"); err != nil {
		return err
	}
	p, err := w.prepareAdd(util.Millis(w.now()), TaskAt{Key: key, Task: task, ExecuteAt: executeAt})
	if err == nil {
		err = w.adds.write(ctx, w, p)
	}
	if err != nil {
		return fmt.Errorf("add task %q: %w", key, err)
	}
	return nil
}

// pendingAdd is one valid task of a batch on its way into Redis.
type pendingAdd struct {
	item    int // index in the caller's batch
	task    *storedTask
	version string
	loc     location
	encoded string
}

// prepareAdd validates and encodes one task to add at now (ms).
func (w *RTimeWheel) prepareAdd(now int64, it TaskAt) (pendingAdd, error) {
	t, err := newStoredTask(it.Key, it.Task)
	if err != nil {
		return pendingAdd{}, err
	}
	// A past executeAt fires now but stays the scheduled time that
	// callbacks (Rtw-Scheduled-At) and GetTask report: the caller's
	// "now" and ours differ by the time the request took to get here.
	scheduled := now
	if !it.ExecuteAt.IsZero() {
		scheduled = util.CeilMillis(it.ExecuteAt)
	}
	due := max(scheduled, now)
	t.ScheduledMs, t.DueMs = scheduled, due
	v := newVersion()
	encoded, err := encodeTask(v, t)
	if err != nil {
		return pendingAdd{}, err
	}
	// The shard is set by storeAdds, once the shard count is known.
	return pendingAdd{task: t, version: v, encoded: encoded,
		loc: location{version: v, minute: util.EpochMinute(due)}}, nil
}

// AddTasks schedules a batch of tasks, as AddTask does for one, in one
// round trip to Redis per slice touched plus one per index bucket (pipelined,
// so on a standalone Redis the whole batch is one round trip, and a second
// only when tasks are replaced). Invalid items are not written and do not
// stop the others. When any item fails, the error is a *BatchError whose
// Errs has one entry per item, nil for those stored; a later item with the
// same key as an earlier one replaces it.
func (w *RTimeWheel) AddTasks(ctx context.Context, items []TaskAt) error {
	if err := w.checkStopped("add tasks"); err != nil {
		return err
	}
	errs := make([]error, len(items))
	failed := false
	now := util.Millis(w.now())
	adds := make([]pendingAdd, 0, len(items))
	for i, it := range items {
		p, err := w.prepareAdd(now, it)
		if err != nil {
			errs[i], failed = err, true
			continue
		}
		p.item = i
		adds = append(adds, p)
	}
	for _, f := range w.storeAdds(ctx, adds) {
		errs[f.item], failed = f.err, true
	}
	if failed {
		return &BatchError{Errs: errs}
	}
	return nil
}

// storeAdds writes adds to Redis and returns the items that failed. Of several adds with the same key the last is written;
// the earlier ones share its fate.
func (w *RTimeWheel) storeAdds(ctx context.Context, adds []pendingAdd) []addFailure {
	if len(adds) == 0 {
		return nil
	}
	unique := adds
	var last map[string]int // key -> index in unique, when adds repeat a key
	if len(adds) > 1 {
		last = make(map[string]int, len(adds))
		unique = adds[:0:0]
		for _, p := range adds {
			if j, dup := last[p.task.Key]; dup {
				unique[j] = p // the later item wins; the earlier shares its fate
				continue
			}
			last[p.task.Key] = len(unique)
			unique = append(unique, p)
		}
	}
	var failures []addFailure
	err := w.ready(ctx)
	if err == nil {
		for i := range unique {
			unique[i].loc.shard = util.Shard(unique[i].task.Key, w.cfg.shards)
		}
		err = w.ensureWatermark(ctx)
	}
	if err != nil {
		for _, p := range unique {
			failures = append(failures, addFailure{p.item, err})
		}
	} else {
		failures = w.writeAdds(ctx, unique)
		soonest := unique[0].task.DueMs
		for _, p := range unique[1:] {
			soonest = min(soonest, p.task.DueMs)
		}
		w.signalNear(ctx, soonest)
	}
	if len(failures) > 0 && len(unique) < len(adds) {
		byItem := make(map[int]error, len(failures))
		for _, f := range failures {
			byItem[f.item] = f.err
		}
		for _, p := range adds {
			written := unique[last[p.task.Key]].item
			if err, ok := byItem[written]; ok && written != p.item {
				failures = append(failures, addFailure{p.item, err})
			}
		}
	}
	return failures
}

type addFailure struct {
	item int
	err  error
}

// writeAdds writes the slices and the index in one pipeline, then removes
// the older entries of replaced keys that lived in another slice: the new
// entry first, the old after, so a crash in between may fire a task twice
// but never loses it.
func (w *RTimeWheel) writeAdds(ctx context.Context, adds []pendingAdd) []addFailure {
	type sliceID struct {
		minute int64
		shard  int
	}
	bySlice := make(map[sliceID][]int) // slice -> indexes in adds
	var order []sliceID
	for i, p := range adds {
		id := sliceID{p.loc.minute, p.loc.shard}
		if _, ok := bySlice[id]; !ok {
			order = append(order, id)
		}
		bySlice[id] = append(bySlice[id], i)
	}
	calls := make([]redisclient.ScriptCall, 0, len(order)+len(adds))
	for _, id := range order {
		members := bySlice[id]
		args := make([]any, 0, 3*len(members))
		for _, i := range members {
			args = append(args, adds[i].task.Key, adds[i].task.DueMs, adds[i].encoded)
		}
		calls = append(calls, redisclient.ScriptCall{Script: w.scripts.Add, Keys: w.slice(id.minute, id.shard), Args: args})
	}
	// One index call per bucket; indexOf[i] finds adds[i]'s old location.
	type slot struct{ call, pos int }
	indexOf := make([]slot, len(adds))
	byBucket := make(map[string]int) // index key -> position in calls
	for i, p := range adds {
		bucket := w.keys.Index(p.task.Key)
		n, ok := byBucket[bucket]
		if !ok {
			n = len(calls)
			byBucket[bucket] = n
			calls = append(calls, redisclient.ScriptCall{Script: w.scripts.IndexSwap, Keys: []string{bucket}})
		}
		indexOf[i] = slot{n, len(calls[n].Args) / 2}
		calls[n].Args = append(calls[n].Args, p.task.Key, p.loc.String())
	}
	replies, err := w.redis.EvalBatch(ctx, calls)
	var failures []addFailure
	if err != nil {
		err = storeErr("write tasks", err)
		for _, p := range adds {
			failures = append(failures, addFailure{p.item, err})
		}
		return failures
	}
	sliceFailed := make(map[int]error) // index in adds -> error
	for n, id := range order {
		if replies[n].Err != nil {
			for _, i := range bySlice[id] {
				sliceFailed[i] = storeErr("write slice", replies[n].Err)
			}
		}
	}
	var cleanup []redisclient.ScriptCall
	for i, p := range adds {
		reply := replies[indexOf[i].call]
		var previous any
		if olds := cast.ToSlice(reply.Value); indexOf[i].pos < len(olds) {
			previous = olds[indexOf[i].pos]
		}
		switch {
		case sliceFailed[i] != nil:
			failures = append(failures, addFailure{p.item, sliceFailed[i]})
			continue
		case reply.Err != nil:
			failures = append(failures, addFailure{p.item, storeErr("write index", reply.Err)})
			continue
		case previous == nil:
			continue // a new key
		}
		old, err := parseLocation(cast.ToString(previous))
		if err != nil {
			w.log.Warn("rtimewheel: ignoring a malformed index entry", "key", p.task.Key, "error", err)
			continue
		}
		if call, ok := w.clearOld(p, old); ok {
			cleanup = append(cleanup, call)
		}
	}
	if len(cleanup) > 0 {
		// The new entries are stored; failing to clear an old one can only
		// make it fire once more, so report it in the log, not to the caller.
		replies, err := w.redis.EvalBatch(ctx, cleanup)
		if err == nil {
			for _, r := range replies {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			w.log.Warn("rtimewheel: could not remove the older entries of replaced tasks; they may fire once more", "error", err)
		}
	}
	return failures
}

// clearOld returns the call that removes a replaced key's older entry, if
// it lives elsewhere than the new one (in the same slice, add.lua has
// overwritten it already).
func (w *RTimeWheel) clearOld(p pendingAdd, old location) (redisclient.ScriptCall, bool) {
	if old.dead {
		return redisclient.ScriptCall{Script: w.scripts.DeadTake, Keys: w.keys.Dead().List(),
			Args: []any{p.task.Key, old.version}}, true
	}
	if old.minute == p.loc.minute && old.shard == p.loc.shard {
		return redisclient.ScriptCall{}, false
	}
	return redisclient.ScriptCall{Script: w.scripts.Remove, Keys: w.slice(old.minute, old.shard),
		Args: []any{p.task.Key, old.version, "0"}}, true
}
