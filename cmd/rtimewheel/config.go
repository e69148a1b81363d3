package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
	"github.com/rtimewheel/rtimewheel/util"
)

// serveConfig is the configuration of `rtimewheel serve`, from its flags and
// environment variables (API.md §1).
type serveConfig struct {
	Redis           string // host:port or redis:// URL; empty: embedded in-memory Redis
	RedisCluster    string // comma-separated seed nodes of a Redis Cluster
	Listen          string
	API             bool // serve the /v1 API (and the demo receiver)
	Worker          bool // pull due tasks and fire callbacks
	Namespace       string
	Shards          int
	Tick            time.Duration
	Lease           time.Duration
	Concurrency     int
	RetryMinBackoff time.Duration
	RetryMaxBackoff time.Duration
	MaxBodyBytes    int64
	DemoEcho        bool // serve /demo/echo (with the API role)
	LogLevel        slog.Level

	// Secrets: never logged.
	APIToken      string // empty: no authentication
	SigningSecret []byte // empty: callbacks are not signed
}

// serveFlagEnv maps each serve flag to the environment variable it falls
// back to. The secret flags take a file; their variables hold the secret
// itself and are read in readSecrets.
func serveFlagEnv() map[string]string {
	return map[string]string{
		"redis":             "RTW_REDIS",
		"redis-cluster":     "RTW_REDIS_CLUSTER",
		"listen":            "RTW_LISTEN",
		"api":               "RTW_API",
		"worker":            "RTW_WORKER",
		"namespace":         "RTW_NAMESPACE",
		"shards":            "RTW_SHARDS",
		"tick":              "RTW_TICK",
		"lease":             "RTW_LEASE",
		"concurrency":       "RTW_CONCURRENCY",
		"retry-min-backoff": "RTW_RETRY_MIN_BACKOFF",
		"retry-max-backoff": "RTW_RETRY_MAX_BACKOFF",
		"max-body-bytes":    "RTW_MAX_BODY_BYTES",
		"demo-echo":         "RTW_DEMO_ECHO",
		"log-level":         "RTW_LOG_LEVEL",
	}
}

// parseServeConfig reads the serve flags in args, falling back to the
// environment (getenv) for each flag not given, then reads the secrets and
// checks every value. Its errors are usageErrors of one line; -h gives
// errHelpShown after printing the flags to helpOut.
func parseServeConfig(args []string, getenv func(string) string, helpOut io.Writer) (serveConfig, error) {
	cfg := serveConfig{LogLevel: slog.LevelInfo}
	fs := flag.NewFlagSet("rtimewheel serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)

	fs.StringVar(&cfg.Redis, "redis", "", "`host:port` or redis://[:password@]host:port[/db] of a standalone Redis; empty: embedded in-memory Redis (nothing persists)")
	fs.StringVar(&cfg.RedisCluster, "redis-cluster", "", "comma-separated seed `nodes` (host:port or redis:// URL) of a Redis Cluster")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "`address` the HTTP server listens on")
	fs.BoolVar(&cfg.API, "api", true, "serve the HTTP API")
	fs.BoolVar(&cfg.Worker, "worker", true, "run a worker (pull due tasks, fire callbacks)")
	fs.StringVar(&cfg.Namespace, "namespace", rtimewheel.DefaultNamespace, "prefix of every Redis key")
	fs.IntVar(&cfg.Shards, "shards", 0, "slices per minute, spread over the masters of a cluster (0: 12 on a cluster, 1 on a standalone Redis); fixed by a namespace's first wheel")
	fs.DurationVar(&cfg.Tick, "tick", rtimewheel.DefaultTick, "how often a worker pulls from Redis")
	fs.DurationVar(&cfg.Lease, "lease", rtimewheel.DefaultLease, "how long a pulled task stays owned by its worker")
	fs.IntVar(&cfg.Concurrency, "concurrency", rtimewheel.DefaultConcurrency, "most callbacks in flight per worker")
	fs.DurationVar(&cfg.RetryMinBackoff, "retry-min-backoff", rtimewheel.DefaultMinBackoff, "first retry delay")
	fs.DurationVar(&cfg.RetryMaxBackoff, "retry-max-backoff", rtimewheel.DefaultMaxBackoff, "cap on a retry delay")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 1<<20, "largest accepted request body in bytes")
	fs.BoolVar(&cfg.DemoEcho, "demo-echo", true, "serve /demo/echo, a receiver that logs the callbacks it gets (with --api)")
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	tokenFile := fs.String("api-token-file", "", "`file` holding the bearer token every /v1 request needs")
	secretFile := fs.String("signing-secret-file", "", "`file` holding the secret callbacks are signed with (Rtw-Signature)")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printServeHelp(fs, helpOut)
			return cfg, errHelpShown
		}
		return cfg, usageError{err}
	}
	if fs.NArg() > 0 {
		return cfg, usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	if err := applyEnv(fs, serveFlagEnv(), getenv); err != nil {
		return cfg, err
	}
	if err := readSecrets(&cfg, *tokenFile, *secretFile, getenv); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

// applyEnv sets every flag of fs that was not given on the command line
// from its environment variable, when that is set and not empty.
func applyEnv(fs *flag.FlagSet, flagEnv map[string]string, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var firstErr error
	fs.VisitAll(func(f *flag.Flag) {
		env, ok := flagEnv[f.Name]
		if !ok || given[f.Name] || firstErr != nil {
			return
		}
		if value := getenv(env); value != "" {
			if err := fs.Set(f.Name, value); err != nil {
				firstErr = usagef("invalid value %q for %s: %v", value, env, err)
			}
		}
	})
	return firstErr
}

// readSecrets fills the API token and the signing secret from their files
// (a flag wins) or from their environment variables. A trailing newline of a
// file is dropped.
func readSecrets(cfg *serveConfig, tokenFile, secretFile string, getenv func(string) string) error {
	token, err := readSecret("--api-token-file", tokenFile, "RTW_API_TOKEN", getenv)
	if err != nil {
		return err
	}
	secret, err := readSecret("--signing-secret-file", secretFile, "RTW_SIGNING_SECRET", getenv)
	if err != nil {
		return err
	}
	cfg.APIToken, cfg.SigningSecret = token, []byte(secret)
	if len(cfg.SigningSecret) == 0 {
		cfg.SigningSecret = nil
	}
	return nil
}

func readSecret(flagName, path, env string, getenv func(string) string) (string, error) {
	if path == "" {
		return getenv(env), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		// The *PathError names the file, never its content.
		return "", usagef("%s: %v", flagName, err)
	}
	secret := strings.TrimRight(string(data), "\r\n")
	if secret == "" {
		return "", usagef("%s: %s is empty", flagName, path)
	}
	return secret, nil
}

// validate checks the values the flag parser cannot.
func (c serveConfig) validate() error {
	switch {
	case c.RedisCluster != "" && c.Redis != "":
		return usagef("--redis and --redis-cluster: give one of them")
	case c.Shards < 0 || c.Shards > 1024:
		return usagef("--shards %d: must be 1 to 1024, or 0 for the default of the Redis mode", c.Shards)
	case !c.API && !c.Worker:
		return usagef("--api=false and --worker=false: nothing to run")
	case c.Listen == "":
		return usagef("--listen: must not be empty")
	case !util.ValidNamespace(c.Namespace):
		return usagef("--namespace %q: must be 1 to 64 letters, digits, '-', '_' or '.'", c.Namespace)
	case c.Tick < time.Millisecond:
		return usagef("--tick %v: must be at least 1ms", c.Tick)
	case c.Lease < time.Second:
		return usagef("--lease %v: must be at least 1s", c.Lease)
	case c.Concurrency < 1:
		return usagef("--concurrency %d: must be at least 1", c.Concurrency)
	case c.RetryMinBackoff <= 0:
		return usagef("--retry-min-backoff %v: must be positive", c.RetryMinBackoff)
	case c.RetryMaxBackoff < c.RetryMinBackoff:
		return usagef("--retry-max-backoff %v: must not be below --retry-min-backoff %v", c.RetryMaxBackoff, c.RetryMinBackoff)
	case c.MaxBodyBytes < 1:
		return usagef("--max-body-bytes %d: must be positive", c.MaxBodyBytes)
	}
	return nil
}

func printServeHelp(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintln(w, "usage: rtimewheel serve [flags]")
	fmt.Fprintln(w, "\nEach flag falls back to its environment variable; a flag wins over its variable.")
	flagEnv := serveFlagEnv()
	flagEnv["api-token-file"] = "RTW_API_TOKEN, the token itself"
	flagEnv["signing-secret-file"] = "RTW_SIGNING_SECRET, the secret itself"
	printFlags(w, fs, flagEnv)
}

// printFlags lists the flags of fs with their environment variables.
func printFlags(w io.Writer, fs *flag.FlagSet, flagEnv map[string]string) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		var notes []string
		if env := flagEnv[f.Name]; env != "" {
			notes = append(notes, "env "+env)
		}
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
			notes = append(notes, "default "+f.DefValue)
		}
		fmt.Fprintf(w, "  --%s", f.Name)
		if name != "" {
			fmt.Fprintf(w, " %s", name)
		}
		fmt.Fprintf(w, "\n    \t%s", usage)
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintln(w)
	})
}
