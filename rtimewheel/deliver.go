package rtimewheel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

// recordTimeout bounds how long a worker keeps trying to record the outcome
// of a callback while Redis fails. If it gives up, the lease ends and the
// task is fired again: a duplicate, never a loss.
const recordTimeout = 15 * time.Second

// deliver fires one attempt of a leased task and records its outcome.
func (wk *worker) deliver(it *leased) {
	w := wk.w
	t := it.task
	attempt := t.Attempts + 1
	fired := w.now()
	res := w.http.Call(it.batch.ctx, httpclient.Callback{
		Key:         it.key,
		Attempt:     attempt,
		ScheduledAt: util.FromMillis(t.ScheduledMs),
		Method:      t.Method,
		URL:         t.URL,
		Header:      t.Header,
		Body:        t.Body,
		Timeout:     time.Duration(t.TimeoutMs) * time.Millisecond,
	})
	if wk.halted.Load() {
		return // a dead worker records nothing
	}
	ev := CallbackEvent{
		Key: it.key, Attempt: attempt, DueAt: util.FromMillis(t.DueMs), FiredAt: fired,
		Duration: res.Duration, StatusCode: res.StatusCode, Err: res.Err,
	}
	var err error
	switch {
	case res.Delivered:
		ev.Outcome, err = wk.record(it, wk.ack)
	case attempt >= t.MaxAttempts:
		ev.Outcome, err = wk.record(it, func(ctx context.Context, it *leased) (Outcome, error) {
			return wk.bury(ctx, it, res)
		})
	default:
		next := util.Millis(w.now()) + wk.backoff(attempt, res.RetryAfter).Milliseconds()
		ev.NextAttemptAt = util.FromMillis(next)
		ev.Outcome, err = wk.record(it, func(ctx context.Context, it *leased) (Outcome, error) {
			outcome, err := wk.retry(ctx, it, res, next)
			if err == nil && outcome == OutcomeRetry {
				w.signalNear(ctx, next) // a short backoff may be within the pulled horizon
			}
			return outcome, err
		})
	}
	if err != nil {
		w.log.Error("rtimewheel: could not record a callback's outcome; the task fires again after its lease",
			"key", it.key, "attempt", attempt, "error", err)
	}
	wk.stats.record(ev)
	if !res.Delivered {
		attrs := []any{"key", it.key, "attempt", attempt, "max_attempts", t.MaxAttempts, "outcome", string(ev.Outcome)}
		if res.StatusCode != 0 {
			attrs = append(attrs, "status", res.StatusCode)
		}
		attrs = append(attrs, "error", errString(res.Err))
		if ev.Outcome == OutcomeRetry {
			attrs = append(attrs, "next_attempt_at", ev.NextAttemptAt)
		}
		w.log.Warn("rtimewheel: callback failed", attrs...)
	}
	if hook := w.cfg.onCallback; hook != nil {
		hook(ev)
	}
}

// record runs an outcome write, retrying while Redis is unavailable, for up
// to recordTimeout.
func (wk *worker) record(it *leased, write func(context.Context, *leased) (Outcome, error)) (Outcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		outcome, err := write(ctx, it)
		if err == nil || !errors.Is(err, ErrUnavailable) || wk.halted.Load() {
			return outcome, err
		}
		select {
		case <-ctx.Done():
			return outcome, err
		case <-time.After(wait):
			wait = min(2*wait, 2*time.Second)
		}
	}
}

// backoff returns the delay before the attempt after attempt: the minimum
// doubled per failed attempt, ±20% jitter, capped; a longer Retry-After,
// capped likewise, wins.
func (wk *worker) backoff(attempt int, retryAfter time.Duration) time.Duration {
	cfg := wk.w.cfg
	d := cfg.minBackoff
	for i := 1; i < attempt && d < cfg.maxBackoff; i++ {
		d *= 2
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return min(max(d, retryAfter), cfg.maxBackoff)
}

// ack forgets a delivered task through the completer, which batches acks:
// its slice entry (only the version this worker pulled), then its index
// entry (only if it still names that version).
func (wk *worker) ack(ctx context.Context, it *leased) (Outcome, error) {
	return OutcomeDelivered, wk.completer.ack(ctx, it)
}

// retry schedules the next attempt at next (Unix ms). Within the slice the
// task was pulled from, one script does it. Across slices: the new entry
// first, then the index moves to it if it still names this version, then
// the old entry goes; if the index moved on (the task was removed or
// replaced meanwhile) the new entry is taken back instead.
func (wk *worker) retry(ctx context.Context, it *leased, res httpclient.Result, next int64) (Outcome, error) {
	w := wk.w
	t := *it.task
	t.Attempts++
	t.LastError = failureText(res)
	t.DueMs = next
	encoded, err := encodeTask(it.version, &t)
	if err != nil {
		return OutcomeRetry, err
	}
	to := location{version: it.version, minute: util.EpochMinute(next), shard: util.Shard(it.key, w.cfg.shards)}
	if to.minute == it.minute && to.shard == it.shard {
		written, err := w.redis.Eval(ctx, w.scripts.Retry, w.slice(to.minute, to.shard), it.key, it.version, next, encoded, "same")
		if err != nil {
			return OutcomeRetry, storeErr("retry", err)
		}
		if cast.ToInt(written) == 0 {
			return OutcomeDropped, nil
		}
		return OutcomeRetry, nil
	}
	written, err := w.redis.Eval(ctx, w.scripts.Retry, w.slice(to.minute, to.shard), it.key, it.version, next, encoded, "move")
	if err != nil {
		return OutcomeRetry, storeErr("retry", err)
	}
	if cast.ToInt(written) == 0 {
		return wk.drop(ctx, it)
	}
	return wk.moveIndex(ctx, it, to, OutcomeRetry,
		redisclient.ScriptCall{Script: w.scripts.Remove, Keys: w.slice(to.minute, to.shard), Args: []any{it.key, it.version, "0"}})
}

// bury makes a task that failed its last attempt a dead letter, in the
// same order as a retry across slices.
func (wk *worker) bury(ctx context.Context, it *leased, res httpclient.Result) (Outcome, error) {
	w := wk.w
	t := *it.task
	t.Attempts++
	t.LastError = failureText(res)
	t.DiedMs = util.Millis(w.now())
	encoded, err := encodeTask(it.version, &t)
	if err != nil {
		return OutcomeDead, err
	}
	dead := w.keys.Dead().List()
	written, err := w.redis.Eval(ctx, w.scripts.DeadPut, dead, it.key, t.DiedMs, encoded, it.version)
	if err != nil {
		return OutcomeDead, storeErr("dead letter", err)
	}
	if cast.ToInt(written) == 0 {
		return wk.drop(ctx, it)
	}
	return wk.moveIndex(ctx, it, location{version: it.version, dead: true}, OutcomeDead,
		redisclient.ScriptCall{Script: w.scripts.DeadTake, Keys: dead, Args: []any{it.key, it.version}})
}

// moveIndex points the index at the task's new place if it still names
// this version, then removes the pulled entry. If the index names another
// version or none, undo takes the new place back.
func (wk *worker) moveIndex(ctx context.Context, it *leased, to location, outcome Outcome, undo redisclient.ScriptCall) (Outcome, error) {
	w := wk.w
	moved, err := wk.indexCASPulled(ctx, it, to.String())
	if err != nil {
		return outcome, storeErr("move index", err)
	}
	if !moved {
		if _, err := w.redis.Eval(ctx, undo.Script, undo.Keys, undo.Args...); err != nil {
			return OutcomeDropped, storeErr("undo", err)
		}
		return wk.drop(ctx, it)
	}
	if _, err := wk.removePulled(ctx, it); err != nil {
		return outcome, err
	}
	return outcome, nil
}

// indexWriteWait bounds how long a worker waits for the index entry of a
// task it pulled before the add that stored the task wrote its index.
const indexWriteWait = 2 * time.Second

// indexCASPulled moves the index entry of the pulled task it to loc, as
// indexCAS does, and reports whether it did. An add writes the slice entry
// and then the index entry (pipelined, but other clients' commands may run
// in between), so a task due at once can be pulled, fired and failed before
// its index entry exists. No entry while this worker still holds the
// task's lease means just that (a removal deletes the lease too), so it
// waits for the entry, briefly, instead of taking the task for removed and
// dropping it.
func (wk *worker) indexCASPulled(ctx context.Context, it *leased, loc string) (bool, error) {
	w := wk.w
	deadline := time.Now().Add(indexWriteWait)
	for {
		res, err := w.indexCAS(ctx, it.key, it.version, loc)
		if err != nil || res != casMissing || time.Now().After(deadline) {
			return res == casMoved, err
		}
		lease, err := w.redis.Do(ctx, "ZSCORE", w.sliceKeys.Slice(it.minute, it.shard).Lease, it.key)
		if err != nil || lease == nil {
			return false, nil // removed: the lease went with it (or Redis failed: the lease ends, the task fires again)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// drop removes the pulled entry of a task that was removed or replaced
// while its callback was in flight.
func (wk *worker) drop(ctx context.Context, it *leased) (Outcome, error) {
	_, err := wk.removePulled(ctx, it)
	return OutcomeDropped, err
}

func (wk *worker) removePulled(ctx context.Context, it *leased) (any, error) {
	w := wk.w
	reply, err := w.redis.Eval(ctx, w.scripts.Remove, w.slice(it.minute, it.shard), it.key, it.version, "0")
	if err != nil {
		return nil, storeErr("remove pulled entry", err)
	}
	return reply, nil
}

func failureText(res httpclient.Result) string {
	if res.Err != nil {
		return res.Err.Error()
	}
	return fmt.Sprintf("status %d", res.StatusCode)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
