package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// apiEnv is the HTTP API on a wheel on miniredis, served by httptest.
type apiEnv struct {
	t       *testing.T
	redis   *miniredis.Miniredis
	wheel   *rtimewheel.RTimeWheel
	metrics *serviceMetrics
	server  *httptest.Server
	token   string
	initial []string // keys in Redis once the wheel started (its pinned shard count)
}

// storedKeys returns the keys written since the env started.
func (e *apiEnv) storedKeys() []string {
	return slices.DeleteFunc(e.redis.Keys(), func(k string) bool { return slices.Contains(e.initial, k) })
}

// envConfig selects what an apiEnv runs.
type envConfig struct {
	worker        bool // run a worker (tick 50ms) besides the API
	token         string
	maxBodyBytes  int64 // 0: the default 1 MiB
	signingSecret []byte
}

func newAPIEnv(t *testing.T, ec envConfig) *apiEnv {
	t.Helper()
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		t.Fatalf("start miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	client := redisclient.NewClient("tcp", m.Addr(), "", redisclient.WithDialTimeout(time.Second))
	t.Cleanup(func() { _ = client.Close() })

	cfg := serveConfig{
		API:             true,
		Worker:          ec.worker,
		Namespace:       "test",
		Shards:          rtimewheel.DefaultShards,
		Tick:            50 * time.Millisecond,
		Lease:           rtimewheel.DefaultLease,
		Concurrency:     100,
		RetryMinBackoff: 100 * time.Millisecond,
		RetryMaxBackoff: time.Second,
		MaxBodyBytes:    ec.maxBodyBytes,
		DemoEcho:        true,
		APIToken:        ec.token,
		SigningSecret:   ec.signingSecret,
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	metrics := newServiceMetrics()
	wheel := rtimewheel.NewRTimeWheel(client, newCallbackClient(cfg), wheelOptions(cfg, logger, metrics)...)
	t.Cleanup(wheel.Stop)
	metrics.trackInFlight(wheel.InFlight)
	api := &apiServer{
		wheel:        wheel,
		ping:         client.Ping,
		metrics:      metrics,
		logger:       logger,
		token:        cfg.APIToken,
		maxBodyBytes: cfg.MaxBodyBytes,
		now:          time.Now,
	}
	server := httptest.NewServer(api.handler(true, true))
	t.Cleanup(server.Close)
	return &apiEnv{t: t, redis: m, wheel: wheel, metrics: metrics, server: server, token: ec.token, initial: m.Keys()}
}

// answer is a response read whole.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends method path with body (a string sent as is, anything else as
// JSON) and the env's token, and returns the answer.
func (e *apiEnv) do(method, path string, body any) answer {
	e.t.Helper()
	return doRequest(e.t, method, e.server.URL+path, e.token, body)
}

// doRequest sends the request (see tryRequest) and fails the test when it
// gets no answer. Only for the test's own goroutine.
func doRequest(t testing.TB, method, url, token string, body any) answer {
	t.Helper()
	a, err := tryRequest(method, url, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// tryRequest sends method url with body (a string or []byte sent as is,
// anything else as JSON) and token, and returns the answer, or an error
// when there is none. Safe to call from any goroutine.
func tryRequest(method, url, token string, body any) (answer, error) {
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		encoded, err := json.Marshal(b)
		if err != nil {
			return answer{}, fmt.Errorf("encode the request body: %w", err)
		}
		reader = bytes.NewReader(encoded)
	}
	req, err := http.NewRequest(method, url, reader)
	if err != nil {
		return answer{}, fmt.Errorf("new request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: read the body: %w", method, url, err)
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// decode decodes the answer's JSON body into v, failing the test otherwise.
func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.Body, v); err != nil {
		t.Fatalf("answer %d is not the JSON expected: %v\n%s", a.Status, err, a.Body)
	}
}

// wantError checks that a is status with an error body of code whose
// message contains each of mentions, and that the body has exactly the
// shape {"error": {"code", "message"}}.
func (a answer) wantError(t testing.TB, status int, code string, mentions ...string) {
	t.Helper()
	if a.Status != status {
		t.Fatalf("status %d, want %d; body %s", a.Status, status, a.Body)
	}
	if ct := a.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body %s is not {\"error\":{\"code\",\"message\"}}: %v", a.Body, err)
	}
	if body.Error.Code != code {
		t.Errorf("code %q, want %q (message %q)", body.Error.Code, code, body.Error.Message)
	}
	if body.Error.Message == "" {
		t.Errorf("empty message")
	}
	for _, m := range mentions {
		if !strings.Contains(body.Error.Message, m) {
			t.Errorf("message %q does not mention %q", body.Error.Message, m)
		}
	}
}

// eventually polls cond every 20ms until it is true or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// receivedCallback is one request a test receiver got.
type receivedCallback struct {
	At     time.Time
	Method string
	Header http.Header
	Body   []byte
}

// receiver is an HTTP server recording the callbacks it gets.
type receiver struct {
	mu       sync.Mutex
	calls    []receivedCallback
	status   int // answer; 204 when 0
	received chan struct{}
	server   *httptest.Server
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{received: make(chan struct{}, 1<<16)}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.calls = append(r.calls, receivedCallback{At: at, Method: req.Method, Header: req.Header.Clone(), Body: body})
		status := r.status
		r.mu.Unlock()
		if status == 0 {
			status = http.StatusNoContent
		}
		w.WriteHeader(status)
		select {
		case r.received <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(r.server.Close)
	return r
}

func (r *receiver) setStatus(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// snapshot returns the callbacks received so far.
func (r *receiver) snapshot() []receivedCallback {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedCallback(nil), r.calls...)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// freePort returns a loopback port free now, outside the ranges other
// tests on this machine use (6379-6391, 7000-7010).
func freePort(t testing.TB) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if (port >= 6379 && port <= 6391) || (port >= 7000 && port <= 7010) {
			continue
		}
		return port
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
