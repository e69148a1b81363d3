package rtimewheel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

// RemoveTask cancels the task under key, however far ahead it is due, and
// whether it is scheduled, retrying or dead. After it returns nil the
// callback does not fire again; an attempt already in flight completes but
// is not retried. executeAt may be zero: the key is looked up. When the key
// is not in the index but executeAt is given, the slice of executeAt is
// searched too. It returns ErrNotFound when there is nothing to remove.
func (w *RTimeWheel) RemoveTask(ctx context.Context, key string, executeAt time.Time) error {
	if err := w.begin(ctx, "remove task"); err != nil {
		return err
	}
	if err := validKey(key); err != nil {
		return fmt.Errorf("remove task: %w", err)
	}
	olds, err := w.redis.Eval(ctx, w.scripts.IndexSwap, []string{w.keys.Index(key)}, key, "")
	if err != nil {
		return storeErr(fmt.Sprintf("remove task %q", key), err)
	}
	var reply any
	if list := cast.ToSlice(olds); len(list) == 1 {
		reply = list[0]
	}
	var call redisclient.ScriptCall
	switch {
	case reply != nil:
		loc, err := parseLocation(cast.ToString(reply))
		if err != nil {
			return fmt.Errorf("remove task %q: %w", key, err)
		}
		if loc.dead {
			call = redisclient.ScriptCall{Script: w.scripts.DeadTake, Keys: w.keys.Dead().List(), Args: []any{key, ""}}
		} else {
			call = w.removeCall(key, loc.minute, loc.shard)
		}
	case !executeAt.IsZero():
		call = w.removeCall(key, util.EpochMinute(util.CeilMillis(executeAt)), util.Shard(key, w.cfg.shards))
	default:
		return fmt.Errorf("remove task %q: %w", key, ErrNotFound)
	}
	removed, err := w.redis.Eval(ctx, call.Script, call.Keys, call.Args...)
	if err != nil {
		return storeErr(fmt.Sprintf("remove task %q", key), err)
	}
	if removed == nil || cast.ToInt(removed) == 0 {
		return fmt.Errorf("remove task %q: %w", key, ErrNotFound)
	}
	return nil
}

// removeCall removes whatever version of key a slice holds and leaves a
// tombstone, so that an entry written there by a racing writer is filtered
// when pulled.
func (w *RTimeWheel) removeCall(key string, minute int64, shard int) redisclient.ScriptCall {
	return redisclient.ScriptCall{Script: w.scripts.Remove, Keys: w.slice(minute, shard), Args: []any{key, "", "1"}}
}

// GetTask returns the task under key with its state and attempts, or
// ErrNotFound when no task with that key is scheduled, retrying or dead.
func (w *RTimeWheel) GetTask(ctx context.Context, key string) (*TaskInfo, error) {
	if err := w.begin(ctx, "get task"); err != nil {
		return nil, err
	}
	if err := validKey(key); err != nil {
		return nil, fmt.Errorf("get task: %w", err)
	}
	reply, err := w.redis.Do(ctx, "HGET", w.keys.Index(key), key)
	if err != nil {
		return nil, storeErr(fmt.Sprintf("get task %q", key), err)
	}
	if reply == nil {
		return nil, fmt.Errorf("get task %q: %w", key, ErrNotFound)
	}
	loc, err := parseLocation(cast.ToString(reply))
	if err != nil {
		return nil, fmt.Errorf("get task %q: %w", key, err)
	}
	hash, state := w.sliceKeys.Slice(loc.minute, loc.shard).Body, StateScheduled
	if loc.dead {
		hash, state = w.keys.Dead().Body, StateDead
	}
	raw, err := w.redis.Do(ctx, "HGET", hash, key)
	if err != nil {
		return nil, storeErr(fmt.Sprintf("get task %q", key), err)
	}
	if raw == nil {
		// The index is written after the slice and cleared after it, so
		// this is a task that was just delivered or removed.
		return nil, fmt.Errorf("get task %q: %w", key, ErrNotFound)
	}
	version, t, err := decodeTask(key, cast.ToString(raw))
	if err != nil {
		return nil, fmt.Errorf("get task %q: %w", key, err)
	}
	if version != loc.version {
		return nil, fmt.Errorf("get task %q: %w", key, ErrNotFound)
	}
	return t.info(state), nil
}

// DeadLetters returns up to limit dead letters (1 to 1000; 0 means 100),
// newest first, each with its last error.
func (w *RTimeWheel) DeadLetters(ctx context.Context, limit int) ([]TaskInfo, error) {
	if err := w.checkStopped("list dead letters"); err != nil {
		return nil, err
	}
	switch {
	case limit == 0:
		limit = 100
	case limit < 0 || limit > 1000:
		return nil, fmt.Errorf("list dead letters: %w", invalid("limit", "%d is out of range 1..1000", limit))
	}
	reply, err := w.redis.Eval(ctx, w.scripts.DeadList, w.keys.Dead().List(), limit)
	if err != nil {
		return nil, storeErr("list dead letters", err)
	}
	flat, err := cast.ToSliceE(reply)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out := make([]TaskInfo, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		_, t, err := decodeTask(cast.ToString(flat[i]), cast.ToString(flat[i+1]))
		if err != nil {
			w.log.Warn("rtimewheel: skipping a malformed dead letter", "key", cast.ToString(flat[i]), "error", err)
			continue
		}
		out = append(out, *t.info(StateDead))
	}
	return out, nil
}

// RetryDeadLetter schedules the dead letter under key again, due now, with
// its attempts reset. It returns ErrNotFound when there is no such dead
// letter.
func (w *RTimeWheel) RetryDeadLetter(ctx context.Context, key string) error {
	if err := w.begin(ctx, "retry dead letter"); err != nil {
		return err
	}
	if err := validKey(key); err != nil {
		return fmt.Errorf("retry dead letter: %w", err)
	}
	raw, err := w.redis.Do(ctx, "HGET", w.keys.Dead().Body, key)
	if err != nil {
		return storeErr(fmt.Sprintf("retry dead letter %q", key), err)
	}
	if raw == nil {
		return fmt.Errorf("retry dead letter %q: %w", key, ErrNotFound)
	}
	oldVersion, t, err := decodeTask(key, cast.ToString(raw))
	if err != nil {
		return fmt.Errorf("retry dead letter %q: %w", key, err)
	}
	if err := w.ensureWatermark(ctx); err != nil {
		return err
	}
	// New entry first, then the index (only if it still says dead with
	// this version), then the dead letter goes.
	now := util.Millis(w.now())
	t.Attempts, t.LastError, t.DiedMs, t.DueMs = 0, "", 0, now
	v := newVersion()
	encoded, err := encodeTask(v, t)
	if err != nil {
		return err
	}
	loc := location{version: v, minute: util.EpochMinute(now), shard: util.Shard(key, w.cfg.shards)}
	if _, err := w.redis.Eval(ctx, w.scripts.Add, w.slice(loc.minute, loc.shard), key, now, encoded); err != nil {
		return storeErr(fmt.Sprintf("retry dead letter %q", key), err)
	}
	res, err := w.indexCAS(ctx, key, oldVersion, loc.String())
	if err == nil && res != casMoved {
		err = ErrNotFound // deleted, retried or replaced meanwhile
	}
	if err != nil {
		_, undoErr := w.redis.Eval(ctx, w.scripts.Remove, w.slice(loc.minute, loc.shard), key, v, "0")
		if errors.Is(err, ErrNotFound) {
			return errors.Join(fmt.Errorf("retry dead letter %q: %w", key, err), undoErr)
		}
		return errors.Join(storeErr(fmt.Sprintf("retry dead letter %q", key), err), undoErr)
	}
	w.signalNear(ctx, now)
	if _, err := w.redis.Eval(ctx, w.scripts.DeadTake, w.keys.Dead().List(), key, oldVersion); err != nil {
		// Scheduled again; the stale dead letter is only clutter.
		w.log.Warn("rtimewheel: retried dead letter is still listed", "key", key, "error", err)
	}
	return nil
}

// DeleteDeadLetter deletes the dead letter under key, or returns
// ErrNotFound.
func (w *RTimeWheel) DeleteDeadLetter(ctx context.Context, key string) error {
	if err := w.checkStopped("delete dead letter"); err != nil {
		return err
	}
	if err := validKey(key); err != nil {
		return fmt.Errorf("delete dead letter: %w", err)
	}
	raw, err := w.redis.Eval(ctx, w.scripts.DeadTake, w.keys.Dead().List(), key, "")
	if err != nil {
		return storeErr(fmt.Sprintf("delete dead letter %q", key), err)
	}
	if raw == nil {
		return fmt.Errorf("delete dead letter %q: %w", key, ErrNotFound)
	}
	version, _, err := decodeTask(key, cast.ToString(raw))
	if err != nil {
		return fmt.Errorf("delete dead letter %q: %w", key, err)
	}
	if _, err := w.indexCAS(ctx, key, version, ""); err != nil {
		return storeErr(fmt.Sprintf("delete dead letter %q", key), err)
	}
	return nil
}
