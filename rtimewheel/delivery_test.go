package rtimewheel_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// Three wheels on one Redis fire 3000 tasks due over a few seconds: each
// exactly once, none early, and late by milliseconds.
func TestThreeWheelsFireEachTaskOnceOnTime(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	for range 3 {
		e.wheel(newHTTP())
	}
	client := e.wheel(nil, rtimewheel.WithoutWorker())

	const n = 3000
	spread := 3 * time.Second
	if raceEnabled {
		// The race detector makes each callback cost several times the
		// CPU; on 2 cores the same burst would measure the detector.
		spread = 10 * time.Second
	}
	// burst schedules n tasks due over spread and returns the lateness of
	// each, sorted, after checking each fired exactly once and never early.
	burst := func(round int) []time.Duration {
		start := time.Now().Add(1500 * time.Millisecond).Truncate(time.Millisecond)
		due := make(map[string]time.Time, n)
		batch := make([]rtimewheel.TaskAt, 0, n)
		for i := range n {
			key := fmt.Sprintf("r%d-task-%04d", round, i)
			at := start.Add(time.Duration(i) * spread / n).Truncate(time.Millisecond)
			due[key] = at
			batch = append(batch, rtimewheel.TaskAt{Key: key, Task: task(recv.url(), map[string]int{"i": i}), ExecuteAt: at})
		}
		if err := client.AddTasks(context.Background(), batch); err != nil {
			t.Fatalf("AddTasks: %v", err)
		}
		inRound := func(got []received) []received {
			var mine []received
			for _, r := range got {
				if _, ok := due[r.key]; ok {
					mine = append(mine, r)
				}
			}
			return mine
		}
		// Counting is cheap enough to run on every callback; filtering by
		// key is done once at the end (earlier rounds all completed).
		before := len(recv.all())
		got := inRound(recv.waitUntil(t, spread+30*time.Second, fmt.Sprintf("%d callbacks", n),
			func(got []received) bool { return len(got) >= before+n }))
		seen := map[string]int{}
		var lateness []time.Duration
		for _, r := range got {
			seen[r.key]++
			late := r.at.Sub(due[r.key])
			if late < 0 {
				t.Errorf("%s fired %v early", r.key, -late)
			}
			lateness = append(lateness, late)
		}
		for key := range due {
			if seen[key] != 1 {
				t.Errorf("%s fired %d times, want 1", key, seen[key])
			}
		}
		slices.Sort(lateness)
		return lateness
	}
	for round := 1; ; round++ {
		var lateness []time.Duration
		stolen := stolenDuring(func() { lateness = burst(round) })
		p50, p99, worst := percentile(lateness, .50), percentile(lateness, .99), lateness[len(lateness)-1]
		t.Logf("%d callbacks from 3 wheels: lateness p50 %v, p99 %v, max %v (host stole %.1f%% of the CPU)", len(lateness), p50, p99, worst, 100*stolen)
		if p99 <= 25*time.Millisecond {
			break
		}
		if round == 1 && stolen > 0.05 {
			t.Logf("the hypervisor took %.0f%% of the CPU during the burst: measuring once more", 100*stolen)
			continue
		}
		t.Errorf("lateness p99 = %v, want <= 25ms", p99)
		break
	}
	// Acks follow the callbacks: soon nothing is left in Redis but the
	// watermark and empty slices.
	e.waitFor(t, 10*time.Second, "every task to be acked", func() bool {
		for _, key := range e.keys() {
			if (contains(key, ":index:") || contains(key, ":due") || contains(key, ":lease")) && e.count(key) != 0 {
				return false
			}
		}
		return true
	})
}

// Tasks that fell due while no worker ran, minutes ago, fire once a worker
// starts; the watermark then moves past the drained minutes.
func TestOverdueTasksFireWhenAWorkerStarts(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	t0 := time.Now()
	clock := newTestClock(t0)
	now := clock.Now

	client := e.wheel(nil, rtimewheel.WithoutWorker(), rtimewheel.WithClock(now))
	const n = 100
	for i := range n {
		// Spread over the next five minutes of the client's clock.
		at := t0.Add(time.Duration(i) * 3 * time.Second)
		if err := client.AddTask(context.Background(), fmt.Sprint("late-", i), task(recv.url(), nil), at); err != nil {
			t.Fatal(err)
		}
	}
	if len(recv.all()) != 0 {
		t.Fatal("a callback fired with no worker running")
	}
	// Ten minutes later a worker starts.
	clock.Set(t0.Add(10 * time.Minute))
	e.wheel(newHTTP(), rtimewheel.WithClock(now), rtimewheel.WithTick(20*time.Millisecond))
	got := recv.waitCount(t, n, 15*time.Second)
	keys := map[string]bool{}
	for _, r := range got {
		keys[r.key] = true
	}
	if len(keys) != n {
		t.Fatalf("%d distinct tasks fired, want %d", len(keys), n)
	}
	wantMark := t0.Add(10*time.Minute-time.Minute).Unix()/60 - 1
	e.waitFor(t, 10*time.Second, "watermark to pass the drained minutes", func() bool {
		mark, _ := e.raw.Do(context.Background(), "GET", e.ns+":watermark")
		return toInt64(mark) >= wantMark
	})
}

// A wheel that dies mid-batch loses nothing: another takes its tasks over
// when their lease ends.
func TestHaltedWheelLosesNothing(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	var calls atomic.Int32
	recv := newReceiver(t, func(key string, attempt int) int {
		if calls.Add(1) <= 5 {
			<-release // the first callbacks hang until the wheel is dead
		}
		return 200
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	lease := 2 * time.Second
	dying := e.wheel(newHTTP(), rtimewheel.WithLease(lease), rtimewheel.WithTick(50*time.Millisecond), rtimewheel.WithConcurrency(5))

	const n = 50
	at := time.Now().Add(300 * time.Millisecond)
	for i := range n {
		if err := dying.AddTask(context.Background(), fmt.Sprint("k", i), task(recv.url(), nil), at); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the dying wheel has pulled the whole batch: it holds all
	// leases and five callbacks hang in flight.
	e.waitFor(t, 10*time.Second, "the batch to be leased", func() bool { return e.leased() == n && calls.Load() >= 5 })
	dying.Halt()
	close(release)
	haltedAt := time.Now()

	e.wheel(newHTTP(), rtimewheel.WithTick(50*time.Millisecond))
	got := recv.waitUntil(t, 20*time.Second, "every task", func(got []received) bool {
		keys := map[string]bool{}
		for _, r := range got {
			keys[r.key] = true
		}
		return len(keys) == n
	})
	if took := time.Since(haltedAt); took < lease/2 {
		t.Errorf("tasks were taken over after %v, before their lease could end", took)
	}
	t.Logf("%d callbacks for %d tasks after a worker died holding them all", len(got), n)
	e.waitFor(t, 10*time.Second, "leases to clear", func() bool { return e.leased() == 0 })
}

// A callback failing twice is delivered on attempt 3 after growing delays.
func TestRetriesWithGrowingDelays(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, func(key string, attempt int) int {
		if attempt < 3 {
			return 500
		}
		return 204
	})
	w := e.wheel(newHTTP(), rtimewheel.WithTick(20*time.Millisecond), rtimewheel.WithBackoff(300*time.Millisecond, time.Minute))
	if err := w.AddTask(context.Background(), "flaky", task(recv.url(), map[string]string{"order": "42"}), time.Now()); err != nil {
		t.Fatal(err)
	}
	got := recv.waitCount(t, 3, 10*time.Second)
	for i, r := range got {
		if r.attempt != i+1 || r.key != "flaky" || r.body != `{"order":"42"}` {
			t.Fatalf("callback %d = %+v", i, r)
		}
		if r.scheduledAt != got[0].scheduledAt {
			t.Errorf("Rtw-Scheduled-At changed across retries: %q then %q", got[0].scheduledAt, r.scheduledAt)
		}
	}
	first, second := got[1].at.Sub(got[0].at), got[2].at.Sub(got[1].at)
	t.Logf("delays between attempts: %v, %v", first, second)
	if first < 240*time.Millisecond { // 300ms - 20% jitter
		t.Errorf("first retry after %v, before its backoff", first)
	}
	if second <= first {
		t.Errorf("delays did not grow: %v then %v", first, second)
	}
	e.waitFor(t, 5*time.Second, "the delivered task to be forgotten", func() bool {
		_, err := w.GetTask(context.Background(), "flaky")
		return err != nil
	})
	if _, err := w.GetTask(context.Background(), "flaky"); !isNotFound(err) {
		t.Fatalf("GetTask after delivery = %v, want ErrNotFound", err)
	}
}

// After max attempts the task is a dead letter; it can be retried, and
// deleted.
func TestDeadLetters(t *testing.T) {
	e := newEnv(t)
	var healthy atomic.Bool
	recv := newReceiver(t, func(key string, attempt int) int {
		if healthy.Load() {
			return 200
		}
		return 503
	})
	w := e.wheel(newHTTP(), rtimewheel.WithTick(20*time.Millisecond), rtimewheel.WithBackoff(50*time.Millisecond, time.Second))
	ctx := context.Background()
	for _, key := range []string{"doomed", "doomed-too"} {
		tk := task(recv.url(), nil)
		tk.MaxAttempts = 2
		if err := w.AddTask(ctx, key, tk, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// A dead letter is listed a moment before its index entry says dead
	// (dead_put, then index_cas): wait for both.
	e.waitFor(t, 10*time.Second, "two dead letters", func() bool {
		dead, err := w.DeadLetters(ctx, 10)
		a, errA := w.GetTask(ctx, "doomed")
		b, errB := w.GetTask(ctx, "doomed-too")
		return err == nil && len(dead) == 2 && errA == nil && errB == nil &&
			a.State == rtimewheel.StateDead && b.State == rtimewheel.StateDead
	})
	info, err := w.GetTask(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != rtimewheel.StateDead || info.Attempts != 2 || !contains(info.LastError, "503") || info.DiedAt.IsZero() {
		t.Fatalf("dead task = %+v", info)
	}
	if n := len(recv.all()); n != 4 {
		t.Fatalf("%d callbacks, want 2 attempts for each of 2 tasks", n)
	}

	healthy.Store(true)
	if err := w.RetryDeadLetter(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	got := recv.waitCount(t, 5, 5*time.Second)
	if last := got[4]; last.key != "doomed" || last.attempt != 1 {
		t.Fatalf("retried dead letter fired as %+v, want attempt 1 of doomed", last)
	}
	if err := w.DeleteDeadLetter(ctx, "doomed-too"); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteDeadLetter(ctx, "doomed-too"); !isNotFound(err) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
	e.waitFor(t, 5*time.Second, "no dead letters and no tasks", func() bool {
		dead, _ := w.DeadLetters(ctx, 10)
		_, err1 := w.GetTask(ctx, "doomed")
		_, err2 := w.GetTask(ctx, "doomed-too")
		return len(dead) == 0 && isNotFound(err1) && isNotFound(err2)
	})
}

// Removing a task due ten minutes ahead holds: nothing it relies on
// expires before then, and it never fires.
func TestRemoveFarAheadHolds(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	t0 := time.Now()
	clock := newTestClock(t0)
	now := clock.Now
	client := e.wheel(nil, rtimewheel.WithoutWorker(), rtimewheel.WithClock(now))
	ctx := context.Background()
	at := t0.Add(10 * time.Minute)
	for _, key := range []string{"cancelled", "kept"} {
		if err := client.AddTask(ctx, key, task(recv.url(), nil), at); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.RemoveTask(ctx, "cancelled", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := client.RemoveTask(ctx, "cancelled", time.Time{}); !isNotFound(err) {
		t.Fatalf("second remove = %v, want ErrNotFound", err)
	}
	for _, key := range e.keys() {
		if ttl := e.pttl(key); ttl != -1 && ttl < 11*time.Minute {
			t.Errorf("%s expires in %v, before the task's time", key, ttl)
		}
	}
	if e.mini != nil {
		e.mini.FastForward(11 * time.Minute) // expire whatever would
	}
	clock.Set(t0.Add(11 * time.Minute))
	e.wheel(newHTTP(), rtimewheel.WithClock(now), rtimewheel.WithTick(20*time.Millisecond))
	got := recv.waitCount(t, 1, 10*time.Second)
	if got[0].key != "kept" {
		t.Fatalf("%q fired, want only kept", got[0].key)
	}
	e.waitFor(t, 5*time.Second, "kept to be delivered and forgotten", func() bool {
		_, err := client.GetTask(ctx, "kept")
		return isNotFound(err)
	})
	if got := recv.all(); len(got) != 1 {
		t.Fatalf("%d callbacks, want 1: the removed task fired", len(got))
	}
}

// Re-adding a key with a new time and body fires once, at the new time,
// with the new body: from another minute and from the same minute.
func TestReaddReplaces(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	w := e.wheel(newHTTP(), rtimewheel.WithTick(20*time.Millisecond))
	ctx := context.Background()
	soon := time.Now().Add(800 * time.Millisecond).Truncate(time.Millisecond)
	// Far (another minute) then soon.
	mustAdd(t, w, "moved", task(recv.url(), "old"), time.Now().Add(10*time.Minute))
	mustAdd(t, w, "moved", task(recv.url(), "new"), soon)
	// Soon then a little later (the same minute, most runs).
	mustAdd(t, w, "delayed", task(recv.url(), "old"), soon)
	mustAdd(t, w, "delayed", task(recv.url(), "new"), soon.Add(300*time.Millisecond))

	got := recv.waitCount(t, 2, 10*time.Second)
	for _, r := range got {
		if r.body != `"new"` {
			t.Errorf("%s fired with body %s, want the new one", r.key, r.body)
		}
	}
	byKey := map[string]received{}
	for _, r := range got {
		byKey[r.key] = r
	}
	if r := byKey["moved"]; r.at.Before(soon) {
		t.Errorf("moved fired %v early", soon.Sub(r.at))
	}
	if r := byKey["delayed"]; r.at.Before(soon.Add(300 * time.Millisecond)) {
		t.Errorf("delayed fired at the old time")
	}
	// Nothing more fires: wait for the index to clear, then a tick more.
	e.waitFor(t, 5*time.Second, "both delivered", func() bool {
		_, err1 := w.GetTask(ctx, "moved")
		_, err2 := w.GetTask(ctx, "delayed")
		return isNotFound(err1) && isNotFound(err2)
	})
	if n := len(recv.all()); n != 2 {
		t.Fatalf("%d callbacks, want 2 (one per key)", n)
	}
	if n := e.count("{" + e.ns + ":" + fmt.Sprint(time.Now().Add(10*time.Minute).Unix()/60) + ":0}:due"); n != 0 {
		t.Fatalf("the replaced far entry is still scheduled")
	}
}

// A past executeAt fires at once.
func TestPastExecuteAtFiresAtOnce(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	w := e.wheel(newHTTP(), rtimewheel.WithTick(50*time.Millisecond))
	added := time.Now()
	asked := added.Add(-time.Hour).Truncate(time.Millisecond)
	mustAdd(t, w, "overdue", task(recv.url(), nil), asked)
	got := recv.waitCount(t, 1, 5*time.Second)
	if late := got[0].at.Sub(added); late > time.Second {
		t.Fatalf("a past task fired %v after it was added", late)
	}
	// The callback reports the time asked for, not the moment it was stored.
	if want := asked.UTC().Format("2006-01-02T15:04:05.000Z"); got[0].scheduledAt != want {
		t.Fatalf("Rtw-Scheduled-At %q, want %q", got[0].scheduledAt, want)
	}
}

func mustAdd(t *testing.T, w *rtimewheel.RTimeWheel, key string, tk *rtimewheel.RTaskElement, at time.Time) {
	t.Helper()
	if err := w.AddTask(context.Background(), key, tk, at); err != nil {
		t.Fatalf("AddTask(%s): %v", key, err)
	}
}
