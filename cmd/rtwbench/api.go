package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// apiPhase runs `rtimewheel serve` (API only) on the same Redis and
// measures POST /v1/tasks and POST /v1/tasks:batch.
func (e *env) apiPhase(ctx context.Context) error {
	cfg := e.cfg
	bin, cleanup, err := e.findRtimewheel(ctx)
	if err != nil {
		e.res.note("HTTP API phase skipped: %v", err)
		return nil
	}
	defer cleanup()
	port, err := freePort()
	if err != nil {
		return err
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.CommandContext(ctx, bin, "serve", "--redis", e.addr, "--namespace", e.namespace("api"),
		"--worker=false", "--listen", listen, "--log-level", "error", "--demo-echo=false",
		"--max-body-bytes", strconv.Itoa(max(1<<20, cfg.batchSize*(cfg.bodyBytes+200))))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s serve: %w", bin, err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	base := "http://" + listen
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(cfg.conc, cfg.batchConc)}, Timeout: 30 * time.Second}
	if err := waitReady(ctx, client, base+"/readyz"); err != nil {
		return err
	}

	var seq atomic.Int64
	hook := e.recv.url + "/hook"
	type apiTask struct {
		Key         string          `json:"key"`
		CallbackURL string          `json:"callback_url"`
		DelayMs     int64           `json:"delay_ms"`
		Req         json.RawMessage `json:"req"`
	}
	newTask := func() apiTask {
		return apiTask{Key: "h" + strconv.FormatInt(seq.Add(1), 10), CallbackURL: hook, DelayMs: 24 * 3600 * 1000, Req: e.body}
	}
	post := func(ctx context.Context, path string, v any, want int) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("POST %s: %w", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("POST %s: %w", path, err)
		}
		if resp.StatusCode != want {
			return fmt.Errorf("POST %s: status %d: %s", path, resp.StatusCode, bytes.TrimSpace(body))
		}
		if bytes.Contains(body, []byte(`"error":{`)) {
			return fmt.Errorf("POST %s: an item was refused: %.300s", path, body)
		}
		return nil
	}
	single := func(ctx context.Context, _ int) (int, error) {
		return 1, post(ctx, "/v1/tasks", newTask(), http.StatusCreated)
	}
	batch := func(ctx context.Context, _ int) (int, error) {
		tasks := make([]apiTask, cfg.batchSize)
		for i := range tasks {
			tasks[i] = newTask()
		}
		return len(tasks), post(ctx, "/v1/tasks:batch", map[string]any{"tasks": tasks}, http.StatusOK)
	}
	got, err := interleave(ctx, e.p, cfg.rounds,
		trial{"HTTP API, single", func(ctx context.Context) (float64, error) { return rate(ctx, cfg.conc, cfg.duration, single) }},
		trial{"HTTP API, batch", func(ctx context.Context) (float64, error) { return rate(ctx, cfg.batchConc, cfg.duration, batch) }},
	)
	if err != nil {
		return err
	}
	e.res.against(fmt.Sprintf("HTTP API POST /v1/tasks, %d clients", cfg.conc), got[0], "tasks/s", fmt.Sprintf(rowAddPar, cfg.conc), 0)
	e.res.against(fmt.Sprintf("HTTP API POST /v1/tasks:batch, %d clients × %d", cfg.batchConc, cfg.batchSize), got[1], "tasks/s",
		fmt.Sprintf(rowAddTasks, cfg.batchConc, cfg.batchSize), 0)
	return nil
}

// findRtimewheel returns the rtimewheel binary: --rtimewheel, the one
// beside this executable, the one on PATH, or one built with `go build`
// into a temporary directory (removed by cleanup).
func (e *env) findRtimewheel(ctx context.Context) (bin string, cleanup func(), err error) {
	nothing := func() {}
	if e.cfg.rtimewheel != "" {
		return e.cfg.rtimewheel, nothing, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "rtimewheel")
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nothing, nil
		}
	}
	if p, err := exec.LookPath("rtimewheel"); err == nil {
		return p, nothing, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", nil, errors.New("no rtimewheel binary (give --rtimewheel) and no go to build one")
	}
	dir, err := os.MkdirTemp("", "rtwbench-bin-")
	if err != nil {
		return "", nil, err
	}
	e.p.printf("building rtimewheel")
	out := filepath.Join(dir, "rtimewheel")
	build := exec.CommandContext(ctx, goBin, "build", "-o", out, "github.com/rtimewheel/rtimewheel/cmd/rtimewheel")
	if msg, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("no rtimewheel binary (give --rtimewheel), and go build failed: %v: %s", err, bytes.TrimSpace(msg))
	}
	return out, func() { os.RemoveAll(dir) }, nil
}

// waitReady polls url until it answers 200, for at most 15 s.
func waitReady(ctx context.Context, c *http.Client, url string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("rtimewheel serve not ready at %s after 15 s (last error: %v)", url, err)
		}
		time.Sleep(100 * time.Millisecond) // waiting for the process to listen
	}
}
