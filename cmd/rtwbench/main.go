// Command rtwbench measures rtimewheel against the limits of the machine it
// runs on, in one run: how fast it accepts tasks (AddTask, AddTasks, the
// HTTP API), how fast and how precisely it fires them, and what waiting
// tasks cost in Redis. Each figure is printed beside the limit it is bounded
// by, measured in the same run on the same Redis: a raw EVALSHA of a minimal
// ZADD script, pipelined ZADDs, a plain Go HTTP client against the same
// receiver the callbacks go to.
//
// Usage:
//
//	rtwbench [--redis host:port] [--json] [flags]
//
// Without --redis it starts its own redis-server (persistence off) on a free
// loopback port and stops it at the end; it fails when redis-server is not
// on PATH. With --redis it works in namespaces of its own and deletes them
// at the end. The HTTP API phase runs `rtimewheel serve` (--rtimewheel, or
// the binary beside rtwbench or on PATH, or built with `go build`); it is
// skipped with a note when none can be found.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is what the flags set.
type config struct {
	redis       string
	json        bool
	quiet       bool
	rounds      int
	duration    time.Duration
	conc        int // goroutines for the single-call figures
	batchConc   int // goroutines for the batch figures
	batchSize   int
	bodyBytes   int
	fireTasks   int
	fireWorkers int
	fireConc    int // callbacks in flight per worker
	scaleTasks  int
	pulls       int
	rtimewheel  string
	cpuProfile  string
	shards      int      // 0: the wheel's default
	args        []string // as given, for the report
	skip        map[string]bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var skip string
	fs := flag.NewFlagSet("rtwbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.redis, "redis", "", "`host:port` of a Redis to use; empty: start redis-server on a free loopback port")
	fs.BoolVar(&c.json, "json", false, "print the results as JSON instead of a table")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress line on stderr")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds of each throughput figure, interleaved with its limit; the median is reported")
	fs.DurationVar(&c.duration, "duration", 2*time.Second, "how long each throughput round runs")
	fs.IntVar(&c.conc, "concurrency", 32, "goroutines for AddTask, raw EVALSHA and the single-task HTTP API")
	fs.IntVar(&c.batchConc, "batch-concurrency", 4, "goroutines for AddTasks, pipelined ZADD and the batch HTTP API")
	fs.IntVar(&c.batchSize, "batch", 1000, "tasks per batch")
	fs.IntVar(&c.bodyBytes, "body-bytes", 100, "bytes of each task's JSON body (req)")
	fs.IntVar(&c.fireTasks, "fire-tasks", 100_000, "tasks due within one second for the firing phase")
	fs.IntVar(&c.fireWorkers, "fire-workers", 3, "workers firing them")
	fs.IntVar(&c.fireConc, "fire-concurrency", 1000, "callbacks in flight per worker (the wheel's default is 1000)")
	fs.IntVar(&c.scaleTasks, "scale-tasks", 1_000_000, "waiting tasks for the memory and pull-time figures")
	fs.IntVar(&c.pulls, "pulls", 100, "pulls measured with and without the waiting tasks")
	fs.StringVar(&c.rtimewheel, "rtimewheel", "", "path of the rtimewheel binary for the HTTP API phase (default: beside rtwbench, on PATH, or go build)")
	fs.IntVar(&c.shards, "shards", 0, "slices per minute (WithShards); 0 keeps the wheel's default")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of rtwbench (client, workers and receiver; not Redis) to `file`")
	fs.StringVar(&skip, "skip", "", "comma-separated phases to skip: add, api, fire, scale")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.args = args
	c.skip = map[string]bool{}
	for _, s := range splitList(skip) {
		switch s {
		case "add", "api", "fire", "scale":
			c.skip[s] = true
		default:
			return c, fmt.Errorf("--skip: unknown phase %q (want add, api, fire, scale)", s)
		}
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"rounds", c.rounds}, {"concurrency", c.conc}, {"batch-concurrency", c.batchConc}, {"batch", c.batchSize},
		{"fire-tasks", c.fireTasks}, {"fire-workers", c.fireWorkers}, {"fire-concurrency", c.fireConc},
		{"scale-tasks", c.scaleTasks}, {"pulls", c.pulls}} {
		if v.n < 1 {
			return c, fmt.Errorf("--%s must be at least 1, got %d", v.name, v.n)
		}
	}
	if c.bodyBytes < len(`{"p":""}`) {
		return c, fmt.Errorf("--body-bytes must be at least %d", len(`{"p":""}`))
	}
	if c.duration <= 0 {
		return c, errors.New("--duration must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "rtwbench:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := &progress{}
	if !cfg.quiet {
		p.out = stderr
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "rtwbench: cpu profile:", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	res, err := bench(ctx, cfg, log, p)
	p.done()
	if err != nil {
		fmt.Fprintln(stderr, "rtwbench:", err)
		return 1
	}
	if cfg.json {
		err = res.writeJSON(stdout)
	} else {
		err = res.writeTable(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rtwbench:", err)
		return 1
	}
	return 0
}
