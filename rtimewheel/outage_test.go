package rtimewheel_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// With Redis down, AddTask fails fast with ErrUnavailable; a running worker
// logs, backs off and resumes by itself when Redis is back; nothing is lost.
func TestRedisOutage(t *testing.T) {
	e := newEnv(t)
	e.requireMini()
	recv := newReceiver(t, nil)
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	w := e.wheel(newHTTP(), rtimewheel.WithTick(20*time.Millisecond), rtimewheel.WithLogger(logger))
	ctx := context.Background()

	// Tasks due after the outage begins.
	at := time.Now().Add(1500 * time.Millisecond)
	const n = 20
	for i := range n {
		mustAdd(t, w, fmt.Sprint("survivor-", i), task(recv.url(), nil), at)
	}
	e.mini.Close()

	addCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := w.AddTask(addCtx, "during-outage", task(recv.url(), nil), time.Now())
	if !errors.Is(err, rtimewheel.ErrUnavailable) {
		t.Fatalf("AddTask with Redis down = %v, want ErrUnavailable", err)
	}
	if addCtx.Err() != nil {
		t.Fatal("AddTask with Redis down waited for its whole context instead of failing fast")
	}
	e.waitFor(t, 10*time.Second, "the worker to log the failing pull", func() bool {
		return contains(logs.String(), "pull failed")
	})
	if err := e.mini.Restart(); err != nil {
		t.Fatal(err)
	}
	got := recv.waitUntil(t, 20*time.Second, "every survivor", func(got []received) bool {
		keys := map[string]bool{}
		for _, r := range got {
			keys[r.key] = true
		}
		return len(keys) == n
	})
	e.waitFor(t, 10*time.Second, "the worker to log its recovery", func() bool {
		return contains(logs.String(), "pull works again")
	})
	for _, r := range got {
		if r.at.Before(at.Truncate(time.Millisecond)) {
			t.Errorf("%s fired early", r.key)
		}
	}
	t.Logf("%d callbacks for %d tasks across an outage", len(got), n)
}

// Every script the wheel runs names keys of one cluster slot, and the
// suite exercises every script.
func TestEveryScriptCallStaysInOneSlot(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, func(key string, attempt int) int {
		if key == "fails" {
			return 500
		}
		return 200
	})
	w := e.wheel(newHTTP(), rtimewheel.WithTick(20*time.Millisecond), rtimewheel.WithBackoff(30*time.Millisecond, time.Second),
		rtimewheel.WithShards(4))
	ctx := context.Background()
	fails := task(recv.url(), nil)
	fails.MaxAttempts = 3
	mustAdd(t, w, "fails", fails, time.Now())
	mustAdd(t, w, "works", task(recv.url(), nil), time.Now())
	mustAdd(t, w, "removed", task(recv.url(), nil), time.Now().Add(time.Hour))
	mustAdd(t, w, "replaced", task(recv.url(), nil), time.Now().Add(time.Hour))
	mustAdd(t, w, "replaced", task(recv.url(), nil), time.Now().Add(2*time.Hour))
	if err := w.RemoveTask(ctx, "removed", time.Time{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, 10*time.Second, "a dead letter", func() bool {
		dead, _ := w.DeadLetters(ctx, 10)
		return len(dead) == 1
	})
	if err := w.RetryDeadLetter(ctx, "fails"); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, 10*time.Second, "the retried dead letter to die again", func() bool {
		info, err := w.GetTask(ctx, "fails")
		return err == nil && info.State == rtimewheel.StateDead
	})
	if err := w.DeleteDeadLetter(ctx, "fails"); err != nil {
		t.Fatal(err)
	}
	// A wheel stopping with tasks pulled but not fired hands them back. Its
	// 2 s tick pulls "later" (due in 3 s) at once, while w's 20 ms tick
	// cannot reach it yet.
	stopping := e.wheel(newHTTP(), rtimewheel.WithTick(2*time.Second))
	mustAdd(t, stopping, "later", task(recv.url(), nil), time.Now().Add(3*time.Second))
	e.waitFor(t, 5*time.Second, "later to be leased", func() bool { return e.leased() == 1 })
	stopping.Stop()
	if e.leased() != 0 {
		t.Fatal("stop did not hand back the pulled task")
	}
	if info, err := w.GetTask(ctx, "later"); err != nil || info.State != rtimewheel.StateScheduled {
		t.Fatalf("handed-back task = %+v, %v; want it scheduled", info, err)
	}
	// The dashboard's reads: upcoming load, recent statistics, heartbeats.
	if _, err := w.UpcomingLoad(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if _, err := w.RecentStats(ctx, 60); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, 10*time.Second, "a heartbeat", func() bool {
		workers, err := w.Workers(ctx)
		return err == nil && len(workers) > 0
	})
	w.Stop()

	// A worker ten minutes on drains the past minutes and moves the
	// watermark.
	ahead := func() time.Time { return time.Now().Add(10 * time.Minute) }
	e.wheel(newHTTP(), rtimewheel.WithTick(20*time.Millisecond), rtimewheel.WithClock(ahead))
	e.waitFor(t, 10*time.Second, "the watermark to move", func() bool { return e.redis.scriptsSeen()["watermark"] })

	seen := e.redis.scriptsSeen()
	for _, s := range allScripts() {
		if !seen[s.Name()] {
			t.Errorf("script %s was never called; its keys went unchecked", s.Name())
		}
	}
}

func allScripts() []*redisclient.Script {
	return scriptsForTest()
}
