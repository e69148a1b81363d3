package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// Bounds of the serve process.
const (
	startupPingTimeout  = 3 * time.Second  // PING of Redis at start
	httpShutdownTimeout = 10 * time.Second // requests in progress at SIGTERM
	// wheelStopTimeout bounds Stop: handing tasks back and waiting for the
	// callbacks in flight, each bounded by its task's timeout (at most 30 s).
	wheelStopTimeout = rtimewheel.MaxTimeout + 15*time.Second
)

// Timeouts of the HTTP server.
const (
	serverReadHeaderTimeout = 5 * time.Second
	serverReadTimeout       = 30 * time.Second
	serverWriteTimeout      = 30 * time.Second
	serverIdleTimeout       = 120 * time.Second
)

// runServe is `rtimewheel serve`: it runs until ctx ends (SIGINT, SIGTERM),
// then shuts down gracefully and returns nil.
func runServe(ctx context.Context, stopSignals func(), args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeConfig(args, os.Getenv, stdout)
	if err != nil {
		return err
	}
	return serve(ctx, stopSignals, cfg, newLogger(stderr, cfg.LogLevel))
}

// newLogger logs to w as text when w is a terminal, as JSON otherwise.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// serve runs the configured roles until ctx ends.
func serve(ctx context.Context, stopSignals func(), cfg serveConfig, logger *slog.Logger) error {
	redis, err := openRedis(cfg, logger)
	if err != nil {
		return err
	}
	defer redis.Close()
	pingCtx, cancel := context.WithTimeout(ctx, startupPingTimeout)
	err = redis.Ping(pingCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("redis at %s is unreachable: %w", redis.Address, err)
	}

	listener, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}

	metrics := newServiceMetrics()
	wheel := rtimewheel.NewRTimeWheel(redis.Client, newCallbackClient(cfg), wheelOptions(cfg, logger, metrics)...)
	metrics.trackInFlight(wheel.InFlight)
	api := &apiServer{
		wheel:        wheel,
		ping:         redis.Ping,
		metrics:      metrics,
		logger:       logger,
		token:        cfg.APIToken,
		maxBodyBytes: cfg.MaxBodyBytes,
		now:          time.Now,
	}
	server := &http.Server{
		Handler:           api.handler(cfg.API, cfg.DemoEcho),
		ReadHeaderTimeout: serverReadHeaderTimeout,
		ReadTimeout:       serverReadTimeout,
		WriteTimeout:      serverWriteTimeout,
		IdleTimeout:       serverIdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()

	logger.Info("rtimewheel serving",
		"listen", listener.Addr().String(),
		"api", cfg.API,
		"worker", cfg.Worker,
		"redis", redis.Address,
		"namespace", cfg.Namespace,
		"shards", wheel.Shards(),
		"tick", cfg.Tick.String(),
		"lease", cfg.Lease.String(),
		"concurrency", cfg.Concurrency,
		"auth", cfg.APIToken != "",
		"signing", cfg.SigningSecret != nil,
		"demo_echo", cfg.API && cfg.DemoEcho,
	)

	var serveErr error
	select {
	case <-ctx.Done():
		stopSignals() // a second signal kills the process
		logger.Info("shutting down: stopping the HTTP server, then handing back unfired tasks and waiting for callbacks in flight")
	case serveErr = <-served:
		logger.Error("http server failed", "err", serveErr)
	}
	return errors.Join(serveErr, shutdown(server, wheel, logger))
}

// shutdown stops the HTTP server, then the wheel, each within its bound.
func shutdown(server *http.Server, wheel *rtimewheel.RTimeWheel, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := server.Shutdown(ctx); err != nil {
		logger.Warn("http server did not shut down in time: closing it", "err", err)
		_ = server.Close()
	}
	stopped := make(chan struct{})
	go func() {
		wheel.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		logger.Info("stopped")
		return nil
	case <-time.After(wheelStopTimeout):
		return fmt.Errorf("the worker did not stop within %v", wheelStopTimeout)
	}
}

// wheelOptions turns the configuration into options of the wheel.
func wheelOptions(cfg serveConfig, logger *slog.Logger, metrics *serviceMetrics) []rtimewheel.Option {
	opts := []rtimewheel.Option{
		rtimewheel.WithNamespace(cfg.Namespace),
		rtimewheel.WithShards(cfg.Shards),
		rtimewheel.WithTick(cfg.Tick),
		rtimewheel.WithLease(cfg.Lease),
		rtimewheel.WithConcurrency(cfg.Concurrency),
		rtimewheel.WithBackoff(cfg.RetryMinBackoff, cfg.RetryMaxBackoff),
		rtimewheel.WithLogger(logger),
		rtimewheel.WithCallbackHook(metrics.observeCallback),
		rtimewheel.WithPullHook(metrics.observePull),
	}
	if !cfg.Worker {
		opts = append(opts, rtimewheel.WithoutWorker())
	}
	return opts
}

// newCallbackClient returns the client that performs callbacks, signing
// them when a signing secret is configured.
func newCallbackClient(cfg serveConfig) *httpclient.Client {
	var opts []httpclient.Option
	if cfg.SigningSecret != nil {
		opts = append(opts, httpclient.WithSigningSecret(cfg.SigningSecret))
	}
	return httpclient.NewClient(opts...)
}

// redisConn is the Redis the process works on: a standalone server, a
// Redis Cluster, or an embedded in-memory server.
type redisConn struct {
	Client  redisClient
	Address string // for logs and errors: never holds a password
	close   func()
}

// redisClient is what the service needs of a standalone or cluster client.
type redisClient interface {
	rtimewheel.RedisClient
	Ping(ctx context.Context) error
	Close() error
}

// openRedis makes the client of the configured Redis (--redis-cluster,
// --redis), or starts an embedded in-memory Redis when neither is given. It
// does not dial yet.
func openRedis(cfg serveConfig, logger *slog.Logger) (*redisConn, error) {
	if cfg.RedisCluster != "" {
		client, err := redisclient.NewClusterClientFromURL(cfg.RedisCluster)
		if err != nil {
			return nil, usagef("--redis-cluster: %v", err)
		}
		return &redisConn{Client: client, Address: client.String(), close: func() { _ = client.Close() }}, nil
	}
	if cfg.Redis != "" {
		client, err := redisclient.NewClientFromURL(cfg.Redis)
		if err != nil {
			return nil, usagef("--redis: %v", err)
		}
		return &redisConn{Client: client, Address: client.String(), close: func() { _ = client.Close() }}, nil
	}
	embedded := miniredis.NewMiniRedis()
	if err := embedded.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("start the embedded in-memory redis: %w", err)
	}
	logger.Warn("NO --redis GIVEN: using an embedded in-memory Redis. NOTHING PERSISTS: every task is lost when this process stops, and no other process can share them. Give --redis host:port for real use.",
		"embedded_redis", embedded.Addr())
	client := redisclient.NewClient("tcp", embedded.Addr(), "")
	return &redisConn{
		Client:  client,
		Address: "embedded " + embedded.Addr(),
		close: func() {
			_ = client.Close()
			embedded.Close()
		},
	}, nil
}

// Ping checks that Redis answers.
func (r *redisConn) Ping(ctx context.Context) error { return r.Client.Ping(ctx) }

// Close closes the connections and stops an embedded Redis.
func (r *redisConn) Close() { r.close() }
