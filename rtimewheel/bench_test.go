package rtimewheel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// The benchmarks run on miniredis by default and on the real Redis at
// RTW_TEST_REDIS when set; BenchmarkRawEvalSHA is the baseline to read the
// others against: the cheapest script call (one ZADD) on the same server,
// in the same run.

var rawZadd = redisclient.NewScript("bench_zadd", "return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])")

func BenchmarkRawEvalSHA(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	key := "{" + e.ns + ":bench}:z"
	b.Run("sequential", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := e.raw.Eval(ctx, rawZadd, []string{key}, i, fmt.Sprint("m", i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel32", func(b *testing.B) {
		parallel32(b, func(i int64) error {
			_, err := e.raw.Eval(ctx, rawZadd, []string{key}, i, fmt.Sprint("p", i))
			return err
		})
	})
}

// parallel32 runs op from 32 goroutines per CPU, each call with a number of
// its own, and stops a goroutine at its first error.
func parallel32(b *testing.B, op func(i int64) error) {
	b.SetParallelism(32)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(n.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func benchTask() *rtimewheel.RTaskElement {
	return &rtimewheel.RTaskElement{CallbackURL: "http://127.0.0.1:9/hook", Req: map[string]string{"order": "42"}}
}

func BenchmarkAddTask(b *testing.B) {
	e := newEnv(b)
	w := e.wheel(nil, rtimewheel.WithoutWorker())
	ctx := context.Background()
	at := time.Now().Add(time.Hour)
	b.Run("sequential", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := w.AddTask(ctx, fmt.Sprint("s", i), benchTask(), at); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel32", func(b *testing.B) {
		parallel32(b, func(i int64) error { return w.AddTask(ctx, fmt.Sprint("p", i), benchTask(), at) })
	})
}

// BenchmarkAddTasks adds batches of 1000 tasks spread over ten minutes;
// the figure to read is tasks/s.
func BenchmarkAddTasks(b *testing.B) {
	e := newEnv(b)
	w := e.wheel(nil, rtimewheel.WithoutWorker())
	ctx := context.Background()
	start := time.Now().Add(time.Hour)
	const size = 1000
	round := 0
	for b.Loop() {
		batch := make([]rtimewheel.TaskAt, size)
		for i := range batch {
			batch[i] = rtimewheel.TaskAt{Key: fmt.Sprintf("b%d-%d", round, i), Task: benchTask(),
				ExecuteAt: start.Add(time.Duration(i) * 600 * time.Millisecond)}
		}
		round++
		if err := w.AddTasks(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "tasks/s")
}

// countingCaller answers every callback at once, so the benchmark measures
// the wheel (pull, dispatch, ack) and not HTTP.
type countingCaller struct{ n atomic.Int64 }

func (c *countingCaller) Call(ctx context.Context, cb httpclient.Callback) httpclient.Result {
	c.n.Add(1)
	return httpclient.Result{Delivered: true, StatusCode: 200}
}

// BenchmarkPullAndFire schedules 1000 tasks due now per iteration and
// measures until a worker has pulled, fired and acked them all.
func BenchmarkPullAndFire(b *testing.B) {
	e := newEnv(b)
	calls := &countingCaller{}
	client := e.wheel(nil, rtimewheel.WithoutWorker())
	e.wheel(calls, rtimewheel.WithTick(5*time.Millisecond))
	ctx := context.Background()
	const size = 1000
	round := 0
	for b.Loop() {
		b.StopTimer()
		batch := make([]rtimewheel.TaskAt, size)
		for i := range batch {
			batch[i] = rtimewheel.TaskAt{Key: fmt.Sprintf("f%d-%d", round, i), Task: benchTask()}
		}
		round++
		want := calls.n.Load() + size
		if err := client.AddTasks(ctx, batch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for calls.n.Load() < want {
			time.Sleep(100 * time.Microsecond) // polling the counter
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "tasks/s")
}
