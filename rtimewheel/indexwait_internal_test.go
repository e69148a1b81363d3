package rtimewheel

import (
	"context"
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

// An add writes the slice entry, then the index entry; between the two a
// worker may pull the task, fire it and fail it. Its dead letter (or retry)
// must wait for the index entry, not take the task for removed and drop it.
func TestFailureBeforeTheIndexIsWrittenIsNotDropped(t *testing.T) {
	rc := redisclient.NewClient("tcp", miniredis.RunT(t).Addr(), "")
	t.Cleanup(func() { rc.Close() })
	called := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(http.StatusServiceUnavailable)
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

	// The first half of an add: the slice entry, no index entry yet.
	p, err := w.prepareAdd(util.Millis(time.Now()), TaskAt{Key: "early", Task: &RTaskElement{CallbackURL: srv.URL, MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	p.loc.shard = util.Shard("early", w.cfg.shards)
	if err := w.ensureWatermark(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.redis.Eval(ctx, w.scripts.Add, w.slice(p.loc.minute, p.loc.shard), "early", p.task.DueMs, p.encoded); err != nil {
		t.Fatal(err)
	}
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("the task did not fire")
	}
	// The second half lands after the callback failed.
	time.Sleep(100 * time.Millisecond) // the delay under test, not a synchronisation
	if _, err := w.redis.Eval(ctx, w.scripts.IndexSwap, []string{w.keys.Index("early")}, "early", p.loc.String()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := w.GetTask(ctx, "early")
		if err == nil && info.State == StateDead {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task failed its only attempt before its index was written: GetTask = %+v, %v; want a dead letter", info, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
