package redisclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Script is a Lua script known by name. It is run by EVALSHA (its SHA1) and,
// when the server answers NOSCRIPT, loaded again: Eval falls back to EVAL,
// EvalBatch to SCRIPT LOAD then EVALSHA. A Script is immutable and safe for
// concurrent use; create it with NewScript.
type Script struct {
	name string
	src  string
	rs   *redis.Script
}

// NewScript returns a script with a name used in errors and logs. The number
// of keys is given per call (ScriptCall.Keys, Eval's keys).
func NewScript(name, src string) *Script {
	return &Script{name: name, src: src, rs: redis.NewScript(-1, src)}
}

// Name returns the name the script was created with.
func (s *Script) Name() string { return s.name }

// Hash returns the hex SHA1 of the source, the name EVALSHA knows it by.
func (s *Script) Hash() string {
	if s.rs == nil {
		return ""
	}
	return s.rs.Hash()
}

// check reports a nil script or one not made by NewScript.
func (s *Script) check() error {
	if s == nil {
		return errors.New("nil script")
	}
	if s.rs == nil {
		return errors.New("script not created by NewScript")
	}
	return nil
}

// label names s in errors, also when s is nil.
func (s *Script) label() string {
	if s == nil {
		return "<nil>"
	}
	return s.name
}

// ScriptCall is one call of a script in a batch (see Client.EvalBatch).
type ScriptCall struct {
	// Script to run; a nil Script fails this call only.
	Script *Script
	// Keys are passed as KEYS; their number is sent as numkeys.
	Keys []string
	// Args are passed as ARGV, encoded by redigo (string, []byte, integers,
	// floats, bool, nil; other values via fmt.Sprint).
	Args []any
}

// Reply is the outcome of one call of a batch: its raw reply (see the
// package documentation), or the error the call alone failed with.
type Reply struct {
	Value any
	Err   error
}

// keysAndArgs is the argument list after the script (SHA1 or source):
// numkeys, keys, args.
func keysAndArgs(keys []string, args []any) []any {
	out := make([]any, 0, 1+len(keys)+len(args))
	out = append(out, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}

func isNoScript(e redis.Error) bool {
	return strings.HasPrefix(string(e), "NOSCRIPT")
}

// Eval runs script with keys and args and returns its raw reply (see the
// package documentation). It sends EVALSHA and, if the server does not know
// the script (NOSCRIPT), EVAL with the source, which also caches it. It
// blocks until the reply arrives, ctx ends or a timeout expires. Errors are
// wrapped as "redisclient: eval <name>: ..."; an error raised by the script
// or by a command it calls is a wrapped redis.Error.
func (c *Client) Eval(ctx context.Context, script *Script, keys []string, args ...any) (any, error) {
	if err := script.check(); err != nil {
		return nil, fmt.Errorf("redisclient: eval %s: %w", script.label(), err)
	}
	conn, err := c.conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisclient: eval %s: %w", script.name, err)
	}
	defer conn.Close()
	v, err := script.rs.DoContext(ctx, conn, keysAndArgs(keys, args)...)
	if err != nil {
		return nil, fmt.Errorf("redisclient: eval %s: %w", script.name, withContext(ctx, err))
	}
	return v, nil
}

// EvalBatch runs calls pipelined on one connection and returns one Reply per
// call, in call order. An empty batch returns (nil, nil) without touching
// Redis.
//
// All calls are sent as EVALSHA in one write and their replies read back. A
// call's own failure (an error raised by its script, a nil or invalid
// Script) goes into its Reply.Err, wrapped as "redisclient: eval <name>:
// ..." around the redis.Error, and the other calls are unaffected. Calls
// answered NOSCRIPT are retried once, pipelined again after a SCRIPT LOAD of
// each script concerned; they therefore run after the rest of the batch. A
// script that fails to load gives its calls a "redisclient: load script
// <name>: ..." error.
//
// A non-nil error means the batch as a whole failed: no connection, a
// read/write failure or timeout, or ctx ended. The replies are then lost and
// any of the calls may or may not have run on the server.
//
// The wait for replies honours ctx; writes are bounded by the write timeout.
func (c *Client) EvalBatch(ctx context.Context, calls []ScriptCall) ([]Reply, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	replies := make([]Reply, len(calls))
	send := make([]int, 0, len(calls)) // indexes of the calls to send
	for i, call := range calls {
		if err := call.Script.check(); err != nil {
			replies[i].Err = fmt.Errorf("redisclient: eval %s: %w", call.Script.label(), err)
			continue
		}
		send = append(send, i)
	}
	if len(send) == 0 {
		return replies, nil
	}

	conn, err := c.conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisclient: eval batch of %d calls: %w", len(calls), err)
	}
	defer conn.Close()

	// Round 1: EVALSHA for every call.
	for _, i := range send {
		call := calls[i]
		if err := call.Script.rs.SendHash(conn, keysAndArgs(call.Keys, call.Args)...); err != nil {
			return nil, fmt.Errorf("redisclient: eval batch of %d calls: send: %w", len(calls), err)
		}
	}
	vals, err := roundTrip(ctx, conn, len(send))
	if err != nil {
		return nil, fmt.Errorf("redisclient: eval batch of %d calls: %w", len(calls), err)
	}
	var retry []int
	for j, i := range send {
		if e, ok := vals[j].(redis.Error); ok && isNoScript(e) {
			retry = append(retry, i)
			continue
		}
		replies[i] = reply(calls[i].Script, vals[j])
	}
	if len(retry) == 0 {
		return replies, nil
	}

	// Round 2: SCRIPT LOAD each script concerned, then EVALSHA again for the
	// calls answered NOSCRIPT; Redis runs them in this order.
	var load []*Script
	seen := make(map[string]bool)
	for _, i := range retry {
		s := calls[i].Script
		if !seen[s.Hash()] {
			seen[s.Hash()] = true
			load = append(load, s)
		}
	}
	for _, s := range load {
		if err := conn.Send("SCRIPT", "LOAD", s.src); err != nil {
			return nil, fmt.Errorf("redisclient: eval batch of %d calls: send: %w", len(calls), err)
		}
	}
	for _, i := range retry {
		call := calls[i]
		if err := call.Script.rs.SendHash(conn, keysAndArgs(call.Keys, call.Args)...); err != nil {
			return nil, fmt.Errorf("redisclient: eval batch of %d calls: send: %w", len(calls), err)
		}
	}
	vals, err = roundTrip(ctx, conn, len(load)+len(retry))
	if err != nil {
		return nil, fmt.Errorf("redisclient: eval batch of %d calls: reload scripts: %w", len(calls), err)
	}
	loadErr := make(map[string]error)
	for k, s := range load {
		if err := loaded(s, vals[k]); err != nil {
			loadErr[s.Hash()] = err
		}
	}
	for j, i := range retry {
		s := calls[i].Script
		if err := loadErr[s.Hash()]; err != nil {
			replies[i].Err = err
			continue
		}
		replies[i] = reply(s, vals[len(load)+j])
	}
	return replies, nil
}

// reply turns one pipelined reply into a Reply.
func reply(s *Script, v any) Reply {
	if e, ok := v.(redis.Error); ok {
		return Reply{Err: fmt.Errorf("redisclient: eval %s: %w", s.name, e)}
	}
	return Reply{Value: v}
}

// loaded checks the reply v to SCRIPT LOAD of s.
func loaded(s *Script, v any) error {
	if e, ok := v.(redis.Error); ok {
		return fmt.Errorf("redisclient: load script %s: %w", s.name, e)
	}
	sha, err := redis.String(v, nil)
	if err != nil {
		return fmt.Errorf("redisclient: load script %s: %w", s.name, err)
	}
	if !strings.EqualFold(sha, s.Hash()) {
		return fmt.Errorf("redisclient: load script %s: server returned SHA1 %s, want %s", s.name, sha, s.Hash())
	}
	return nil
}

// roundTrip flushes the commands queued on conn with Send and reads their
// n replies, waiting at most until ctx ends or the read timeout expires.
// Error replies of the server are redis.Error values in the result.
func roundTrip(ctx context.Context, conn redis.Conn, n int) ([]any, error) {
	// Do with an empty command name flushes the pending commands and reads
	// all their replies, keeping error replies as values.
	v, err := redis.DoContext(conn, ctx, "")
	if err != nil {
		return nil, withContext(ctx, err)
	}
	vals, ok := v.([]any)
	if !ok || len(vals) != n {
		return nil, fmt.Errorf("pipeline: got %d replies, want %d", len(vals), n)
	}
	return vals, nil
}

// LoadScripts loads scripts into the server's script cache with one
// pipelined SCRIPT LOAD each, for example at start-up to catch compile
// errors early. It blocks like Do. Load failures of several scripts are
// joined, each naming its script.
func (c *Client) LoadScripts(ctx context.Context, scripts ...*Script) error {
	var errs []error
	var load []*Script
	for _, s := range scripts {
		if err := s.check(); err != nil {
			errs = append(errs, fmt.Errorf("redisclient: load script %s: %w", s.label(), err))
			continue
		}
		load = append(load, s)
	}
	if len(load) == 0 {
		return errors.Join(errs...)
	}
	conn, err := c.conn(ctx)
	if err != nil {
		return fmt.Errorf("redisclient: load scripts: %w", err)
	}
	defer conn.Close()
	for _, s := range load {
		if err := conn.Send("SCRIPT", "LOAD", s.src); err != nil {
			return fmt.Errorf("redisclient: load scripts: send: %w", err)
		}
	}
	vals, err := roundTrip(ctx, conn, len(load))
	if err != nil {
		return fmt.Errorf("redisclient: load scripts: %w", err)
	}
	for k, s := range load {
		if err := loaded(s, vals[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
