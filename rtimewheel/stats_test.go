package rtimewheel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// The upcoming load counts, per minute, exactly the tasks scheduled in it,
// summed over every shard, and forgets a removed one.
func TestUpcomingLoadCountsEveryShard(t *testing.T) {
	e := newEnv(t)
	now := time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second)
	clock := newTestClock(now)
	w := e.wheel(newHTTP(), rtimewheel.WithoutWorker(), rtimewheel.WithShards(4), rtimewheel.WithClock(clock.Now))
	ctx := context.Background()
	want := map[int]int{1: 3, 2: 5, 4: 2, 59: 7} // minutes ahead -> tasks
	for ahead, n := range want {
		for i := range n {
			at := now.Truncate(time.Minute).Add(time.Duration(ahead)*time.Minute + time.Duration(i)*time.Second)
			mustAdd(t, w, fmt.Sprintf("m%d-%d", ahead, i), task("http://127.0.0.1:1/", nil), at)
		}
	}
	mustAdd(t, w, "gone", task("http://127.0.0.1:1/", nil), now.Add(3*time.Minute))
	if err := w.RemoveTask(ctx, "gone", time.Time{}); err != nil {
		t.Fatal(err)
	}
	load, err := w.UpcomingLoad(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(load) != 60 {
		t.Fatalf("got %d minutes, want 60", len(load))
	}
	for i, m := range load {
		if wantMinute := now.Truncate(time.Minute).Add(time.Duration(i) * time.Minute); !m.Minute.Equal(wantMinute) {
			t.Errorf("minute %d starts at %v, want %v", i, m.Minute, wantMinute)
		}
		if m.Waiting != want[i] || m.Leased != 0 {
			t.Errorf("minute +%d: waiting %d, leased %d; want %d, 0", i, m.Waiting, m.Leased, want[i])
		}
	}
	if _, err := w.UpcomingLoad(ctx, 0); err == nil {
		t.Error("UpcomingLoad(0) did not fail")
	}
}

// Recent statistics count exactly the attempts the workers made, by
// outcome, and their lateness; the workers' heartbeats list them until they
// stop.
func TestRecentStatsCountWhatFired(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, func(key string, attempt int) int {
		if strings.HasPrefix(key, "bad") {
			return 500
		}
		return 200
	})
	opts := []rtimewheel.Option{rtimewheel.WithTick(20 * time.Millisecond), rtimewheel.WithBackoff(20*time.Millisecond, 50*time.Millisecond), rtimewheel.WithConcurrency(7)}
	w1 := e.wheel(newHTTP(), opts...)
	w2 := e.wheel(newHTTP(), opts...)
	client := e.wheel(newHTTP(), rtimewheel.WithoutWorker())
	ctx := context.Background()

	e.waitFor(t, 10*time.Second, "both workers' heartbeats", func() bool {
		workers, err := client.Workers(ctx)
		return err == nil && len(workers) == 2
	})
	workers, _ := client.Workers(ctx)
	for _, wi := range workers {
		if wi.Host == "" || wi.ID == "" || wi.Concurrency != 7 || wi.StartedAt.IsZero() || time.Since(wi.LastSeenAt) > time.Minute {
			t.Errorf("worker = %+v; want id, host, concurrency 7, started and recently seen", wi)
		}
	}

	const good, bad = 17, 4
	for i := range good {
		mustAdd(t, client, fmt.Sprintf("good-%d", i), task(recv.url(), nil), time.Now().Add(100*time.Millisecond))
	}
	for i := range bad {
		tk := task(recv.url(), nil)
		tk.MaxAttempts = 3 // two retries, then dead
		mustAdd(t, client, fmt.Sprintf("bad-%d", i), tk, time.Now().Add(100*time.Millisecond))
	}
	recv.waitCount(t, good+3*bad, 20*time.Second)

	var sum rtimewheel.MinuteStats
	e.waitFor(t, 10*time.Second, "the statistics to add up", func() bool {
		stats, err := client.RecentStats(ctx, 60)
		if err != nil || len(stats) != 60 {
			return false
		}
		sum = rtimewheel.MinuteStats{}
		for _, s := range stats {
			sum.Fired += s.Fired
			sum.Delivered += s.Delivered
			sum.Retried += s.Retried
			sum.Dead += s.Dead
			sum.Dropped += s.Dropped
			if s.Fired > 0 {
				sum.LatenessP50 = max(sum.LatenessP50, s.LatenessP50)
				sum.LatenessP99 = max(sum.LatenessP99, s.LatenessP99)
			}
		}
		return sum.Fired == good+3*bad && sum.Dead == bad
	})
	if sum.Delivered != good || sum.Retried != 2*bad || sum.Dead != bad || sum.Dropped != 0 {
		t.Errorf("stats = %+v; want %d delivered, %d retried, %d dead", sum, good, 2*bad, bad)
	}
	if sum.LatenessP50 > sum.LatenessP99 || sum.LatenessP99 > 5*time.Second {
		t.Errorf("lateness p50 %v, p99 %v: want p50 ≤ p99 ≤ 5s", sum.LatenessP50, sum.LatenessP99)
	}
	if n, err := client.DeadLetterCount(ctx); err != nil || n != bad {
		t.Errorf("DeadLetterCount = %d, %v; want %d", n, err, bad)
	}

	w1.Stop()
	w2.Stop()
	if workers, err := client.Workers(ctx); err != nil || len(workers) != 0 {
		t.Errorf("after Stop, Workers = %+v, %v; want none", workers, err)
	}
}
