package rtimewheel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
	"github.com/rtimewheel/rtimewheel/util"
)

// env is a Redis for one test: miniredis by default, the Redis Cluster at
// RTW_TEST_REDIS_CLUSTER (seed nodes) or the real server at RTW_TEST_REDIS,
// with a namespace of the test's own.
type env struct {
	t       testing.TB
	mini    *miniredis.Miniredis // nil on a real Redis
	raw     testRedis
	cluster *redisclient.ClusterClient // nil unless on a cluster
	redis   *slotChecker
	ns      string
}

// testRedis is what tests need of a standalone or cluster client.
type testRedis interface {
	rtimewheel.RedisClient
	Close() error
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, ns: fmt.Sprintf("t%x", rand.Uint32())}
	if seeds := os.Getenv("RTW_TEST_REDIS_CLUSTER"); seeds != "" {
		c, err := redisclient.NewClusterClientFromURL(seeds)
		if err != nil {
			t.Fatalf("RTW_TEST_REDIS_CLUSTER: %v", err)
		}
		e.raw, e.cluster = c, c
	} else {
		addr := os.Getenv("RTW_TEST_REDIS")
		if addr == "" {
			e.mini = miniredis.RunT(t)
			addr = e.mini.Addr()
		}
		e.raw = redisclient.NewClient("tcp", addr, "")
	}
	t.Cleanup(func() {
		if e.mini == nil {
			for _, key := range e.keys() {
				e.raw.Do(context.Background(), "DEL", key)
			}
		}
		e.raw.Close()
	})
	e.redis = &slotChecker{t: t, next: e.raw, seen: map[string]bool{}}
	return e
}

// requireMini skips a test that needs miniredis's controls.
func (e *env) requireMini() {
	if e.mini == nil {
		e.t.Skip("needs miniredis (close/restart/fast-forward); skipped against a real Redis")
	}
}

// keys lists every key of the test's namespace.
func (e *env) keys() []string {
	e.t.Helper()
	var out []string
	for _, pattern := range []string{e.ns + ":*", "{" + e.ns + ":*"} {
		if e.cluster != nil {
			// KEYS on each master: test namespaces hold few keys.
			replies, err := e.cluster.DoEachMaster(context.Background(), "KEYS", pattern)
			if err != nil {
				e.t.Fatalf("keys: %v", err)
			}
			for _, reply := range replies {
				for _, k := range cast.ToSlice(reply) {
					out = append(out, cast.ToString(k))
				}
			}
			continue
		}
		cursor := "0"
		for {
			reply, err := e.raw.Do(context.Background(), "SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
			if err != nil {
				e.t.Fatalf("scan: %v", err)
			}
			parts := cast.ToSlice(reply)
			cursor = cast.ToString(parts[0])
			for _, k := range cast.ToSlice(parts[1]) {
				out = append(out, cast.ToString(k))
			}
			if cursor == "0" {
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// wheel starts a wheel on the test's Redis and stops it at cleanup.
func (e *env) wheel(call rtimewheel.CallbackClient, opts ...rtimewheel.Option) *rtimewheel.RTimeWheel {
	opts = append([]rtimewheel.Option{rtimewheel.WithNamespace(e.ns), rtimewheel.WithLogger(testLogger(e.t))}, opts...)
	w := rtimewheel.NewRTimeWheel(e.redis, call, opts...)
	e.t.Cleanup(w.Stop)
	return w
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// slotChecker passes calls through to Redis and fails the test when a
// script call names keys of more than one cluster slot.
type slotChecker struct {
	t    testing.TB
	next rtimewheel.RedisClient
	mu   sync.Mutex
	seen map[string]bool // scripts called
}

func (s *slotChecker) check(script *redisclient.Script, keys []string) {
	s.mu.Lock()
	s.seen[script.Name()] = true
	s.mu.Unlock()
	if len(keys) == 0 {
		s.t.Errorf("script %s called without keys", script.Name())
		return
	}
	for _, k := range keys[1:] {
		if util.HashSlot(k) != util.HashSlot(keys[0]) {
			s.t.Errorf("script %s: keys %q and %q are in slots %d and %d",
				script.Name(), keys[0], k, util.HashSlot(keys[0]), util.HashSlot(k))
		}
	}
}

func (s *slotChecker) Eval(ctx context.Context, script *redisclient.Script, keys []string, args ...any) (any, error) {
	s.check(script, keys)
	return s.next.Eval(ctx, script, keys, args...)
}

func (s *slotChecker) EvalBatch(ctx context.Context, calls []redisclient.ScriptCall) ([]redisclient.Reply, error) {
	for _, c := range calls {
		s.check(c.Script, c.Keys)
	}
	return s.next.EvalBatch(ctx, calls)
}

func (s *slotChecker) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	return s.next.Do(ctx, cmd, args...)
}

func (s *slotChecker) scriptsSeen() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps(s.seen)
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// received is one callback as the receiver saw it.
type received struct {
	key         string
	attempt     int
	at          time.Time
	method      string
	body        string
	header      http.Header
	scheduledAt string
}

// receiver is an HTTP server that records callbacks and answers them with
// the status respond returns (200 when respond is nil).
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []received
	changed chan struct{} // closed and replaced on every callback
	respond func(key string, attempt int) int
}

func newReceiver(t testing.TB, respond func(key string, attempt int) int) *receiver {
	r := &receiver{changed: make(chan struct{}), respond: respond}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(rw http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(req.Body)
	attempt, _ := strconv.Atoi(req.Header.Get("Rtw-Attempt"))
	rec := received{key: req.Header.Get("Rtw-Task-Key"), attempt: attempt, at: at, method: req.Method,
		body: string(body), header: req.Header.Clone(), scheduledAt: req.Header.Get("Rtw-Scheduled-At")}
	status := http.StatusOK
	if r.respond != nil {
		status = r.respond(rec.key, rec.attempt)
	}
	r.mu.Lock()
	r.got = append(r.got, rec)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	rw.WriteHeader(status)
}

func (r *receiver) url() string { return r.srv.URL + "/hook" }

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// waitUntil waits until cond holds for the callbacks received (cond must
// not keep the slice or call the receiver), failing the
// test after timeout.
func (r *receiver) waitUntil(t testing.TB, timeout time.Duration, what string, cond func([]received) bool) []received {
	t.Helper()
	deadline := time.After(timeout)
	for {
		// cond runs under the lock on the live slice; only the result is
		// copied, so waiting costs no copy per callback.
		r.mu.Lock()
		done, changed, count := cond(r.got), r.changed, len(r.got)
		var got []received
		if done {
			got = slices.Clone(r.got)
		}
		r.mu.Unlock()
		if done {
			return got
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s; %d callbacks received", timeout, what, count)
		}
	}
}

// waitCount waits for at least n callbacks.
func (r *receiver) waitCount(t testing.TB, n int, timeout time.Duration) []received {
	t.Helper()
	return r.waitUntil(t, timeout, fmt.Sprintf("%d callbacks", n), func(got []received) bool { return len(got) >= n })
}

// newHTTP returns a callback client for tests.
func newHTTP() *httpclient.Client { return httpclient.NewClient() }

func task(url string, body any) *rtimewheel.RTaskElement {
	return &rtimewheel.RTaskElement{CallbackURL: url, Req: body}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func (e *env) waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
}

// count returns the entries of a zset, hash or set key.
func (e *env) count(key string) int {
	ctx := context.Background()
	kind, _ := e.raw.Do(ctx, "TYPE", key)
	cmd := map[string]string{"zset": "ZCARD", "hash": "HLEN", "set": "SCARD"}[cast.ToString(kind)]
	if cmd == "" {
		return 0
	}
	n, _ := e.raw.Do(ctx, cmd, key)
	return cast.ToInt(n)
}

// leased counts the leases held in every slice.
func (e *env) leased() int {
	n := 0
	for _, key := range e.keys() {
		if strings.HasSuffix(key, ":lease") {
			n += e.count(key)
		}
	}
	return n
}

func (e *env) pttl(key string) time.Duration {
	reply, _ := e.raw.Do(context.Background(), "PTTL", key)
	ms := cast.ToInt64(reply)
	if ms < 0 {
		return time.Duration(ms)
	}
	return time.Duration(ms) * time.Millisecond
}

func toInt64(v any) int64 { return cast.ToInt64(cast.ToString(v)) }

func isNotFound(err error) bool { return errors.Is(err, rtimewheel.ErrNotFound) }

// testClock is a clock a test sets by hand, safe for concurrent use.
type testClock struct{ nanos atomic.Int64 }

func newTestClock(at time.Time) *testClock {
	c := &testClock{}
	c.Set(at)
	return c
}

func (c *testClock) Now() time.Time   { return time.Unix(0, c.nanos.Load()) }
func (c *testClock) Set(at time.Time) { c.nanos.Store(at.UnixNano()) }
