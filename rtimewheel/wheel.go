package rtimewheel

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/lua"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/util"
)

// RTimeWheel schedules tasks in Redis and, unless made WithoutWorker, runs a
// worker that fires them. Its methods are safe for concurrent use.
type RTimeWheel struct {
	cfg     config
	redis   RedisClient
	http    CallbackClient
	keys    util.Keys // the namespace's keys; never reassigned (background loops read it)
	scripts *lua.Scripts
	log     *slog.Logger

	// clockOffset is Redis's clock minus ours in nanoseconds, measured by
	// the worker; only a negative offset (our clock ahead) is applied, so a
	// worker never fires early by either clock.
	clockOffset atomic.Int64
	// watermarkSet is true once this handle has made sure the shared
	// watermark exists, so tasks it adds are scanned.
	watermarkSet atomic.Bool
	// adds coalesces concurrent AddTask calls into batches.
	adds addQueue

	// pinned is set once cfg.shards and sliceKeys hold the namespace's
	// shard count (see ready); pinMu serializes the asking. Only code that
	// passed ready reads cfg.shards and sliceKeys.
	pinned    atomic.Bool
	pinMu     sync.Mutex
	sliceKeys util.Keys

	stopOnce sync.Once
	stopped  atomic.Bool
	worker   *worker // nil for a client-only handle
}

// NewRTimeWheel returns a wheel on redisClient that calls back through
// httpClient and, unless WithoutWorker is given, starts its worker, which
// runs until Stop. An option out of range is replaced by its default and
// the replacement is logged.
func NewRTimeWheel(redisClient RedisClient, httpClient CallbackClient, opts ...Option) *RTimeWheel {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	cfg.sanitize()
	w := &RTimeWheel{
		cfg:     cfg,
		redis:   redisClient,
		http:    httpClient,
		keys:    util.NewKeys(cfg.namespace),
		scripts: lua.New(),
		log:     cfg.logger,
	}
	w.loadScripts()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := w.ready(ctx); err != nil {
		w.log.Warn("rtimewheel: Redis did not tell the namespace's shard count; operations wait for it", "error", err)
	}
	cancel()
	if cfg.worker {
		w.worker = newWorker(w)
		w.worker.start()
	}
	return w
}

// loadScripts loads the scripts into Redis ahead of use, when the client
// can, so that the first batches run by EVALSHA in the order sent. Failure
// is harmless: a NOSCRIPT reply makes the client load them on demand.
func (w *RTimeWheel) loadScripts() {
	loader, ok := w.redis.(interface {
		LoadScripts(ctx context.Context, scripts ...*redisclient.Script) error
	})
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := loader.LoadScripts(ctx, w.scripts.All()...); err != nil {
		w.log.Warn("rtimewheel: could not load scripts ahead of use", "error", err)
	}
}

// ready makes sure the wheel knows its namespace's shard count before it
// touches a slice: the first call (NewRTimeWheel's, or the first operation
// after Redis came back) asks Redis, later calls return at once. Until it
// succeeds, operations on slices fail as unavailable rather than guess a
// count other wheels may not share.
func (w *RTimeWheel) ready(ctx context.Context) error {
	if w.pinned.Load() {
		return nil
	}
	w.pinMu.Lock()
	defer w.pinMu.Unlock()
	if w.pinned.Load() {
		return nil
	}
	if err := w.pinShards(ctx); err != nil {
		return storeErr("read the namespace's shard count", err)
	}
	w.pinned.Store(true) // publishes cfg.shards and sliceKeys to the readers
	return nil
}

// begin starts a public operation that touches slices: not after Stop, and
// only once the shard count is known.
func (w *RTimeWheel) begin(ctx context.Context, op string) error {
	if err := w.checkStopped(op); err != nil {
		return err
	}
	if err := w.ready(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// pinShards makes the wheel slice minutes as every other wheel of its
// namespace does: the first wheel stores its shard count in Redis (the
// configured one, or by default DefaultClusterShards on a Redis Cluster and
// DefaultShards on a standalone Redis), later ones adopt the stored count,
// and one configured otherwise says so in the log.
func (w *RTimeWheel) pinShards(ctx context.Context) error {
	configured := w.cfg.shards
	key := w.keys.ShardCount()
	reply, err := w.redis.Do(ctx, "GET", key)
	if err != nil {
		return err
	}
	if reply == nil {
		want := configured
		if want == 0 {
			want = DefaultShards
			cluster, err := w.onCluster(ctx)
			if err != nil {
				return err
			}
			if cluster {
				want = DefaultClusterShards
			}
		}
		if _, err := w.redis.Do(ctx, "SET", key, want, "NX"); err != nil {
			return err
		}
		if reply, err = w.redis.Do(ctx, "GET", key); err != nil {
			return err
		}
	}
	stored, err := cast.ToIntE(cast.ToString(reply))
	if err != nil || stored < 1 || stored > maxShards {
		return fmt.Errorf("%s holds %q, not a shard count from 1 to %d", key, cast.ToString(reply), maxShards)
	}
	if configured != 0 && stored != configured {
		w.log.Warn("rtimewheel: the namespace was created with another shard count; using it, as every wheel of a namespace must",
			"namespace", w.cfg.namespace, "configured", configured, "stored", stored)
	}
	w.setShards(stored)
	return nil
}

// Shards returns the namespace's shards per minute, or 0 while Redis has
// not been reachable to tell it.
func (w *RTimeWheel) Shards() int {
	if !w.pinned.Load() {
		return 0
	}
	return w.cfg.shards
}

// setShards makes the wheel slice minutes into n shards.
func (w *RTimeWheel) setShards(n int) {
	w.cfg.shards = n
	w.sliceKeys = w.keys.WithShards(n)
}

// onCluster reports whether Redis says it runs in cluster mode. Redis out
// of reach is an error, not "standalone": the count chosen here is pinned
// for every wheel of the namespace. A server that refuses INFO (an ACL)
// gives no sign of a cluster.
func (w *RTimeWheel) onCluster(ctx context.Context) (bool, error) {
	reply, err := w.redis.Do(ctx, "INFO", "cluster")
	if err != nil {
		if redisclient.IsUnavailable(err) || ctx.Err() != nil {
			return false, err
		}
		w.log.Debug("rtimewheel: Redis refused INFO cluster; taking it for a standalone Redis", "error", err)
		return false, nil
	}
	return strings.Contains(cast.ToString(reply), "cluster_enabled:1"), nil
}

// sanitize replaces out-of-range options by their defaults, logging each.
func (c *config) sanitize() {
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	fix := func(name string, bad bool, got any, reset func(), def any) {
		if bad {
			c.logger.Warn("rtimewheel: option out of range, using the default", "option", name, "value", got, "default", def)
			reset()
		}
	}
	fix("namespace", !util.ValidNamespace(c.namespace), c.namespace, func() { c.namespace = DefaultNamespace }, DefaultNamespace)
	fix("tick", c.tick < time.Millisecond, c.tick, func() { c.tick = DefaultTick }, DefaultTick)
	fix("lease", c.lease < time.Second, c.lease, func() { c.lease = DefaultLease }, DefaultLease)
	fix("concurrency", c.concurrency < 1, c.concurrency, func() { c.concurrency = DefaultConcurrency }, DefaultConcurrency)
	fix("min backoff", c.minBackoff <= 0, c.minBackoff, func() { c.minBackoff = DefaultMinBackoff }, DefaultMinBackoff)
	fix("max backoff", c.maxBackoff < c.minBackoff, c.maxBackoff, func() { c.maxBackoff = max(DefaultMaxBackoff, c.minBackoff) }, DefaultMaxBackoff)
	fix("shards", c.shards < 0 || c.shards > maxShards, c.shards, func() { c.shards = 0 }, "by the Redis mode")
	if c.worker && c.lease < c.tick+MaxTimeout {
		c.logger.Info("rtimewheel: the lease is shorter than the tick plus the longest callback timeout; a slow callback may be taken over and fire twice",
			"lease", c.lease, "tick", c.tick)
	}
}

// now is the wheel's clock: the configured one, corrected toward Redis's
// clock when ours runs ahead of it.
func (w *RTimeWheel) now() time.Time {
	t := w.cfg.now()
	if off := w.clockOffset.Load(); off < 0 {
		t = t.Add(time.Duration(off))
	}
	return t
}

// storeErr wraps an error from Redis with context, marking unavailability.
func storeErr(op string, err error) error {
	if redisclient.IsUnavailable(err) {
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// ensureWatermark creates the shared watermark at the current minute when
// it does not exist yet, so that no worker starts scanning after the first
// tasks. It runs once per handle.
func (w *RTimeWheel) ensureWatermark(ctx context.Context) error {
	if w.watermarkSet.Load() {
		return nil
	}
	minute := util.EpochMinute(util.Millis(w.now())) - 1
	if _, err := w.redis.Do(ctx, "SET", w.keys.Watermark(), minute, "NX"); err != nil {
		return storeErr("create watermark", err)
	}
	w.watermarkSet.Store(true)
	return nil
}

func (w *RTimeWheel) slice(minute int64, shard int) []string {
	return w.sliceKeys.Slice(minute, shard).List()
}

// InFlight returns the callbacks in flight now.
func (w *RTimeWheel) InFlight() int {
	if w.worker == nil {
		return 0
	}
	return int(w.worker.inFlight.Load())
}

// Stop stops the worker: it stops pulling, hands the tasks it pulled but
// has not fired back to Redis, due at their own time, and waits for the
// callbacks in flight (each bounded by its timeout) and their outcomes to be
// recorded. Calls after the first return at once. After Stop, every method
// returns ErrStopped.
func (w *RTimeWheel) Stop() {
	w.stopOnce.Do(func() {
		w.stopped.Store(true)
		if w.worker != nil {
			w.worker.stop(true)
		}
	})
}

func (w *RTimeWheel) checkStopped(op string) error {
	if w.stopped.Load() {
		return fmt.Errorf("%s: %w", op, ErrStopped)
	}
	return nil
}
