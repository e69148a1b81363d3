package rtimewheel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

// gatedRedis holds every batch of adds (a batch with index_swap calls)
// until gate is closed, and records the number of tasks in every batch of
// adds.
type gatedRedis struct {
	RedisClient
	gate  chan struct{}
	mu    sync.Mutex
	sizes []int // tasks per batch of adds, in order
}

func (g *gatedRedis) EvalBatch(ctx context.Context, calls []redisclient.ScriptCall) ([]redisclient.Reply, error) {
	tasks := 0
	for _, c := range calls {
		if c.Script.Name() == "index_swap" {
			tasks += len(c.Args) / 2
		}
	}
	if tasks > 0 {
		g.mu.Lock()
		g.sizes = append(g.sizes, tasks)
		g.mu.Unlock()
		<-g.gate
	}
	return g.RedisClient.EvalBatch(ctx, calls)
}

func (g *gatedRedis) batchSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

// newGatedWheel returns a client-only wheel on miniredis whose batches of
// adds wait for close(g.gate).
func newGatedWheel(t *testing.T) (*RTimeWheel, *gatedRedis) {
	t.Helper()
	rc := redisclient.NewClient("tcp", miniredis.RunT(t).Addr(), "")
	t.Cleanup(func() { rc.Close() })
	g := &gatedRedis{RedisClient: rc, gate: make(chan struct{})}
	w := NewRTimeWheel(g, nil, WithoutWorker(), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(w.Stop)
	return w, g
}

// waitUntil polls cond, which reads state another goroutine changes, for
// up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (q *addQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

func queueTask() *RTaskElement { return &RTaskElement{CallbackURL: "http://127.0.0.1:9/hook"} }

func TestConcurrentAddTaskCallsShareABatch(t *testing.T) {
	w, g := newGatedWheel(t)
	ctx := context.Background()
	at := time.Now().Add(time.Hour)
	const n = 32
	errs := make(chan error, n)
	// The first maxAddWriters calls, one after the other, each start a
	// writer at once.
	for i := range maxAddWriters {
		go func() { errs <- w.AddTask(ctx, fmt.Sprint("first-", i), queueTask(), at) }()
		waitUntil(t, "the first adds are in Redis", func() bool { return len(g.batchSizes()) == i+1 })
	}
	for i := maxAddWriters; i < n; i++ {
		go func() { errs <- w.AddTask(ctx, fmt.Sprint("queued-", i), queueTask(), at) }()
	}
	waitUntil(t, "the others have queued", func() bool { return w.adds.queued() == n-maxAddWriters })
	close(g.gate)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := g.batchSizes()
	if len(got) != maxAddWriters+1 || got[maxAddWriters] != n-maxAddWriters {
		t.Fatalf("tasks per batch = %v, want %d of 1 then %d: the calls that arrived while every writer was busy go out together", got, maxAddWriters, n-maxAddWriters)
	}
	for i := maxAddWriters; i < n; i++ {
		if _, err := w.GetTask(ctx, fmt.Sprint("queued-", i)); err != nil {
			t.Errorf("queued-%d: %v", i, err)
		}
	}
}

func TestAddTaskWaitingForABatchHonoursItsContext(t *testing.T) {
	w, g := newGatedWheel(t)
	at := time.Now().Add(time.Hour)
	first := make(chan error, maxAddWriters)
	for i := range maxAddWriters {
		go func() { first <- w.AddTask(context.Background(), fmt.Sprint("first-", i), queueTask(), at) }()
		waitUntil(t, "the first adds are in Redis", func() bool { return len(g.batchSizes()) == i+1 })
	}

	// Invalid tasks fail at once: they are never queued.
	if err := w.AddTask(context.Background(), "bad", &RTaskElement{}, at); !errors.Is(err, ErrInvalidTask) {
		t.Fatalf("invalid task: %v, want ErrInvalidTask", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() { queued <- w.AddTask(ctx, "impatient", queueTask(), at) }()
	waitUntil(t, "the second add has queued", func() bool { return w.adds.queued() == 1 })
	cancel()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled add: %v, want context.Canceled", err)
	}
	close(g.gate)
	for range maxAddWriters {
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	}
	// The cancelled add was still queued: it is dropped, not stored after
	// its caller was told it failed.
	waitUntil(t, "the writers are done", func() bool {
		w.adds.mu.Lock()
		defer w.adds.mu.Unlock()
		return w.adds.writers == 0
	})
	if _, err := w.GetTask(context.Background(), "impatient"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the add cancelled while queued: GetTask = %v, want ErrNotFound", err)
	}
}

// Of several items of one batch with the same key the last is written, and
// the earlier ones share its fate: stored with it, or failed with it.
func TestRepeatedKeyInABatchSharesTheFateOfTheLast(t *testing.T) {
	m := miniredis.RunT(t)
	rc := redisclient.NewClient("tcp", m.Addr(), "")
	t.Cleanup(func() { rc.Close() })
	w := NewRTimeWheel(rc, nil, WithoutWorker(), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(w.Stop)
	ctx := context.Background()
	at := time.Now().Add(time.Hour)
	batch := []TaskAt{
		{Key: "k", Task: &RTaskElement{CallbackURL: "http://127.0.0.1:9/first"}, ExecuteAt: at},
		{Key: "other", Task: queueTask(), ExecuteAt: at},
		{Key: "k", Task: &RTaskElement{CallbackURL: "http://127.0.0.1:9/second"}, ExecuteAt: at},
		{Key: "k", Task: &RTaskElement{CallbackURL: "http://127.0.0.1:9/third"}, ExecuteAt: at},
	}
	if err := w.AddTasks(ctx, batch); err != nil {
		t.Fatal(err)
	}
	info, err := w.GetTask(ctx, "k")
	if err != nil || info.CallbackURL != "http://127.0.0.1:9/third" {
		t.Fatalf("GetTask(k) = %+v, %v; want the third item", info, err)
	}

	m.Close() // every write fails: each item, repeated or not, says so
	var be *BatchError
	if err := w.AddTasks(ctx, batch); !errors.As(err, &be) {
		t.Fatalf("AddTasks with Redis down: %v, want a *BatchError", err)
	}
	for i, err := range be.Errs {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("item %d (%s): %v, want ErrUnavailable", i, batch[i].Key, err)
		}
	}
}
