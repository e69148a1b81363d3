// Package redisclient is the Redis access layer of rtimewheel: a redigo
// connection pool with production defaults, Lua scripts run by EVALSHA with a
// NOSCRIPT fallback, and pipelined batches of script calls.
package redisclient

import (
	"context"
	"errors"
	"time"
)

// ErrNil is returned by Do when Redis answers a nil reply.
var ErrNil = errors.New("redisclient: nil reply")

// Script is a Lua script known by name, run by EVALSHA with a fallback to
// EVAL (or SCRIPT LOAD) when the server answers NOSCRIPT.
type Script struct {
	// STUB: implemented by the redisclient work.
	name string
	src  string
}

// NewScript returns a script with a name used in errors and logs. The number
// of keys is given per call.
func NewScript(name, src string) *Script { return &Script{name: name, src: src} }

// Name returns the name the script was created with.
func (s *Script) Name() string { return s.name }

// ScriptCall is one call of a script in a batch.
type ScriptCall struct {
	Script *Script
	Keys   []string
	Args   []any
}

// Reply is the outcome of one call of a batch.
type Reply struct {
	Value any
	Err   error
}

// Client is a pooled connection to one standalone Redis server.
type Client struct{}

// ClientOption configures a Client.
type ClientOption func(*Client)

// NewClient returns a client of the Redis server at address.
func NewClient(network, address, password string, opts ...ClientOption) *Client { return &Client{} }

// Eval runs script on keys with args.
func (c *Client) Eval(ctx context.Context, script *Script, keys []string, args ...any) (any, error) {
	return nil, errors.New("stub")
}

// EvalBatch runs calls pipelined; Replies are in call order.
func (c *Client) EvalBatch(ctx context.Context, calls []ScriptCall) ([]Reply, error) {
	return nil, errors.New("stub")
}

// Do runs one command.
func (c *Client) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	return nil, errors.New("stub")
}

// Close closes the pool.
func (c *Client) Close() error { return nil }

// IsUnavailable reports whether err means Redis could not be reached or
// cannot serve now.
func IsUnavailable(err error) bool { return false }

var _ = time.Second
