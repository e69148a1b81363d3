package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func envOf(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestServeConfigDefaults(t *testing.T) {
	cfg, err := parseServeConfig(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := serveConfig{
		Listen: "127.0.0.1:8080", API: true, Worker: true, Namespace: "rtw", Shards: 0, Tick: time.Second, Lease: 60 * time.Second,
		Concurrency: 1000, RetryMinBackoff: time.Second, RetryMaxBackoff: time.Hour, MaxBodyBytes: 1048576,
		DemoEcho: true, LogLevel: slog.LevelInfo,
	}
	if !equalConfig(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func equalConfig(a, b serveConfig) bool {
	return a.Redis == b.Redis && a.RedisCluster == b.RedisCluster && a.Listen == b.Listen && a.API == b.API &&
		a.Worker == b.Worker && a.Namespace == b.Namespace && a.Shards == b.Shards && a.Tick == b.Tick && a.Lease == b.Lease &&
		a.Concurrency == b.Concurrency && a.RetryMinBackoff == b.RetryMinBackoff && a.RetryMaxBackoff == b.RetryMaxBackoff &&
		a.MaxBodyBytes == b.MaxBodyBytes && a.DemoEcho == b.DemoEcho && a.LogLevel == b.LogLevel &&
		a.APIToken == b.APIToken && bytes.Equal(a.SigningSecret, b.SigningSecret)
}

func TestServeConfigEnvAndFlags(t *testing.T) {
	env := envOf(map[string]string{
		"RTW_REDIS": "redis://:pw@10.0.0.1:6400/2", "RTW_LISTEN": "0.0.0.0:9000", "RTW_API": "false",
		"RTW_WORKER": "true", "RTW_NAMESPACE": "shop", "RTW_TICK": "250ms", "RTW_LEASE": "90s",
		"RTW_CONCURRENCY": "50", "RTW_RETRY_MIN_BACKOFF": "2s", "RTW_RETRY_MAX_BACKOFF": "10m",
		"RTW_MAX_BODY_BYTES": "2048", "RTW_API_TOKEN": "env-token", "RTW_SIGNING_SECRET": "env-secret",
		"RTW_DEMO_ECHO": "false", "RTW_LOG_LEVEL": "debug", "RTW_SHARDS": "6",
	})
	cfg, err := parseServeConfig(nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := serveConfig{
		Redis: "redis://:pw@10.0.0.1:6400/2", Listen: "0.0.0.0:9000", API: false, Worker: true, Namespace: "shop", Shards: 6,
		Tick: 250 * time.Millisecond, Lease: 90 * time.Second, Concurrency: 50, RetryMinBackoff: 2 * time.Second,
		RetryMaxBackoff: 10 * time.Minute, MaxBodyBytes: 2048, DemoEcho: false, LogLevel: slog.LevelDebug,
		APIToken: "env-token", SigningSecret: []byte("env-secret"),
	}
	if !equalConfig(cfg, want) {
		t.Errorf("from the environment:\n got %+v\nwant %+v", cfg, want)
	}

	// A flag wins over its variable; secret files win over the variables.
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	secretFile := filepath.Join(dir, "secret")
	writeFile(t, tokenFile, "file-token\n")
	writeFile(t, secretFile, "file-secret\r\n")
	cfg, err = parseServeConfig([]string{
		"--redis", "127.0.0.1:6500", "--api=true", "--namespace=other", "--tick", "2s", "--concurrency", "7",
		"--api-token-file", tokenFile, "--signing-secret-file", secretFile,
	}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis != "127.0.0.1:6500" || !cfg.API || cfg.Namespace != "other" || cfg.Tick != 2*time.Second ||
		cfg.Concurrency != 7 || cfg.Lease != 90*time.Second {
		t.Errorf("flags over the environment: %+v", cfg)
	}
	if cfg.APIToken != "file-token" || string(cfg.SigningSecret) != "file-secret" {
		t.Errorf("secrets from files (trailing newline trimmed): token %q secret %q", cfg.APIToken, cfg.SigningSecret)
	}
}

func TestServeConfigRejectsBadValues(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	writeFile(t, empty, "\n")
	cases := []struct {
		args    []string
		env     map[string]string
		mention string
	}{
		{args: []string{"--concurrency", "-1"}, mention: "--concurrency"},
		{args: []string{"--concurrency", "0"}, mention: "--concurrency"},
		{args: []string{"--tick", "10 parsecs"}, mention: "tick"},
		{args: []string{"--tick", "0s"}, mention: "--tick"},
		{args: []string{"--lease", "500ms"}, mention: "--lease"},
		{args: []string{"--retry-min-backoff", "5s", "--retry-max-backoff", "1s"}, mention: "--retry-max-backoff"},
		{args: []string{"--max-body-bytes", "0"}, mention: "--max-body-bytes"},
		{args: []string{"--namespace", "has space"}, mention: "--namespace"},
		{args: []string{"--api=false", "--worker=false"}, mention: "nothing to run"},
		{args: []string{"--api-token-file", filepath.Join(dir, "missing")}, mention: "--api-token-file"},
		{args: []string{"--signing-secret-file", filepath.Join(dir, "missing")}, mention: "--signing-secret-file"},
		{args: []string{"--api-token-file", empty}, mention: "empty"},
		{args: []string{"--redis-cluster", "10.0.0.1:7001,10.0.0.2:7001", "--redis", "10.0.0.1:6379"}, mention: "give one of them"},
		{env: map[string]string{"RTW_REDIS_CLUSTER": "10.0.0.1:7001", "RTW_REDIS": "10.0.0.1:6379"}, mention: "--redis-cluster"},
		{args: []string{"--shards", "-1"}, mention: "--shards"},
		{env: map[string]string{"RTW_SHARDS": "2000"}, mention: "--shards"},
		{args: []string{"--no-such-flag"}, mention: "no-such-flag"},
		{args: []string{"extra"}, mention: "extra"},
		{env: map[string]string{"RTW_TICK": "soon"}, mention: "RTW_TICK"},
		{env: map[string]string{"RTW_API": "maybe"}, mention: "RTW_API"},
		{env: map[string]string{"RTW_CONCURRENCY": "-5"}, mention: "--concurrency"},
		{args: []string{"--log-level", "loud"}, mention: "log-level"},
	}
	for _, c := range cases {
		_, err := parseServeConfig(c.args, envOf(c.env), io.Discard)
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), c.mention) || strings.Contains(err.Error(), "\n") {
			t.Errorf("args %q env %v: error %v, want a one-line usage error mentioning %q", c.args, c.env, err, c.mention)
		}
	}
}

func TestServeBadFlagExitsWithOneLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), func() {}, []string{"serve", "--concurrency", "-3"}, &stdout, &stderr)
	if code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	if lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "--concurrency") {
		t.Errorf("stderr %q, want one line naming --concurrency", stderr.String())
	}
}

func TestServeUnreachableRedisExitsWithOneLine(t *testing.T) {
	var stdout, stderr bytes.Buffer
	port := freePort(t) // nothing listens there
	args := []string{"serve", "--redis", "127.0.0.1:" + itoa(port), "--listen", "127.0.0.1:" + itoa(freePort(t))}
	code := run(context.Background(), func() {}, args, &stdout, &stderr)
	if code != exitFailure {
		t.Errorf("exit code %d, want %d", code, exitFailure)
	}
	if lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "unreachable") {
		t.Errorf("stderr %q, want one line saying Redis is unreachable", stderr.String())
	}
}

func TestServeNeverLogsSecrets(t *testing.T) {
	var logs syncBuffer
	cfg, err := parseServeConfig([]string{"--listen", "127.0.0.1:" + itoa(freePort(t)), "--log-level", "debug"},
		envOf(map[string]string{"RTW_API_TOKEN": "tok-4f1c9a", "RTW_SIGNING_SECRET": "sec-77b2e0"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, func() {}, cfg, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	}()
	base := "http://" + cfg.Listen
	eventually(t, 5*time.Second, "the server to listen", func() bool {
		return strings.Contains(logs.String(), "rtimewheel serving")
	})
	a := doRequest(t, "POST", base+"/v1/tasks", "tok-4f1c9a", map[string]any{
		"key": "s", "callback_url": base + "/demo/echo", "delay_ms": 0, "header": map[string]string{"Authorization": "Bearer downstream-7a"},
	})
	if a.Status != 201 {
		t.Fatalf("POST: %d %s", a.Status, a.Body)
	}
	doRequest(t, "GET", base+"/v1/tasks/s", "wrong-token", nil).wantError(t, 401, "unauthenticated")
	eventually(t, 5*time.Second, "the demo echo", func() bool { return strings.Contains(logs.String(), "demo echo received") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	for _, secret := range []string{"tok-4f1c9a", "sec-77b2e0", "wrong-token", "downstream-7a"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds the secret %q:\n%s", secret, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"auth":true`) || !strings.Contains(logs.String(), `"signing":true`) {
		t.Errorf("the start line does not say auth and signing are on:\n%s", logs.String())
	}
}

// TestQuickStart runs the README's quick start in process: serve with the
// embedded Redis, the curl of a task to the demo echo receiver, and the log
// line it prints, then a graceful stop.
func TestQuickStart(t *testing.T) {
	var logs syncBuffer
	cfg, err := parseServeConfig([]string{"--listen", "127.0.0.1:" + itoa(freePort(t))}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, func() {}, cfg, slog.New(slog.NewJSONHandler(&logs, nil))) }()
	eventually(t, 5*time.Second, "the server to listen", func() bool {
		return strings.Contains(logs.String(), "rtimewheel serving")
	})
	if !strings.Contains(logs.String(), "NOTHING PERSISTS") {
		t.Errorf("no warning that the embedded Redis keeps nothing:\n%s", logs.String())
	}
	base := "http://" + cfg.Listen
	posted := time.Now()
	a := doRequest(t, "POST", base+"/v1/tasks", "",
		`{"key":"hello","callback_url":"`+base+`/demo/echo","delay_ms":2000,"req":{"hi":1}}`)
	if a.Status != 201 {
		t.Fatalf("POST: %d %s", a.Status, a.Body)
	}
	eventually(t, 10*time.Second, "the demo echo log line", func() bool {
		return strings.Contains(logs.String(), `"msg":"demo echo received a callback","method":"POST","key":"hello","attempt":"1"`)
	})
	if elapsed := time.Since(posted); elapsed < 2*time.Second {
		t.Errorf("the callback arrived %v after the POST, before its delay of 2s", elapsed)
	}
	if !strings.Contains(logs.String(), `"body":"{\"hi\":1}"`) {
		t.Errorf("the echo does not log the body:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
