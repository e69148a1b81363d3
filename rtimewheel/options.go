package rtimewheel

import (
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	DefaultNamespace   = "rtw"
	DefaultTick        = time.Second
	DefaultLease       = 60 * time.Second
	DefaultConcurrency = 1000
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = time.Hour
	// DefaultShards is the shards per minute on a standalone Redis, and
	// DefaultClusterShards on a Redis Cluster (see WithShards).
	DefaultShards        = 1
	DefaultClusterShards = 12
)

// maxShards is the most shards per minute WithShards accepts.
const maxShards = 1024

// Option configures an RTimeWheel.
type Option func(*config)

type config struct {
	namespace   string
	tick        time.Duration
	lease       time.Duration
	concurrency int
	minBackoff  time.Duration
	maxBackoff  time.Duration
	shards      int
	logger      *slog.Logger
	now         func() time.Time
	customClock bool
	worker      bool
	onCallback  func(CallbackEvent)
	onPull      func(PullEvent)
}

func defaultConfig() config {
	return config{
		namespace:   DefaultNamespace,
		tick:        DefaultTick,
		lease:       DefaultLease,
		concurrency: DefaultConcurrency,
		minBackoff:  DefaultMinBackoff,
		maxBackoff:  DefaultMaxBackoff,
		shards:      0, // by the Redis mode, see pinShards
		logger:      slog.Default(),
		now:         time.Now,
		worker:      true,
	}
}

// WithNamespace sets the prefix of every Redis key (default "rtw"): 1 to 64
// letters, digits, '-', '_' or '.'. Wheels in different namespaces never see
// each other's tasks.
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithTick sets how often the worker pulls from Redis (default 1s). Tasks are
// pulled up to one tick ahead and fired from local timers, so the tick bounds
// how late an overdue task is found, not how precisely tasks fire.
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithLease sets how long a pulled task stays owned by its worker before
// another worker may take it over (default 60s). It should exceed the tick
// plus the longest callback timeout, or a slow callback may fire twice.
func WithLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithConcurrency bounds the callbacks in flight at once (default 1000).
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithBackoff sets the first retry delay and its cap (defaults 1s and 1h).
// The delay doubles per failed attempt, with ±20% jitter.
func WithBackoff(minDelay, maxDelay time.Duration) Option {
	return func(c *config) { c.minBackoff, c.maxBackoff = minDelay, maxDelay }
}

// WithShards splits every minute into n slices (1 to 1024), the shard
// chosen from the task key, so that one busy minute spreads over the
// masters of a Redis Cluster: each shard's slot is placed in its own n-th
// of the slot space, so with 12 shards every master of a 1-, 2-, 3-, 4- or
// 6-master cluster holds the same share of each minute. Workers pull every
// shard of every minute they scan and a batch writes each shard apart, so
// more shards cost more script calls. Without WithShards (or with n = 0)
// the wheel asks Redis: DefaultClusterShards (12) on a Redis Cluster,
// DefaultShards (1) on a standalone Redis.
//
// The first wheel of a namespace stores n in Redis; a later wheel given
// another n uses the stored one and logs a warning, since wheels that
// slice minutes differently would not find each other's tasks.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithClock sets the source of the current time (default time.Now). Timers
// still run on the real clock; tests use this to jump ahead.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now, c.customClock = now, true }
}

// WithoutWorker makes a client-only handle: it adds, removes and reads tasks
// but never pulls or fires them.
func WithoutWorker() Option { return func(c *config) { c.worker = false } }

// WithCallbackHook calls fn after every callback attempt, from the goroutine
// that made it. fn must be fast and safe for concurrent use; it feeds metrics.
func WithCallbackHook(fn func(CallbackEvent)) Option { return func(c *config) { c.onCallback = fn } }

// WithPullHook calls fn after every pull from Redis.
func WithPullHook(fn func(PullEvent)) Option { return func(c *config) { c.onPull = fn } }

// Outcome is what became of a task after a callback attempt.
type Outcome string

// The outcomes of an attempt.
const (
	OutcomeDelivered Outcome = "delivered" // 2xx: the task is done
	OutcomeRetry     Outcome = "retry"     // failed; scheduled again at NextAttemptAt
	OutcomeDead      Outcome = "dead"      // failed its last attempt; now a dead letter
	OutcomeDropped   Outcome = "dropped"   // removed or replaced while in flight; nothing more to do
)

// CallbackEvent describes one callback attempt.
type CallbackEvent struct {
	Key           string
	Attempt       int
	DueAt         time.Time // when this attempt was due
	FiredAt       time.Time // when the request started
	Duration      time.Duration
	Outcome       Outcome
	StatusCode    int   // 0 when no response arrived
	Err           error // nil when delivered
	NextAttemptAt time.Time
}

// Lateness is how long after its due time the attempt started.
func (e CallbackEvent) Lateness() time.Duration { return e.FiredAt.Sub(e.DueAt) }

// PullEvent describes one pull from Redis.
type PullEvent struct {
	Tasks    int // tasks taken, including those taken over from expired leases
	Duration time.Duration
	Err      error
}
