package rtimewheel

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

// halfAdd is an add cut in two: its slice entry is written and its
// callback fired, its index entry not yet.
type halfAdd struct {
	w *RTimeWheel
	p pendingAdd
}

// addSliceHalf starts a wheel whose callbacks answer status, writes the
// slice half of an add of a task due now (at most maxAttempts attempts) and
// waits until its callback was called.
func addSliceHalf(t *testing.T, key string, status, maxAttempts int) halfAdd {
	t.Helper()
	rc := redisclient.NewClient("tcp", miniredis.RunT(t).Addr(), "")
	t.Cleanup(func() { rc.Close() })
	called := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(status)
		select {
		case called <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	w := NewRTimeWheel(rc, httpclient.NewClient(), WithTick(20*time.Millisecond),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(w.Stop)
	ctx := context.Background()

	p, err := w.prepareAdd(util.Millis(time.Now()), TaskAt{Key: key, Task: &RTaskElement{CallbackURL: srv.URL, MaxAttempts: maxAttempts}})
	if err != nil {
		t.Fatal(err)
	}
	p.loc.shard = util.Shard(key, w.cfg.shards)
	if err := w.ensureWatermark(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.redis.Eval(ctx, w.scripts.Add, w.slice(p.loc.minute, p.loc.shard), key, p.task.DueMs, p.encoded); err != nil {
		t.Fatal(err)
	}
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("the task did not fire")
	}
	return halfAdd{w, p}
}

// writeIndexHalf writes the index half of the add.
func (h halfAdd) writeIndexHalf(t *testing.T) {
	t.Helper()
	key := h.p.task.Key
	if _, err := h.w.redis.Eval(context.Background(), h.w.scripts.IndexSwap, []string{h.w.keys.Index(key)}, key, h.p.loc.String()); err != nil {
		t.Fatal(err)
	}
}

// An add writes the slice entry, then the index entry; between the two a
// worker may pull the task, fire it and fail it. Its dead letter (or retry)
// must wait for the index entry, not take the task for removed and drop it.
func TestFailureBeforeTheIndexIsWrittenIsNotDropped(t *testing.T) {
	h := addSliceHalf(t, "early", http.StatusServiceUnavailable, 1)
	// The second half lands after the callback failed and the worker wrote
	// the dead letter, i.e. while it looks for the index entry to move.
	waitUntil(t, "the dead letter to be written", func() bool {
		n, err := h.w.redis.Do(context.Background(), "HEXISTS", h.w.keys.Dead().Body, "early")
		return err == nil && n == int64(1)
	})
	h.writeIndexHalf(t)
	waitUntil(t, "the task that failed its only attempt before its index was written to be a dead letter", func() bool {
		info, err := h.w.GetTask(context.Background(), "early")
		return err == nil && info.State == StateDead
	})
}

// The same race with a callback that succeeds: the ack finds no index
// entry to delete, and the add writes one afterwards. The completer looks
// again later and deletes it, so no entry is left pointing at nothing.
func TestAckBeforeTheIndexIsWrittenLeavesNoEntry(t *testing.T) {
	h := addSliceHalf(t, "acked", http.StatusOK, 0)
	w, ctx := h.w, context.Background()
	waitUntil(t, "the ack to delete the slice entry", func() bool {
		n, err := w.redis.Do(ctx, "HEXISTS", w.slice(h.p.loc.minute, h.p.loc.shard)[1], "acked")
		return err == nil && n == int64(0)
	})
	h.writeIndexHalf(t) // after the ack
	waitUntil(t, "the index entry of the acked task to be deleted", func() bool {
		v, err := w.redis.Do(ctx, "HGET", w.keys.Index("acked"), "acked")
		return err == nil && v == nil
	})
	if _, err := w.GetTask(ctx, "acked"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask of the acked task: %v, want ErrNotFound", err)
	}
}
