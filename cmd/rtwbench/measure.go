package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// opFunc performs one operation for goroutine g and returns how many units
// (calls, tasks, requests) it completed.
type opFunc func(ctx context.Context, g int) (int, error)

// rate runs op from conc goroutines, each repeating it until d has passed,
// and returns the units completed per second. The first error stops the
// run and is returned.
func rate(ctx context.Context, conc int, d time.Duration, op opFunc) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		total    atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	deadline := start.Add(d)
	for g := range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				n, err := op(ctx, g)
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				total.Add(int64(n))
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

// trial is one throughput figure measured in rounds interleaved with the
// others of its group, so that a change in the machine's load hits all of
// them alike.
type trial struct {
	name string
	run  func(ctx context.Context) (float64, error)
}

// interleave runs each trial once per round, in order, and returns each
// trial's median over the rounds.
func interleave(ctx context.Context, p *progress, rounds int, trials ...trial) ([]float64, error) {
	got, err := interleaveRounds(ctx, p, rounds, trials...)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(trials))
	for i, vs := range got {
		out[i] = median(vs)
	}
	return out, nil
}

// interleaveRounds runs each trial once per round, in order, and returns
// every trial's value of every round.
func interleaveRounds(ctx context.Context, p *progress, rounds int, trials ...trial) ([][]float64, error) {
	got := make([][]float64, len(trials))
	for r := range rounds {
		for i, t := range trials {
			p.printf("%s (round %d/%d)", t.name, r+1, rounds)
			v, err := t.run(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			got[i] = append(got[i], v)
		}
	}
	return got, nil
}

// pairedRatio returns the median over rounds of v[r] / limit[r]: each
// figure against its limit measured moments before, so that a change of
// the machine's load between rounds cancels out.
func pairedRatio(v, limit []float64) float64 {
	var rs []float64
	for r := range min(len(v), len(limit)) {
		if limit[r] > 0 {
			rs = append(rs, v[r]/limit[r])
		}
	}
	return median(rs)
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile returns the p-th percentile (0..100) of sorted durations, by
// the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// progress writes one status line for long phases, overwritten in place.
type progress struct {
	mu  sync.Mutex
	out io.Writer // nil: quiet
	len int
}

func (p *progress) printf(format string, args ...any) {
	if p == nil || p.out == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	pad := max(p.len-len(line), 0)
	fmt.Fprintf(p.out, "\r%s%*s", line, pad, "")
	p.len = len(line)
}

// done ends the status line.
func (p *progress) done() {
	if p == nil || p.out == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.len > 0 {
		fmt.Fprintf(p.out, "\r%*s\r", p.len, "")
		p.len = 0
	}
}

// watch prints status() every half second until the returned stop is
// called.
func (p *progress) watch(status func() string) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				p.printf("%s", status())
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

// cost is the CPU one trial round used, client side and in Redis, for the
// units it completed.
type cost struct {
	units         float64
	client, redis time.Duration
}

// costs collects the cost of trials by name.
type costs map[string][]cost

// perUnit returns the CPU per unit of the named trial's rounds, client side
// and in Redis.
func (c costs) perUnit(name string) (client, redis time.Duration) {
	var units float64
	var cl, rd time.Duration
	for _, x := range c[name] {
		units += x.units
		cl += x.client
		rd += x.redis
	}
	if units == 0 {
		return 0, 0
	}
	return time.Duration(float64(cl) / units), time.Duration(float64(rd) / units)
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
