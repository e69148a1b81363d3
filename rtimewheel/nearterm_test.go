package rtimewheel_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// A task added due sooner than the horizon of the worker's latest pull
// missed that pull; the worker pulls again at once instead of a tick later,
// so it still fires at its time. The tick here is 5 s: without the extra
// pull the task would fire seconds late.
func TestTaskAddedForTheNextMomentFiresOnTime(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	pulled := make(chan struct{}, 1)
	w := e.wheel(newHTTP(), rtimewheel.WithTick(5*time.Second), rtimewheel.WithPullHook(func(rtimewheel.PullEvent) {
		select {
		case pulled <- struct{}{}:
		default:
		}
	}))
	select {
	case <-pulled: // the first pull ran: its horizon is 10 s ahead
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not pull")
	}
	for i, delay := range []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond} {
		due := time.Now().Add(delay).Truncate(time.Millisecond)
		key := []string{"soon", "later"}[i]
		mustAdd(t, w, key, task(recv.url(), nil), due)
		got := recv.waitCount(t, i+1, 5*time.Second)
		late := got[i].at.Sub(due)
		t.Logf("%s: added %v ahead, fired %v after its time", key, delay, late)
		if got[i].key != key || late < 0 || late > time.Second {
			t.Fatalf("%s fired %v after its time (negative: early); want on time, not a tick (5s) late", got[i].key, late)
		}
	}
}

// The same through a handle without a worker (an API-only process): the
// add bumps a counter every worker polls, so a worker elsewhere pulls it
// at once.
func TestTaskAddedElsewhereForTheNextMomentFiresOnTime(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	pulled := make(chan struct{}, 1)
	e.wheel(newHTTP(), rtimewheel.WithTick(5*time.Second), rtimewheel.WithPullHook(func(rtimewheel.PullEvent) {
		select {
		case pulled <- struct{}{}:
		default:
		}
	}))
	client := e.wheel(nil, rtimewheel.WithoutWorker(), rtimewheel.WithTick(5*time.Second))
	select {
	case <-pulled:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not pull")
	}
	due := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	mustAdd(t, client, "elsewhere", task(recv.url(), nil), due)
	got := recv.waitCount(t, 1, 6*time.Second)
	late := got[0].at.Sub(due)
	t.Logf("added 300ms ahead through a handle without a worker, fired %v after its time", late)
	if late < 0 || late > time.Second {
		t.Fatalf("fired %v after its time (negative: early); want on time, not a tick (5s) late", late)
	}
}

// A retry due sooner than the next tick (a short backoff) is pulled at
// once too: the second attempt comes about one backoff after the first,
// not a tick (5 s) later.
func TestShortRetryFiresOnTime(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, func(_ string, attempt int) int {
		if attempt == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	w := e.wheel(newHTTP(), rtimewheel.WithTick(5*time.Second), rtimewheel.WithBackoff(200*time.Millisecond, time.Second))
	mustAdd(t, w, "flaky", task(recv.url(), nil), time.Now().Add(100*time.Millisecond))
	got := recv.waitCount(t, 2, 8*time.Second)
	gap := got[1].at.Sub(got[0].at)
	t.Logf("attempt 2 came %v after attempt 1 (backoff 200ms ±20%%, tick 5s)", gap)
	if got[1].attempt != 2 || gap < 160*time.Millisecond || gap > time.Second {
		t.Fatalf("attempt %d came %v after attempt 1; want attempt 2 about 200ms after, not a tick later", got[1].attempt, gap)
	}
}

// A task added through a handle with a worker is pulled once for its
// signal: by the handle's own worker, directly. That worker does not pull a
// second time when it sees the counter bump that was its own.
func TestOwnNearSignalIsPulledOnce(t *testing.T) {
	e := newEnv(t)
	recv := newReceiver(t, nil)
	var pulls atomic.Int64
	w := e.wheel(newHTTP(), rtimewheel.WithTick(5*time.Second), rtimewheel.WithPullHook(func(rtimewheel.PullEvent) {
		pulls.Add(1)
	}))
	e.waitFor(t, 5*time.Second, "the first pull", func() bool { return pulls.Load() >= 1 })
	due := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	mustAdd(t, w, "own", task(recv.url(), nil), due)
	recv.waitCount(t, 1, 5*time.Second) // the counter was polled some 15 times meanwhile
	if got := pulls.Load(); got != 2 {
		t.Errorf("%d pulls: want 2, the first and one for the task added due soon", got)
	}
}
