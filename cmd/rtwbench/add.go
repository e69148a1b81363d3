package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
	"github.com/rtimewheel/rtimewheel/util"
)

// rawZadd is the cheapest useful script: one ZADD. Its EVALSHA rate is the
// limit of any one-script-per-call design on this Redis and machine.
var rawZadd = redisclient.NewScript("rtwbench_zadd", "return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])")

// Names of the rows of the add phase; later rows refer to them as limits.
const (
	rowRawSeq   = "raw EVALSHA (1 ZADD), sequential"
	rowRawPar   = "raw EVALSHA (1 ZADD), %d goroutines"
	rowPipe     = "pipelined ZADD, %d goroutines × %d"
	rowRawTask  = "pipelined raw task writes (ZADD+HSET+HSET), %d goroutines × %d"
	rowAddSeq   = "AddTask, sequential"
	rowAddPar   = "AddTask, %d goroutines"
	rowAddTasks = "AddTasks, %d goroutines × %d tasks"
)

// addPhase measures the limits of Redis (raw EVALSHA, pipelined ZADD) and
// the wheel's AddTask and AddTasks, interleaved round by round.
func (e *env) addPhase(ctx context.Context) error {
	cfg := e.cfg
	ns := e.namespace("add")
	rc := e.client()
	defer rc.Close()
	w := rtimewheel.NewRTimeWheel(rc, nil, e.options(ns, rtimewheel.WithoutWorker())...)
	defer w.Stop()
	var seq atomic.Int64
	next := func() string { return strconv.FormatInt(seq.Add(1), 10) }
	at := time.Now().Add(24 * time.Hour) // never due during the run
	rawKey := "{" + ns + ":raw}:z"
	task := e.task()

	rawCall := func(ctx context.Context, _ int) (int, error) {
		n := next()
		_, err := rc.Eval(ctx, rawZadd, []string{rawKey}, n, "m"+n)
		return 1, err
	}
	addOne := func(ctx context.Context, _ int) (int, error) {
		return 1, w.AddTask(ctx, "a"+next(), task, at)
	}
	spent := costs{}
	single, err := interleaveRounds(ctx, e.p, cfg.rounds,
		e.costed(spent, "raw EVALSHA, sequential", 1, rawCall),
		e.costed(spent, "AddTask, sequential", 1, addOne),
		e.costed(spent, "raw EVALSHA, concurrent", cfg.conc, rawCall),
		e.costed(spent, "AddTask, concurrent", cfg.conc, addOne),
	)
	if err != nil {
		return err
	}

	pool := &redis.Pool{MaxIdle: cfg.batchConc, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", e.addr) }}
	defer pool.Close()
	pipeKey := "{" + ns + ":raw}:p"
	pipelined := func(ctx context.Context, _ int) (int, error) {
		conn, err := pool.GetContext(ctx)
		if err != nil {
			return 0, fmt.Errorf("pipelined zadd: %w", err)
		}
		defer conn.Close()
		for range cfg.batchSize {
			n := next()
			if err := conn.Send("ZADD", pipeKey, n, "m"+n); err != nil {
				return 0, fmt.Errorf("pipelined zadd: %w", err)
			}
		}
		if _, err := conn.Do(""); err != nil {
			return 0, fmt.Errorf("pipelined zadd: %w", err)
		}
		return cfg.batchSize, nil
	}
	// The same data AddTasks stores, written by plain variadic commands:
	// per minute of the batch a ZADD of key -> due time and an HSET of
	// key -> the stored task, per index bucket an HSET of key -> a
	// location. No script, no read of the old location, no encoding: the
	// least Redis work for a store with a key index.
	sample, err := e.storedSample(ctx, w, rc, ns, "sample", at)
	if err != nil {
		return err
	}
	rawKeys := util.NewKeys(ns + "raw")
	rawTasks := func(ctx context.Context, _ int) (int, error) {
		conn, err := pool.GetContext(ctx)
		if err != nil {
			return 0, fmt.Errorf("raw task writes: %w", err)
		}
		defer conn.Close()
		due, body, index := map[int64][]any{}, map[int64][]any{}, map[string][]any{}
		for i := range cfg.batchSize {
			key := "r" + next()
			ms := at.Add(time.Duration(i) * 600 * time.Millisecond).UnixMilli()
			minute := ms / 60_000
			due[minute] = append(due[minute], ms, key)
			body[minute] = append(body[minute], key, sample.body)
			bucket := rawKeys.Index(key)
			index[bucket] = append(index[bucket], key, sample.location)
		}
		for minute, args := range due {
			tag := "{" + ns + ":raw:" + strconv.FormatInt(minute, 10) + "}"
			if err := conn.Send("ZADD", append([]any{tag + ":due"}, args...)...); err != nil {
				return 0, fmt.Errorf("raw task writes: %w", err)
			}
			if err := conn.Send("HSET", append([]any{tag + ":body"}, body[minute]...)...); err != nil {
				return 0, fmt.Errorf("raw task writes: %w", err)
			}
		}
		for bucket, args := range index {
			if err := conn.Send("HSET", append([]any{bucket}, args...)...); err != nil {
				return 0, fmt.Errorf("raw task writes: %w", err)
			}
		}
		if _, err := conn.Do(""); err != nil {
			return 0, fmt.Errorf("raw task writes: %w", err)
		}
		return cfg.batchSize, nil
	}
	addBatch := func(ctx context.Context, _ int) (int, error) {
		batch := make([]rtimewheel.TaskAt, cfg.batchSize)
		for i := range batch {
			// Spread over ten minutes, as a real batch would be.
			batch[i] = rtimewheel.TaskAt{Key: "b" + next(), Task: task, ExecuteAt: at.Add(time.Duration(i) * 600 * time.Millisecond)}
		}
		return len(batch), w.AddTasks(ctx, batch)
	}
	batched, err := interleaveRounds(ctx, e.p, cfg.rounds,
		e.costed(spent, "pipelined ZADD", cfg.batchConc, pipelined),
		e.costed(spent, "raw task writes", cfg.batchConc, rawTasks),
		e.costed(spent, "AddTasks", cfg.batchConc, addBatch),
	)
	if err != nil {
		return err
	}

	r := e.res
	rawPar := fmt.Sprintf(rowRawPar, cfg.conc)
	pipe := fmt.Sprintf(rowPipe, cfg.batchConc, cfg.batchSize)
	addTasks := fmt.Sprintf(rowAddTasks, cfg.batchConc, cfg.batchSize)
	r.add(row{Name: rowRawSeq, Value: median(single[0]), Unit: "calls/s"})
	r.add(row{Name: rawPar, Value: median(single[2]), Unit: "calls/s"})
	r.add(row{Name: pipe, Value: median(batched[0]), Unit: "ZADDs/s"})
	rawTask := fmt.Sprintf(rowRawTask, cfg.batchConc, cfg.batchSize)
	r.add(row{Name: rawTask, Value: median(batched[1]), Unit: "tasks/s"})
	r.add(row{Name: rowAddSeq, Value: median(single[1]), Unit: "tasks/s", Limit: rowRawSeq, Ratio: pairedRatio(single[1], single[0])})
	par := pairedRatio(single[3], single[2])
	parMet := par >= 0.8
	r.add(row{Name: fmt.Sprintf(rowAddPar, cfg.conc), Value: median(single[3]), Unit: "tasks/s", Limit: rawPar, Ratio: par,
		Target: "ratio ≥ 0.8", Met: &parMet})
	met := median(batched[2]) >= 250_000
	r.add(row{Name: addTasks, Value: median(batched[2]), Unit: "tasks/s", Limit: pipe, Ratio: pairedRatio(batched[2], batched[0]),
		Target: "≥ 250k tasks/s", Met: &met})
	r.add(row{Name: addTasks + " (vs raw writes of the same data)", Value: median(batched[2]), Unit: "tasks/s", Limit: rawTask, Ratio: pairedRatio(batched[2], batched[1])})
	r.note("add: values are medians of %d rounds of %s, each figure measured right after its limit; ratios are medians of the ratios of each round", cfg.rounds, cfg.duration)
	for _, t := range []struct{ trial, name string }{
		{"raw EVALSHA, concurrent", rawPar},
		{"AddTask, concurrent", fmt.Sprintf(rowAddPar, cfg.conc)},
		{"pipelined ZADD", pipe},
		{"raw task writes", rawTask},
		{"AddTasks", addTasks},
	} {
		client, redis := spent.perUnit(t.trial)
		r.add(row{Name: "Redis CPU per call or task: " + t.name, Value: float64(redis.Nanoseconds()) / 1000, Unit: "µs"})
		r.add(row{Name: "client CPU per call or task: " + t.name, Value: float64(client.Nanoseconds()) / 1000, Unit: "µs"})
	}
	return nil
}

// costed is a trial of op from conc goroutines that also records, in spent,
// the CPU it took in this process and in Redis's main thread.
func (e *env) costed(spent costs, name string, conc int, op opFunc) trial {
	return trial{name, func(ctx context.Context) (float64, error) {
		c0 := processCPU()
		r0, err := redisCPU(ctx, e.redis)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		v, err := rate(ctx, conc, e.cfg.duration, op)
		if err != nil {
			return 0, err
		}
		units := v * time.Since(start).Seconds()
		r1, err := redisCPU(ctx, e.redis)
		if err != nil {
			return 0, err
		}
		spent[name] = append(spent[name], cost{units: units, client: processCPU() - c0, redis: r1 - r0})
		return v, nil
	}}
}

// addSpread adds n tasks made by item (the task itself is e.task()) with
// AddTasks, in batches of cfg.batchSize from cfg.batchConc goroutines,
// showing label and the count on the progress line.
func (e *env) addSpread(ctx context.Context, w *rtimewheel.RTimeWheel, n int, label string, item func(i int) rtimewheel.TaskAt) error {
	cfg := e.cfg
	var next atomic.Int64
	task := e.task()
	stop := e.p.watch(func() string { return fmt.Sprintf("%s %d/%d", label, min(int(next.Load()), n), n) })
	defer stop()
	var wg sync.WaitGroup
	errs := make([]error, cfg.batchConc)
	for g := range cfg.batchConc {
		wg.Go(func() {
			for {
				from := int(next.Add(int64(cfg.batchSize))) - cfg.batchSize
				if from >= n {
					return
				}
				batch := make([]rtimewheel.TaskAt, 0, cfg.batchSize)
				for i := from; i < min(from+cfg.batchSize, n); i++ {
					it := item(i)
					it.Task = task
					batch = append(batch, it)
				}
				if err := w.AddTasks(ctx, batch); err != nil {
					errs[g] = fmt.Errorf("%s: %w", label, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
