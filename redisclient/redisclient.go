// Package redisclient is the Redis access layer of rtimewheel: a pooled
// client of one standalone Redis server built on github.com/gomodule/redigo,
// Lua scripts run by EVALSHA with a NOSCRIPT fallback, and pipelined batches
// of script calls.
//
// # Connections
//
// A Client owns a redigo pool (see NewClient for the defaults). Every method
// takes a context that bounds the whole call: waiting for a free connection
// when the pool is at its MaxActive limit, dialing (connect, TLS handshake,
// AUTH, SELECT) and waiting for replies. The per-connection read and write
// timeouts still apply, so the effective read deadline is the earlier of the
// context's deadline and now plus the read timeout. When the context ends
// while a command is in flight the connection is closed and discarded; the
// command may or may not have run on the server. An error caused by the
// context ending matches ctx.Err() with errors.Is (context.Canceled or
// context.DeadlineExceeded).
//
// # Replies
//
// Replies are redigo's raw values, to be converted by the caller (for
// example with github.com/spf13/cast or redigo's redis.Int64 and friends):
//
//   - integer reply: int64
//   - bulk string reply: []byte
//   - status reply: string ("OK", "PONG", ...)
//   - array reply: []any of the above
//   - nil bulk or nil array reply: nil
//
// A nil reply is not an error: Do, Eval and EvalBatch return a nil value with
// a nil error. ErrNil and NonNil exist for callers (and helpers such as
// GetString) that prefer to treat a nil reply as an error.
//
// # Errors
//
// Every error is wrapped with the operation that failed ("redisclient: eval
// <script name>: ..."), so use errors.Is and errors.As. Error replies of the
// server are redigo's redis.Error. IsUnavailable tells errors meaning "Redis
// cannot be reached or cannot serve now" (worth retrying later) from errors
// of the call itself. Passwords never appear in errors or in Client.String.
package redisclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Defaults of the connection pool, see NewClient.
const (
	DefaultMaxIdle      = 64
	DefaultMaxActive    = 256
	DefaultIdleTimeout  = 4 * time.Minute
	DefaultDialTimeout  = 2 * time.Second
	DefaultReadTimeout  = 5 * time.Second
	DefaultWriteTimeout = 5 * time.Second

	// pingAfterIdle is how long a connection may sit idle in the pool before
	// it is checked with PING when borrowed.
	pingAfterIdle = time.Minute
)

// ErrNil means a nil reply where a value was required. Do, Eval and EvalBatch
// never return it: they return a nil value with a nil error for a nil reply.
// It is returned by NonNil and by helpers built on it, such as GetString.
var ErrNil = errors.New("redisclient: nil reply")

// ErrClosed is returned by every method of a Client after Close.
// IsUnavailable reports true for it.
var ErrClosed = errors.New("redisclient: client closed")

var errNilContext = errors.New("nil context")

// options is what ClientOption values set.
type options struct {
	maxIdle      int
	maxActive    int
	idleTimeout  time.Duration
	dialTimeout  time.Duration
	readTimeout  time.Duration
	writeTimeout time.Duration
	db           int
	username     string
	useTLS       bool
	tlsConfig    *tls.Config

	// dialContext replaces the net dialer (tests record the traffic).
	dialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

func defaultOptions() options {
	return options{
		maxIdle:      DefaultMaxIdle,
		maxActive:    DefaultMaxActive,
		idleTimeout:  DefaultIdleTimeout,
		dialTimeout:  DefaultDialTimeout,
		readTimeout:  DefaultReadTimeout,
		writeTimeout: DefaultWriteTimeout,
	}
}

// newOptions applies opts to the defaults.
func newOptions(opts []ClientOption) options {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// ClientOption configures a Client or a ClusterClient; see the With
// functions.
type ClientOption func(*options)

// WithMaxIdle sets the maximum number of idle connections kept in the pool
// (default 64). Negative values are ignored.
func WithMaxIdle(n int) ClientOption {
	return func(o *options) {
		if n >= 0 {
			o.maxIdle = n
		}
	}
}

// WithMaxActive sets the maximum number of connections open at once (default
// 256). When all are in use, calls block until one is returned or their
// context ends. Values below 1 are ignored.
func WithMaxActive(n int) ClientOption {
	return func(o *options) {
		if n >= 1 {
			o.maxActive = n
		}
	}
}

// WithIdleTimeout sets how long an idle connection is kept before it is
// closed (default 4m; keep it below the server's timeout setting).
// Non-positive values are ignored.
func WithIdleTimeout(d time.Duration) ClientOption {
	return func(o *options) {
		if d > 0 {
			o.idleTimeout = d
		}
	}
}

// WithDialTimeout bounds establishing a connection: connect, TLS handshake,
// AUTH and SELECT (default 2s). Non-positive values are ignored.
func WithDialTimeout(d time.Duration) ClientOption {
	return func(o *options) {
		if d > 0 {
			o.dialTimeout = d
		}
	}
}

// WithReadTimeout bounds waiting for each reply (default 5s). Blocking
// commands (BLPOP, ...) need a server-side timeout below it. Non-positive
// values are ignored.
func WithReadTimeout(d time.Duration) ClientOption {
	return func(o *options) {
		if d > 0 {
			o.readTimeout = d
		}
	}
}

// WithWriteTimeout bounds each write to the server (default 5s).
// Non-positive values are ignored.
func WithWriteTimeout(d time.Duration) ClientOption {
	return func(o *options) {
		if d > 0 {
			o.writeTimeout = d
		}
	}
}

// WithDB selects database n on every new connection (default 0). An index
// the server rejects makes every call fail with the server's error.
func WithDB(n int) ClientOption {
	return func(o *options) { o.db = n }
}

// WithUsername sets the ACL user authenticated as (AUTH username password).
// It has no effect when the password is empty.
func WithUsername(u string) ClientOption {
	return func(o *options) { o.username = u }
}

// WithTLSConfig makes connections use TLS with cfg. A nil cfg means the
// default configuration: system roots, server name taken from the address.
func WithTLSConfig(cfg *tls.Config) ClientOption {
	return func(o *options) {
		o.useTLS = true
		o.tlsConfig = cfg
	}
}

// Client is a pooled client of one standalone Redis server. It is safe for
// concurrent use. Create it with NewClient or NewClientFromURL and Close it
// when done.
type Client struct {
	pool     *redis.Pool
	network  string
	address  string
	db       int
	username string
	tls      bool
	closed   atomic.Bool
}

// NewClient returns a client of the Redis server at address on network
// ("tcp" when empty, or "unix"). An empty password means no AUTH. NewClient
// does not connect: connections are dialed on demand, so an unreachable
// server shows up as errors of the calls (see Ping).
//
// The pool defaults are MaxIdle 64, MaxActive 256 with callers waiting for a
// free connection (bounded by their context), idle connections closed after
// 4m and checked with PING when borrowed after more than 1m idle, dial
// timeout 2s, read and write timeouts 5s. Options override them.
func NewClient(network, address, password string, opts ...ClientOption) *Client {
	o := newOptions(opts)
	if network == "" {
		network = "tcp"
	}

	dialOpts := o.dialOptions(password)
	dialTimeout := o.dialTimeout

	c := &Client{
		network:  network,
		address:  address,
		db:       o.db,
		username: o.username,
		tls:      o.useTLS,
	}
	c.pool = o.newPool(func(ctx context.Context) (redis.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		return redis.DialContext(ctx, network, address, dialOpts...)
	})
	return c
}

// dialOptions are the redigo options of every new connection.
func (o options) dialOptions(password string) []redis.DialOption {
	dialOpts := []redis.DialOption{
		redis.DialConnectTimeout(o.dialTimeout),
		redis.DialTLSHandshakeTimeout(o.dialTimeout),
		redis.DialReadTimeout(o.readTimeout),
		redis.DialWriteTimeout(o.writeTimeout),
	}
	if password != "" {
		if o.username != "" {
			dialOpts = append(dialOpts, redis.DialUsername(o.username))
		}
		dialOpts = append(dialOpts, redis.DialPassword(password))
	}
	if o.db != 0 {
		dialOpts = append(dialOpts, redis.DialDatabase(o.db))
	}
	if o.useTLS {
		dialOpts = append(dialOpts, redis.DialUseTLS(true))
		if o.tlsConfig != nil {
			dialOpts = append(dialOpts, redis.DialTLSConfig(o.tlsConfig))
		}
	}
	if o.dialContext != nil {
		dialOpts = append(dialOpts, redis.DialContextFunc(o.dialContext))
	}
	return dialOpts
}

// newPool returns a pool with the limits of o that dials with dial.
func (o options) newPool(dial func(ctx context.Context) (redis.Conn, error)) *redis.Pool {
	return &redis.Pool{
		DialContext: dial,
		TestOnBorrowContext: func(ctx context.Context, conn redis.Conn, lastUsed time.Time) error {
			if time.Since(lastUsed) < pingAfterIdle {
				return nil
			}
			_, err := redis.DoContext(conn, ctx, "PING")
			return err
		},
		MaxIdle:     o.maxIdle,
		MaxActive:   o.maxActive,
		IdleTimeout: o.idleTimeout,
		Wait:        true,
	}
}

// String describes the client (network, address, database, user, TLS). It
// never includes the password.
func (c *Client) String() string {
	var b strings.Builder
	b.WriteString("redisclient.Client(")
	b.WriteString(c.network)
	b.WriteString(" ")
	if c.username != "" {
		b.WriteString(c.username)
		b.WriteString("@")
	}
	b.WriteString(c.address)
	fmt.Fprintf(&b, " db=%d", c.db)
	if c.tls {
		b.WriteString(" tls")
	}
	b.WriteString(")")
	return b.String()
}

// conn borrows a connection from the pool. It blocks while the pool is at
// its MaxActive limit and while dialing, both bounded by ctx. The caller must
// Close the returned connection.
func (c *Client) conn(ctx context.Context) (redis.Conn, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	conn, err := c.pool.GetContext(ctx)
	if err != nil {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("connect: %w", withContext(ctx, err))
	}
	return conn, nil
}

// withContext makes a failure to talk to Redis match ctx.Err() when ctx has
// ended: a read deadline taken from ctx's deadline may fire just before ctx
// reports it, yielding a plain network timeout. Error replies of the server
// are left alone.
func withContext(ctx context.Context, err error) error {
	var re redis.Error
	if err == nil || errors.As(err, &re) {
		return err
	}
	cerr := ctx.Err()
	if dl, ok := ctx.Deadline(); cerr == nil && ok && !time.Now().Before(dl) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// Do runs one command on a pooled connection and returns its raw reply (see
// the package documentation); a nil reply is (nil, nil). It blocks until the
// reply arrives, ctx ends or a timeout expires. An error reply of the server
// is returned as a wrapped redis.Error.
//
// Commands that change the state of the connection (SELECT, AUTH, HELLO,
// RESET, QUIT, MULTI, EXEC, DISCARD, WATCH, UNWATCH, [P|S]SUBSCRIBE,
// [P|S]UNSUBSCRIBE, MONITOR) are refused, since the connection goes back to
// a shared pool: use scripts for atomicity.
func (c *Client) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	if err := checkCommand(cmd); err != nil {
		return nil, err
	}
	conn, err := c.conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisclient: do %s: %w", cmd, err)
	}
	defer conn.Close()
	v, err := redis.DoContext(conn, ctx, cmd, args...)
	if err != nil {
		return nil, fmt.Errorf("redisclient: do %s: %w", cmd, withContext(ctx, err))
	}
	return v, nil
}

// checkCommand refuses an empty command and one that changes the state of
// a pooled connection.
func checkCommand(cmd string) error {
	if cmd == "" {
		return errors.New("redisclient: do: empty command name")
	}
	if connectionStateCommand(cmd) {
		return fmt.Errorf("redisclient: do %s: command changes connection state, not supported on a pooled client", cmd)
	}
	return nil
}

func connectionStateCommand(cmd string) bool {
	switch strings.ToUpper(cmd) {
	case "SELECT", "AUTH", "HELLO", "RESET", "QUIT",
		"MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH",
		"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE",
		"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE", "MONITOR":
		return true
	}
	return false
}

// NonNil returns v and err unchanged, except that a nil reply without error
// becomes ErrNil. It is meant to wrap a call:
//
//	v, err := redisclient.NonNil(c.Do(ctx, "GET", key))
func NonNil(v any, err error) (any, error) {
	if err == nil && v == nil {
		return nil, ErrNil
	}
	return v, err
}

// GetString returns the value of the string at key. It returns ErrNil (as
// is) when key does not exist, and a wrapped redis.Error when key holds
// another type. It blocks like Do.
func (c *Client) GetString(ctx context.Context, key string) (string, error) {
	v, err := NonNil(c.Do(ctx, "GET", key))
	if err != nil {
		return "", err
	}
	s, err := redis.String(v, nil)
	if err != nil {
		return "", fmt.Errorf("redisclient: do GET: %w", err)
	}
	return s, nil
}

// Ping checks that the server answers PING, dialing a connection if none is
// idle. It blocks like Do.
func (c *Client) Ping(ctx context.Context) error {
	v, err := c.Do(ctx, "PING")
	if err != nil {
		return err
	}
	if s, ok := v.(string); !ok || s != "PONG" {
		return fmt.Errorf("redisclient: do PING: unexpected reply %v", v)
	}
	return nil
}

// PoolStats is a snapshot of the connection pool.
type PoolStats struct {
	// ActiveCount is the number of open connections, idle or in use.
	ActiveCount int
	// IdleCount is the number of idle connections.
	IdleCount int
	// WaitCount is the number of times a caller waited for a free
	// connection (approximate).
	WaitCount int64
	// WaitDuration is the total time callers waited (approximate).
	WaitDuration time.Duration
}

// Stats returns a snapshot of the pool. It does not block on Redis.
func (c *Client) Stats() PoolStats {
	s := c.pool.Stats()
	return PoolStats{
		ActiveCount:  s.ActiveCount,
		IdleCount:    s.IdleCount,
		WaitCount:    s.WaitCount,
		WaitDuration: s.WaitDuration,
	}
}

// Close closes the idle connections and makes every later call fail with
// ErrClosed; connections in use are closed when their call returns. It does
// not block on Redis and is safe to call more than once.
func (c *Client) Close() error {
	c.closed.Store(true)
	return c.pool.Close()
}
