package browsertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server is a `rtimewheel serve` process on an embedded Redis, with an API
// token.
type server struct {
	base  string // http://127.0.0.1:port
	token string
}

// startServer builds the binary from the main module and runs it until the
// test ends.
func startServer(t *testing.T, token string) *server {
	t.Helper()
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rtimewheel")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rtimewheel")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/rtimewheel: %v\n%s", err, out)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", "--listen", addr, "--api-token-file", tokenFile, "--retry-min-backoff", "2500ms", "--retry-max-backoff", "3s")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	s := &server{base: "http://" + addr, token: token}
	waitFor(t, 20*time.Second, "the server to answer /healthz", func() bool {
		res, err := http.Get(s.base + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return s
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// call sends an API request with the token and decodes the JSON answer into
// out (when not nil), failing the test on an unexpected status.
func (s *server) call(t *testing.T, method, path string, body any, wantStatus int, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != wantStatus {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, wantStatus, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// schedule adds a task due at at.
func (s *server) schedule(t *testing.T, key, url string, at time.Time, maxAttempts int) {
	t.Helper()
	s.call(t, "POST", "/v1/tasks", map[string]any{
		"key": key, "callback_url": url, "execute_at": at.UTC().Format(time.RFC3339Nano), "max_attempts": maxAttempts,
	}, http.StatusCreated, nil)
}

// receiver answers callbacks: 500 for keys starting with "dead-" while
// failing, 204 otherwise.
type receiver struct {
	srv       *httptest.Server
	failing   atomic.Bool
	delivered atomic.Int64
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.failing.Store(true)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.Header.Get("Rtw-Task-Key"), "dead-") && r.failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		r.delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, with a deadline
	}
}

func minuteKey(t time.Time) string {
	return t.UTC().Truncate(time.Minute).Format("2006-01-02T15:04:05.000Z")
}
