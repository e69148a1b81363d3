package redisclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cast"
)

func TestEvalKeysAndArgs(t *testing.T) {
	addr, _ := testServer(t)
	c := newTestClient(t, addr)
	p := keyPrefix(t, c)
	ctx := testCtx(t)

	s := uniqueScript(t, "incr-and-set", `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
return {n, redis.call('GET', KEYS[2]), #KEYS, #ARGV}`)
	for i, want := range []int64{5, 10} {
		v, err := c.Eval(ctx, s, []string{p + "n", p + "s"}, 5, "hello")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		vals, ok := v.([]any)
		if !ok || len(vals) != 4 {
			t.Fatalf("call %d: reply %#v, want 4 values", i, v)
		}
		if got := vals[0]; got != want {
			t.Errorf("call %d: INCRBY = %#v, want %d", i, got, want)
		}
		if got, ok := vals[1].([]byte); !ok || string(got) != "hello" {
			t.Errorf("call %d: GET = %#v, want []byte(hello)", i, vals[1])
		}
		if vals[2] != int64(2) || vals[3] != int64(2) {
			t.Errorf("call %d: #KEYS, #ARGV = %v, %v, want 2, 2", i, vals[2], vals[3])
		}
	}

	// No keys, a nil reply and a status reply.
	v, err := c.Eval(ctx, uniqueScript(t, "nil", `return nil`), nil)
	if err != nil || v != nil {
		t.Errorf("nil script = %#v, %v, want nil, nil", v, err)
	}
	v, err = c.Eval(ctx, uniqueScript(t, "status", `return redis.status_reply('FINE')`), nil)
	if err != nil || v != "FINE" {
		t.Errorf("status script = %#v, %v, want FINE, nil", v, err)
	}
	v, err = c.Eval(ctx, uniqueScript(t, "args-only", `return #KEYS .. ':' .. ARGV[1] .. ARGV[2]`), nil, "a", 7)
	if err != nil || cast.ToString(v) != "0:a7" {
		t.Errorf("args-only script = %#v, %v, want 0:a7", v, err)
	}
}

func TestEvalScriptError(t *testing.T) {
	addr, _ := testServer(t)
	c := newTestClient(t, addr)
	p := keyPrefix(t, c)
	ctx := testCtx(t)

	_, err := c.Eval(ctx, uniqueScript(t, "fails", `return redis.error_reply('MYERR it broke')`), nil)
	var re redis.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "MYERR it broke") {
		t.Fatalf("err = %v, want a redis.Error with MYERR it broke", err)
	}
	if !strings.HasPrefix(err.Error(), "redisclient: eval fails: ") {
		t.Errorf("err = %q, want it to name the script", err)
	}
	if IsUnavailable(err) {
		t.Errorf("IsUnavailable(%v) = true for a script error", err)
	}

	if _, err := c.Do(ctx, "SET", p+"str", "x"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Eval(ctx, uniqueScript(t, "wrongtype", `return redis.call('HGET', KEYS[1], 'f')`), []string{p + "str"})
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") || IsUnavailable(err) {
		t.Errorf("err = %v (unavailable %v), want WRONGTYPE, not unavailable", err, IsUnavailable(err))
	}

	if _, err := c.Eval(ctx, nil, nil); err == nil {
		t.Error("Eval of a nil script: no error")
	}
	if _, err := c.Eval(ctx, &Script{name: "zero"}, nil); err == nil || !strings.Contains(err.Error(), "zero") {
		t.Errorf("Eval of a zero Script: err = %v", err)
	}
}

func TestEvalUsesEvalshaAndFallsBackAfterFlush(t *testing.T) {
	addr, m := testServer(t)
	var rec recorder
	c := newTestClient(t, addr, rec.option())
	p := keyPrefix(t, c)
	ctx := testCtx(t)
	s := uniqueScript(t, "incr", `return redis.call('INCR', KEYS[1])`)

	// EVALSHA first; the script is new, so NOSCRIPT and then EVAL.
	for i, want := range []int64{1, 2} {
		v, err := c.Eval(ctx, s, []string{p + "n"})
		if err != nil || v != want {
			t.Fatalf("call %d = %#v, %v, want %d", i, v, err, want)
		}
	}
	if got := rec.count("EVALSHA"); got != 2 {
		t.Errorf("EVALSHA sent %d times, want 2", got)
	}
	// The second call used EVALSHA alone. On a shared real server another
	// test may flush scripts meanwhile, so be strict on miniredis only.
	if got := rec.count("EVAL"); got != 1 && (m != nil || got < 1) {
		t.Errorf("EVAL sent %d times, want 1", got)
	}
	exists, err := redis.Ints(c.Do(ctx, "SCRIPT", "EXISTS", s.Hash()))
	if err != nil || len(exists) != 1 || exists[0] != 1 {
		t.Fatalf("SCRIPT EXISTS = %v, %v, want [1]", exists, err)
	}

	if _, err := c.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	evals := rec.count("EVAL")
	v, err := c.Eval(ctx, s, []string{p + "n"})
	if err != nil || v != int64(3) {
		t.Fatalf("after SCRIPT FLUSH: %#v, %v, want 3", v, err)
	}
	if got := rec.count("EVALSHA"); got != 3 {
		t.Errorf("EVALSHA sent %d times, want 3", got)
	}
	if got := rec.count("EVAL"); got != evals+1 {
		t.Errorf("EVAL sent %d times after the flush, want %d", got, evals+1)
	}
}

// batchScripts returns a script setting KEYS[1] to ARGV[1] and returning
// twice ARGV[1], and a script failing with MYERR.
func batchScripts(t *testing.T) (ok, fail *Script) {
	ok = uniqueScript(t, "batch-set", `redis.call('SET', KEYS[1], ARGV[1]); return tonumber(ARGV[1]) * 2`)
	fail = uniqueScript(t, "batch-fail", `return redis.error_reply('MYERR call ' .. ARGV[1])`)
	return ok, fail
}

func batchCalls(p string, ok, fail *Script, n, failAt int) []ScriptCall {
	calls := make([]ScriptCall, n)
	for i := range calls {
		calls[i] = ScriptCall{Script: ok, Keys: []string{fmt.Sprintf("%sk%d", p, i)}, Args: []any{i}}
		if i == failAt {
			calls[i] = ScriptCall{Script: fail, Args: []any{i}}
		}
	}
	return calls
}

func checkBatch(t *testing.T, replies []Reply, n, failAt int) {
	t.Helper()
	if len(replies) != n {
		t.Fatalf("%d replies, want %d", len(replies), n)
	}
	for i, r := range replies {
		if i == failAt {
			var re redis.Error
			if r.Err == nil || !errors.As(r.Err, &re) ||
				!strings.Contains(r.Err.Error(), fmt.Sprintf("MYERR call %d", i)) ||
				!strings.Contains(r.Err.Error(), "eval batch-fail") {
				t.Errorf("reply %d: err %v, want the script's MYERR naming batch-fail", i, r.Err)
			}
			if IsUnavailable(r.Err) {
				t.Errorf("reply %d: IsUnavailable(%v) = true", i, r.Err)
			}
			continue
		}
		if r.Err != nil || r.Value != int64(2*i) {
			t.Errorf("reply %d = %#v, %v, want %d", i, r.Value, r.Err, 2*i)
		}
	}
}

func TestEvalBatchRepliesInOrder(t *testing.T) {
	addr, m := testServer(t)
	var rec recorder
	c := newTestClient(t, addr, rec.option())
	p := keyPrefix(t, c)
	ctx := testCtx(t)
	ok, fail := batchScripts(t)
	const n, failAt = 100, 37

	// Both scripts are new: all calls answer NOSCRIPT, the two scripts are
	// loaded and the calls sent again.
	replies, err := c.EvalBatch(ctx, batchCalls(p, ok, fail, n, failAt))
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, replies, n, failAt)
	if m != nil {
		if got := rec.count("EVALSHA"); got != 2*n {
			t.Errorf("EVALSHA sent %d times, want %d", got, 2*n)
		}
		if got := rec.count("SCRIPT"); got != 2 {
			t.Errorf("SCRIPT LOAD sent %d times, want 2 (one per script)", got)
		}
	}
	if got := rec.count("EVAL"); got != 0 {
		t.Errorf("EVAL sent %d times, want 0", got)
	}
	for _, i := range []int{0, 5, 99} {
		if s, err := c.GetString(ctx, fmt.Sprintf("%sk%d", p, i)); err != nil || s != fmt.Sprint(i) {
			t.Errorf("key %d = %q, %v, want %d", i, s, err, i)
		}
	}

	// Loaded now: one EVALSHA per call, one connection.
	evalsha, scripts := rec.count("EVALSHA"), rec.count("SCRIPT")
	replies, err = c.EvalBatch(ctx, batchCalls(p, ok, fail, n, failAt))
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, replies, n, failAt)
	if m != nil {
		if got := rec.count("EVALSHA") - evalsha; got != n {
			t.Errorf("EVALSHA sent %d times, want %d", got, n)
		}
		if got := rec.count("SCRIPT") - scripts; got != 0 {
			t.Errorf("SCRIPT LOAD sent %d times, want 0", got)
		}
	}
	if st := c.Stats(); st.ActiveCount != 1 {
		t.Errorf("pool has %d connections, want 1", st.ActiveCount)
	}
}

func TestEvalBatchAfterScriptFlush(t *testing.T) {
	addr, _ := testServer(t)
	var rec recorder
	c := newTestClient(t, addr, rec.option())
	p := keyPrefix(t, c)
	ctx := testCtx(t)
	ok, fail := batchScripts(t)
	const n, failAt = 20, 3

	if err := c.LoadScripts(ctx, ok, fail); err != nil {
		t.Fatal(err)
	}
	replies, err := c.EvalBatch(ctx, batchCalls(p, ok, fail, n, failAt))
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, replies, n, failAt)

	if _, err := c.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	scripts := rec.count("SCRIPT")
	replies, err = c.EvalBatch(ctx, batchCalls(p, ok, fail, n, failAt))
	if err != nil {
		t.Fatal(err)
	}
	checkBatch(t, replies, n, failAt)
	// SCRIPT FLUSH was itself a SCRIPT command; then at least one SCRIPT LOAD.
	if got := rec.count("SCRIPT") - scripts; got < 1 {
		t.Errorf("SCRIPT LOAD sent %d times after the flush, want >= 1", got)
	}
	exists, err := redis.Ints(c.Do(ctx, "SCRIPT", "EXISTS", ok.Hash(), fail.Hash()))
	if err != nil || len(exists) != 2 || exists[0] != 1 || exists[1] != 1 {
		t.Errorf("SCRIPT EXISTS = %v, %v, want [1 1]", exists, err)
	}
}

func TestEvalBatchPartialReload(t *testing.T) {
	addr, m := testServer(t)
	var rec recorder
	c := newTestClient(t, addr, rec.option())
	p := keyPrefix(t, c)
	ctx := testCtx(t)
	loaded := uniqueScript(t, "loaded", `return 'a' .. ARGV[1]`)
	fresh := uniqueScript(t, "fresh", `return 'b' .. ARGV[1]`)
	broken := uniqueScript(t, "broken", `return {{{`)
	if err := c.LoadScripts(ctx, loaded); err != nil {
		t.Fatal(err)
	}

	calls := []ScriptCall{
		{Script: loaded, Args: []any{0}},
		{Script: fresh, Args: []any{1}},
		{Script: broken, Args: []any{2}},
		{Script: nil, Args: []any{3}},
		{Script: loaded, Keys: []string{p + "x"}, Args: []any{4}},
		{Script: fresh, Args: []any{5}},
	}
	scripts := rec.count("SCRIPT")
	replies, err := c.EvalBatch(ctx, calls)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a0", "b1", "", "", "a4", "b5"}
	for i, r := range replies {
		switch i {
		case 2:
			if r.Err == nil || !strings.Contains(r.Err.Error(), "load script broken") {
				t.Errorf("reply %d: err %v, want a load error naming broken", i, r.Err)
			}
		case 3:
			if r.Err == nil || !strings.Contains(r.Err.Error(), "nil script") {
				t.Errorf("reply %d: err %v, want nil script", i, r.Err)
			}
		default:
			if r.Err != nil || cast.ToString(r.Value) != want[i] {
				t.Errorf("reply %d = %#v, %v, want %s", i, r.Value, r.Err, want[i])
			}
		}
	}
	if got := rec.count("SCRIPT") - scripts; m != nil && got != 2 {
		t.Errorf("SCRIPT LOAD sent %d times, want 2 (fresh, broken)", got)
	}

	err = c.LoadScripts(ctx, loaded, broken)
	if err == nil || !strings.Contains(err.Error(), "load script broken") || strings.Contains(err.Error(), "script loaded") {
		t.Errorf("LoadScripts = %v, want an error naming broken only", err)
	}
}

func TestEvalBatchEmpty(t *testing.T) {
	// Nothing listens: an empty batch must not touch Redis.
	c := newTestClient(t, closedPort(t))
	ctx := testCtx(t)
	for _, calls := range [][]ScriptCall{nil, {}} {
		replies, err := c.EvalBatch(ctx, calls)
		if replies != nil || err != nil {
			t.Errorf("EvalBatch(%v) = %v, %v, want nil, nil", calls, replies, err)
		}
	}
	if st := c.Stats(); st.ActiveCount != 0 {
		t.Errorf("pool has %d connections, want 0", st.ActiveCount)
	}
}

func TestDo(t *testing.T) {
	addr, _ := testServer(t)
	c := newTestClient(t, addr)
	p := keyPrefix(t, c)
	ctx := testCtx(t)

	if v, err := c.Do(ctx, "SET", p+"k", "v"); err != nil || v != "OK" {
		t.Errorf("SET = %#v, %v, want OK", v, err)
	}
	if v, err := c.Do(ctx, "GET", p+"k"); err != nil || cast.ToString(v) != "v" {
		t.Errorf("GET = %#v, %v, want v", v, err)
	} else if _, ok := v.([]byte); !ok {
		t.Errorf("GET = %T, want []byte", v)
	}
	if v, err := c.Do(ctx, "GET", p+"missing"); err != nil || v != nil {
		t.Errorf("GET missing = %#v, %v, want nil, nil", v, err)
	}
	if _, err := NonNil(c.Do(ctx, "GET", p+"missing")); !errors.Is(err, ErrNil) {
		t.Errorf("NonNil(GET missing) err = %v, want ErrNil", err)
	}
	if s, err := c.GetString(ctx, p+"k"); err != nil || s != "v" {
		t.Errorf("GetString = %q, %v, want v", s, err)
	}
	if _, err := c.GetString(ctx, p+"missing"); !errors.Is(err, ErrNil) {
		t.Errorf("GetString missing err = %v, want ErrNil", err)
	}
	if v, err := c.Do(ctx, "INCR", p+"n"); err != nil || v != int64(1) {
		t.Errorf("INCR = %#v, %v, want int64 1", v, err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}

	for _, cmd := range []string{"", "select", "MULTI", "subscribe", "HELLO"} {
		if _, err := c.Do(ctx, cmd, 1); err == nil {
			t.Errorf("Do(%q): no error", cmd)
		}
	}
	var nilCtx context.Context
	if _, err := c.Do(nilCtx, "PING"); err == nil {
		t.Error("Do with a nil context: no error")
	}
}

func TestWrongTypeNotUnavailable(t *testing.T) {
	addr, _ := testServer(t)
	c := newTestClient(t, addr)
	p := keyPrefix(t, c)
	ctx := testCtx(t)

	if _, err := c.Do(ctx, "SET", p+"str", "x"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Do(ctx, "HGET", p+"str", "f")
	var re redis.Error
	if !errors.As(err, &re) || !strings.HasPrefix(string(re), "WRONGTYPE") {
		t.Fatalf("err = %v, want WRONGTYPE", err)
	}
	if IsUnavailable(err) {
		t.Errorf("IsUnavailable(%v) = true", err)
	}
	if _, err := c.GetString(ctx, p+"missing"); IsUnavailable(err) {
		t.Errorf("IsUnavailable(%v) = true", err)
	}
	// The connection is still good.
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestWithDB(t *testing.T) {
	addr, m := testServer(t)
	c0 := newTestClient(t, addr)
	c2 := newTestClient(t, addr, WithDB(2))
	p := keyPrefix(t, c2)
	ctx := testCtx(t)

	if _, err := c2.Do(ctx, "SET", p+"k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := c0.Do(ctx, "GET", p+"k"); err != nil || v != nil {
		t.Errorf("db 0 GET = %#v, %v, want nil", v, err)
	}
	if s, err := c2.GetString(ctx, p+"k"); err != nil || s != "v" {
		t.Errorf("db 2 GET = %q, %v, want v", s, err)
	}
	if m != nil {
		if s, err := m.DB(2).Get(p + "k"); err != nil || s != "v" {
			t.Errorf("miniredis db 2 = %q, %v", s, err)
		}
	}
}

func TestContextCanceledBeforeCall(t *testing.T) {
	addr, _ := testServer(t)
	c := newTestClient(t, addr)
	s := uniqueScript(t, "one", `return 1`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", what, err)
		}
		if IsUnavailable(err) {
			t.Errorf("%s: IsUnavailable(%v) = true", what, err)
		}
	}
	_, err := c.Do(ctx, "PING")
	check("Do", err)
	_, err = c.Eval(ctx, s, nil)
	check("Eval", err)
	_, err = c.EvalBatch(ctx, []ScriptCall{{Script: s}})
	check("EvalBatch", err)
	check("Ping", c.Ping(ctx))
	check("LoadScripts", c.LoadScripts(ctx, s))
}

// TestContextHungServer checks that ctx bounds the wait for a reply, far
// below the read timeout.
func TestContextHungServer(t *testing.T) {
	const readTimeout = time.Minute
	c := newTestClient(t, hungServer(t), WithReadTimeout(readTimeout))
	s := uniqueScript(t, "one", `return 1`)

	calls := map[string]func(ctx context.Context) error{
		"Do": func(ctx context.Context) error {
			_, err := c.Do(ctx, "GET", "k")
			return err
		},
		"Eval": func(ctx context.Context) error {
			_, err := c.Eval(ctx, s, []string{"k"}, 1)
			return err
		},
		"EvalBatch": func(ctx context.Context) error {
			replies, err := c.EvalBatch(ctx, []ScriptCall{{Script: s}, {Script: s}})
			if replies != nil {
				t.Errorf("EvalBatch replies = %v, want nil with the error", replies)
			}
			return err
		},
	}
	for name, call := range calls {
		t.Run(name+"/deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := call(ctx)
			if elapsed := time.Since(start); elapsed > readTimeout/2 {
				t.Errorf("returned after %v", elapsed)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want context.DeadlineExceeded", err)
			}
			if !IsUnavailable(err) {
				t.Errorf("IsUnavailable(%v) = false", err)
			}
		})
		t.Run(name+"/cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Cancel whether or not the call is already waiting: the
			// outcome is context.Canceled either way.
			timer := time.AfterFunc(50*time.Millisecond, cancel)
			defer timer.Stop()
			start := time.Now()
			err := call(ctx)
			if elapsed := time.Since(start); elapsed > readTimeout/2 {
				t.Errorf("returned after %v", elapsed)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if IsUnavailable(err) {
				t.Errorf("IsUnavailable(%v) = true", err)
			}
		})
	}
	// Connections broken by the context are not reused.
	if st := c.Stats(); st.IdleCount != 0 {
		t.Errorf("%d idle connections, want 0", st.IdleCount)
	}
}

func TestPoolWaitHonoursContext(t *testing.T) {
	addr, _ := testServer(t)
	c := newTestClient(t, addr, WithMaxActive(1))
	ctx := testCtx(t)

	held, err := c.pool.GetContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = c.Ping(waitCtx)
	if !errors.Is(err, context.DeadlineExceeded) || !IsUnavailable(err) {
		t.Errorf("Ping with the pool exhausted: err = %v (unavailable %v), want deadline exceeded, unavailable", err, IsUnavailable(err))
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping after release: %v", err)
	}
}

func TestServerDownAndRestart(t *testing.T) {
	m := miniredis.RunT(t)
	c := newTestClient(t, m.Addr())
	ctx := testCtx(t)
	s := uniqueScript(t, "incr", `return redis.call('INCR', KEYS[1])`)

	if v, err := c.Eval(ctx, s, []string{"n"}); err != nil || v != int64(1) {
		t.Fatalf("Eval = %#v, %v", v, err)
	}
	if st := c.Stats(); st.IdleCount != 1 {
		t.Fatalf("%d idle connections, want 1", st.IdleCount)
	}

	m.Close()
	// The first call gets the idle connection the server closed, the next
	// ones find nothing listening.
	for i := range 3 {
		err := c.Ping(ctx)
		if err == nil || !IsUnavailable(err) {
			t.Errorf("Ping %d with the server down: err = %v, want unavailable", i, err)
		}
	}
	_, err := c.Eval(ctx, s, []string{"n"})
	if !errors.Is(err, syscall.ECONNREFUSED) || !IsUnavailable(err) {
		t.Errorf("Eval with the server down: err = %v, want connection refused, unavailable", err)
	}
	replies, err := c.EvalBatch(ctx, []ScriptCall{{Script: s, Keys: []string{"n"}}})
	if err == nil || replies != nil || !IsUnavailable(err) {
		t.Errorf("EvalBatch with the server down = %v, %v, want nil, unavailable error", replies, err)
	}

	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping after restart: %v", err)
	}
	if v, err := c.Eval(ctx, s, []string{"n"}); err != nil || v != int64(2) {
		t.Errorf("Eval after restart = %#v, %v, want 2", v, err)
	}
	replies, err = c.EvalBatch(ctx, []ScriptCall{{Script: s, Keys: []string{"n"}}})
	if err != nil || len(replies) != 1 || replies[0].Value != int64(3) {
		t.Errorf("EvalBatch after restart = %v, %v, want 3", replies, err)
	}
}

func TestClosedPort(t *testing.T) {
	c := newTestClient(t, closedPort(t))
	ctx := testCtx(t)
	s := uniqueScript(t, "one", `return 1`)

	err := c.Ping(ctx)
	if !errors.Is(err, syscall.ECONNREFUSED) || !IsUnavailable(err) {
		t.Errorf("Ping: err = %v, want connection refused, unavailable", err)
	}
	if _, err := c.Eval(ctx, s, nil); !strings.Contains(fmt.Sprint(err), "eval one") || !IsUnavailable(err) {
		t.Errorf("Eval: err = %v, want unavailable naming the script", err)
	}
	if replies, err := c.EvalBatch(ctx, []ScriptCall{{Script: s}}); err == nil || replies != nil || !IsUnavailable(err) {
		t.Errorf("EvalBatch = %v, %v, want nil, unavailable error", replies, err)
	}
}

func TestServerCannotServe(t *testing.T) {
	m := miniredis.RunT(t)
	c := newTestClient(t, m.Addr())
	ctx := testCtx(t)
	s := uniqueScript(t, "one", `return 1`)

	for _, msg := range []string{
		"LOADING Redis is loading the dataset in memory",
		"BUSY Redis is busy running a script",
		"MASTERDOWN Link with MASTER is down",
		"READONLY You can't write against a read only replica.",
	} {
		m.SetError(msg)
		if err := c.Ping(ctx); err == nil || !IsUnavailable(err) {
			t.Errorf("%s: Ping err = %v, want unavailable", msg, err)
		}
		if _, err := c.Eval(ctx, s, nil); err == nil || !IsUnavailable(err) {
			t.Errorf("%s: Eval err = %v, want unavailable", msg, err)
		}
		replies, err := c.EvalBatch(ctx, []ScriptCall{{Script: s}, {Script: s}})
		if err != nil || len(replies) != 2 {
			t.Fatalf("%s: EvalBatch = %v, %v, want 2 replies", msg, replies, err)
		}
		for i, r := range replies {
			if !IsUnavailable(r.Err) {
				t.Errorf("%s: reply %d err = %v, want unavailable", msg, i, r.Err)
			}
		}
	}
	m.SetError("")
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping after clearing the error: %v", err)
	}
}

func TestIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{context.Canceled, false},
		{fmt.Errorf("redisclient: do GET: %w", context.Canceled), false},
		{redis.Error("ERR wrong number of arguments for 'get' command"), false},
		{redis.Error("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{redis.Error("NOSCRIPT No matching script"), false},
		{redis.Error("BUSYKEY Target key name already exists."), false},
		{redis.Error("WRONGPASS invalid username-password pair"), false},
		{redis.Error("NOAUTH Authentication required."), false},
		{ErrNil, false},
		{io.EOF, true},
		{fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{fmt.Errorf("x: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("x: %w", os.ErrDeadlineExceeded), true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("redisclient: do GET: connect: %w", redis.ErrPoolExhausted), true},
		{errors.New("redigo: get on closed pool"), true},
		{fmt.Errorf("redisclient: eval x: %w", ErrClosed), true},
		{redis.Error("LOADING Redis is loading the dataset in memory"), true},
		{fmt.Errorf("redisclient: eval x: %w", redis.Error("BUSY Redis is busy running a script.")), true},
		{redis.Error("MASTERDOWN Link with MASTER is down"), true},
		{redis.Error("CLUSTERDOWN The cluster is down"), true},
		{redis.Error("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{redis.Error("READONLY You can't write against a read only replica."), true},
		{redis.Error("OOM command not allowed when used memory > 'maxmemory'."), true},
		{redis.Error("ERR max number of clients reached"), true},
	} {
		if got := IsUnavailable(tc.err); got != tc.want {
			t.Errorf("IsUnavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestClose(t *testing.T) {
	addr, _ := testServer(t)
	c := NewClient("tcp", addr, "")
	ctx := testCtx(t)
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	err := c.Ping(ctx)
	if !errors.Is(err, ErrClosed) || !IsUnavailable(err) {
		t.Errorf("Ping after Close: err = %v, want ErrClosed", err)
	}
	if _, err := c.EvalBatch(ctx, []ScriptCall{{Script: NewScript("one", "return 1")}}); !errors.Is(err, ErrClosed) {
		t.Errorf("EvalBatch after Close: err = %v, want ErrClosed", err)
	}
	if st := c.Stats(); st.ActiveCount != 0 {
		t.Errorf("%d connections after Close, want 0", st.ActiveCount)
	}
}

func TestAuth(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireAuth("s3cret")
	ctx := testCtx(t)

	if err := newTestClient(t, m.Addr()).Ping(ctx); err == nil || IsUnavailable(err) {
		t.Errorf("no password: err = %v, want an auth error, not unavailable", err)
	}
	bad := NewClient("tcp", m.Addr(), "wrong")
	defer bad.Close()
	if err := bad.Ping(ctx); err == nil || IsUnavailable(err) || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: err = %v, want an auth error without the password", err)
	}
	good := NewClient("tcp", m.Addr(), "s3cret")
	defer good.Close()
	if err := good.Ping(ctx); err != nil {
		t.Errorf("right password: %v", err)
	}
	if strings.Contains(good.String(), "s3cret") || strings.Contains(fmt.Sprintf("%v %+v", good, good), "s3cret") {
		t.Errorf("String() shows the password: %s", good)
	}

	m.RequireUserAuth("alice", "pw-alice")
	acl := NewClient("tcp", m.Addr(), "pw-alice", WithUsername("alice"))
	defer acl.Close()
	if err := acl.Ping(ctx); err != nil {
		t.Errorf("ACL user: %v", err)
	}
	if s := acl.String(); !strings.Contains(s, "alice@") || strings.Contains(s, "pw-alice") {
		t.Errorf("String() = %q", s)
	}
}

func TestNewClientFromURLConnects(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireAuth("s3cret")
	ctx := testCtx(t)

	c, err := NewClientFromURL("redis://:s3cret@" + m.Addr() + "/3")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if s, err := m.DB(3).Get("k"); err != nil || s != "v" {
		t.Errorf("db 3 k = %q, %v, want v", s, err)
	}
	if strings.Contains(c.String(), "s3cret") || !strings.Contains(c.String(), "db=3") {
		t.Errorf("String() = %q", c)
	}

	m.RequireUserAuth("alice", "pw-alice")
	acl, err := NewClientFromURL("redis://alice:pw-alice@"+m.Addr(), WithMaxActive(4))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	if err := acl.Ping(ctx); err != nil {
		t.Errorf("ACL URL: %v", err)
	}
}

func TestNewClientFromURLTLS(t *testing.T) {
	serverCfg, roots := selfSignedTLS(t)
	m, err := miniredis.RunTLS(serverCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ctx := testCtx(t)

	c, err := NewClientFromURL("rediss://"+m.Addr(), WithTLSConfig(&tls.Config{RootCAs: roots}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping over TLS: %v", err)
	}
	if !strings.Contains(c.String(), "tls") {
		t.Errorf("String() = %q, want tls", c)
	}

	// The default configuration does not trust the self-signed certificate.
	untrusted, err := NewClientFromURL("rediss://" + m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	if err := untrusted.Ping(ctx); err == nil {
		t.Error("Ping with an untrusted certificate: no error")
	}
}

func TestParseEndpoint(t *testing.T) {
	good := []struct {
		raw  string
		want endpoint
	}{
		{"localhost:6379", endpoint{address: "localhost:6379"}},
		{"10.0.0.1:6390", endpoint{address: "10.0.0.1:6390"}},
		{"[::1]:6379", endpoint{address: "[::1]:6379"}},
		{"redis://localhost", endpoint{address: "localhost:6379"}},
		{"redis://localhost:6390/", endpoint{address: "localhost:6390"}},
		{"redis://localhost:6390/5", endpoint{address: "localhost:6390", db: 5}},
		{"REDIS://h:1/0", endpoint{address: "h:1"}},
		{"redis://:s3cret@h:6379/2", endpoint{address: "h:6379", password: "s3cret", db: 2}},
		{"redis://bob:s3cret@h:6379", endpoint{address: "h:6379", username: "bob", password: "s3cret"}},
		{"redis://s3cret@h:6379", endpoint{address: "h:6379", password: "s3cret"}},
		{"redis://:p%40ss%2Fw@h:6379", endpoint{address: "h:6379", password: "p@ss/w"}},
		{"rediss://bob:s3cret@[::1]:6380/1", endpoint{address: "[::1]:6380", username: "bob", password: "s3cret", db: 1, tls: true}},
	}
	for _, tc := range good {
		got, err := parseEndpoint(tc.raw)
		if err != nil || got != tc.want {
			t.Errorf("parseEndpoint(%q) = %+v, %v, want %+v", tc.raw, got, err, tc.want)
		}
	}

	bad := []struct {
		raw  string
		want string // in the error
	}{
		{"", "empty"},
		{"localhost", "not host:port"},
		{"localhost:abc", "port"},
		{"localhost:0", "port"},
		{":6379", "missing host"},
		{"s3cret@localhost:6379", "redis://"},
		{"http://localhost:6379", `scheme "http"`},
		{"http://:s3cret@localhost:6379", `scheme "http"`},
		{"redis://", "missing host"},
		{"redis:///1", "missing host"},
		{"redis://localhost:abc", "malformed URL"},
		{"redis://localhost:70000", "port"},
		{"redis://:s3cret@localhost:0", "port"},
		{"redis://:s3cret@localhost:99999", "port"},
		{"redis://localhost:6379/abc", `database "/abc"`},
		{"redis://localhost:6379/-1", "database"},
		{"redis://localhost:6379/1/2", "database"},
		{"redis://:s3cret@localhost:6379/abc", "database"},
		{"redis://localhost:6379?db=1", "query"},
		{"redis://:s3cret@localhost:6379/0?password=s3cret", "query"},
		{"redis://:s3cret@localhost:bad", "malformed URL"},
		{"redis://:s3%zzcret@localhost:6379", "percent-encoded"},
		{"redis://user:s3/cret@localhost:6379", "malformed URL"}, // unencoded '/' in the password
		{"redis://user:12/s3cret@localhost:6379", "database"},    // parses as host "user:12"
		{"s3cret:x@h://y", "malformed URL"},
	}
	for _, tc := range bad {
		_, err := parseEndpoint(tc.raw)
		if err == nil {
			t.Errorf("parseEndpoint(%q): no error", tc.raw)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("parseEndpoint(%q) = %q, want it to mention %q", tc.raw, msg, tc.want)
		}
		for _, secret := range []string{"s3cret", "s3", "cret"} {
			if strings.Contains(msg, secret) {
				t.Errorf("parseEndpoint(%q) = %q shows the password", tc.raw, msg)
			}
		}
		if _, err := NewClientFromURL(tc.raw); err == nil {
			t.Errorf("NewClientFromURL(%q): no error", tc.raw)
		}
	}
}
