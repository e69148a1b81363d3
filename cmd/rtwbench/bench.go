package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
	"github.com/rtimewheel/rtimewheel/util"
)

// env is what the phases of one run share.
type env struct {
	cfg   config
	addr  string              // Redis
	redis *redisclient.Client // for raw calls, INFO and cleanup
	log   *slog.Logger
	p     *progress
	res   *results
	id    string   // prefix of this run's namespaces
	nss   []string // namespaces used, deleted at the end
	body  json.RawMessage
	recv  *receiver
}

// namespace returns a fresh namespace of this run for purpose.
func (e *env) namespace(purpose string) string {
	ns := e.id + "-" + purpose
	e.nss = append(e.nss, ns)
	return ns
}

// options returns the options of every wheel of the run in namespace ns,
// followed by extra.
func (e *env) options(ns string, extra ...rtimewheel.Option) []rtimewheel.Option {
	opts := []rtimewheel.Option{rtimewheel.WithNamespace(ns), rtimewheel.WithLogger(e.log)}
	if e.cfg.shards > 0 {
		opts = append(opts, rtimewheel.WithShards(e.cfg.shards))
	}
	return append(opts, extra...)
}

// client returns a new Redis client; the caller closes it.
func (e *env) client() *redisclient.Client {
	return redisclient.NewClient("tcp", e.addr, "")
}

// task is the task every phase schedules: a body of cfg.bodyBytes to the
// receiver.
func (e *env) task() *rtimewheel.RTaskElement {
	return &rtimewheel.RTaskElement{CallbackURL: e.recv.url + "/hook", Req: e.body}
}

// stored is what the wheel keeps in Redis for one task: its value in the
// slice's body hash and its entry in the index.
type stored struct {
	body, location string
}

// storedSample adds e.task() under key, due at, with w (of namespace ns)
// and reads back what the wheel stored for it. The raw limits write values
// as long as these, so they follow the wheel's format as it changes.
func (e *env) storedSample(ctx context.Context, w *rtimewheel.RTimeWheel, rc *redisclient.Client, ns, key string, at time.Time) (stored, error) {
	if err := w.AddTask(ctx, key, e.task(), at); err != nil {
		return stored{}, fmt.Errorf("sample task: %w", err)
	}
	keys := util.NewKeys(ns).WithShards(w.Shards())
	slice := keys.Slice(util.EpochMinute(util.CeilMillis(at)), util.Shard(key, w.Shards()))
	body, err := redis.String(rc.Do(ctx, "HGET", slice.Body, key))
	if err != nil {
		return stored{}, fmt.Errorf("sample task: read its body: %w", err)
	}
	location, err := redis.String(rc.Do(ctx, "HGET", keys.Index(key), key))
	if err != nil {
		return stored{}, fmt.Errorf("sample task: read its index entry: %w", err)
	}
	return stored{body, location}, nil
}

// bench runs every phase not skipped and returns the results.
func bench(ctx context.Context, cfg config, log *slog.Logger, p *progress) (*results, error) {
	e := &env{cfg: cfg, log: log, p: p, id: fmt.Sprintf("rtwbench%x", rand.Uint32()), body: jsonBody(cfg.bodyBytes)}
	e.res = &results{Command: strings.TrimSpace("rtwbench " + strings.Join(cfg.args, " ")), Started: time.Now().UTC()}
	e.addr = cfg.redis
	if e.addr == "" {
		p.printf("starting redis-server")
		r, err := startRedis(ctx)
		if err != nil {
			return nil, err
		}
		defer r.stop()
		e.addr = r.addr
		e.res.Redis = "own redis-server on " + r.addr
	} else {
		e.res.Redis = "--redis " + e.addr
	}
	e.redis = e.client()
	defer e.redis.Close()
	if _, err := e.redis.Do(ctx, "PING"); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", e.addr, err)
	}
	if cfg.redis != "" {
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			for _, ns := range e.nss {
				p.printf("deleting namespace %s", ns)
				if err := deleteNamespace(cctx, e.redis, ns); err != nil {
					log.Warn("rtwbench: cleanup failed", "error", err)
				}
			}
		}()
	}
	recv, err := startReceiver(cfg.fireTasks)
	if err != nil {
		return nil, err
	}
	defer recv.close()
	e.recv = recv

	m := describeMachine(ctx, e.redis)
	start := time.Now()
	phases := []struct {
		name string
		run  func(context.Context) error
	}{
		{"add", e.addPhase},
		{"api", e.apiPhase},
		{"fire", e.firePhase},
		{"scale", e.scalePhase},
	}
	for _, ph := range phases {
		if cfg.skip[ph.name] {
			e.res.note("phase %s skipped (--skip)", ph.name)
			continue
		}
		if err := ph.run(ctx); err != nil {
			return nil, fmt.Errorf("%s phase: %w", ph.name, err)
		}
		p.done()
	}
	m.finish()
	e.res.Machine = m
	e.res.Elapsed = time.Since(start).Round(time.Second).String()
	return e.res, nil
}

// jsonBody returns a JSON object of exactly n bytes.
func jsonBody(n int) json.RawMessage {
	pad := n - len(`{"p":""}`)
	return json.RawMessage(`{"p":"` + strings.Repeat("x", max(pad, 0)) + `"}`)
}

// machine describes where the run happened.
type machine struct {
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpu_model"`
	GoVersion string  `json:"go_version"`
	Redis     string  `json:"redis_version"`
	LoadStart string  `json:"load_start"`
	LoadEnd   string  `json:"load_end"`
	StealPct  float64 `json:"steal_pct"` // CPU taken by the hypervisor during the run
	steal0    cpuTimes
}

func describeMachine(ctx context.Context, c *redisclient.Client) machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadStart: loadAvg(), steal0: readCPUTimes()}
	m.Redis, _ = redisInfo(ctx, c, "server", "redis_version")
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func (m *machine) finish() {
	m.LoadEnd = loadAvg()
	m.StealPct = m.steal0.stealSince(readCPUTimes())
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuTimes are the aggregate CPU counters of /proc/stat.
type cpuTimes struct{ total, steal uint64 }

func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var t cpuTimes
	for i, s := range f[1:] {
		var v uint64
		fmt.Sscan(s, &v)
		t.total += v
		if i == 7 {
			t.steal = v
		}
	}
	return t
}

func (t cpuTimes) stealSince(u cpuTimes) float64 {
	if u.total <= t.total {
		return 0
	}
	return 100 * float64(u.steal-t.steal) / float64(u.total-t.total)
}
