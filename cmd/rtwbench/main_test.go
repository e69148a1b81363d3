package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseFlagsDefaultsAndErrors(t *testing.T) {
	var stderr bytes.Buffer
	c, err := parseFlags(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if c.conc != 32 || c.fireTasks != 100_000 || c.fireWorkers != 3 || c.scaleTasks != 1_000_000 || c.bodyBytes != 100 {
		t.Errorf("defaults are not those of the issue: %+v", c)
	}
	for _, args := range [][]string{
		{"--concurrency", "0"},
		{"--skip", "fire,nonsense"},
		{"--body-bytes", "3"},
		{"--duration", "0s"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &stderr); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	c, err = parseFlags([]string{"--skip", "api, scale"}, &stderr)
	if err != nil || !c.skip["api"] || !c.skip["scale"] || c.skip["fire"] {
		t.Errorf("--skip api, scale: %v %v", c.skip, err)
	}
}

func TestJSONBodyHasTheAskedSize(t *testing.T) {
	for _, n := range []int{8, 100, 1000} {
		b := jsonBody(n)
		if len(b) != n || !json.Valid(b) {
			t.Errorf("jsonBody(%d) = %d bytes, valid %v", n, len(b), json.Valid(b))
		}
	}
}

func TestPercentileAndMedian(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(ds, 50); p != 50*time.Millisecond {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(ds, 99); p != 99*time.Millisecond {
		t.Errorf("p99 = %v", p)
	}
	if p := percentile(nil, 99); p != 0 {
		t.Errorf("p99 of nothing = %v", p)
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median = %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
}

func TestTableShowsRatiosAndMisses(t *testing.T) {
	r := &results{Command: "rtwbench"}
	r.add(row{Name: "limit", Value: 1000, Unit: "calls/s"})
	r.against("ours", 700, "tasks/s", "limit", 0.8)
	r.against("other", 900, "tasks/s", "limit", 0.8)
	var out bytes.Buffer
	if err := r.writeTable(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"0.70", "ratio ≥ 0.8 ✗ MISSED", "0.90", "ratio ≥ 0.8 ✓"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
}

func TestWithoutRedisServerItFailsClearly(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--quiet"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "redis-server not found on PATH") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestSmallRun runs every phase but the HTTP API (which builds a binary) at
// a small scale against a redis-server of its own.
func TestSmallRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH")
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--quiet", "--json", "--skip", "api", "--rounds", "1", "--duration", "200ms",
		"--fire-tasks", "300", "--fire-concurrency", "20", "--scale-tasks", "3000", "--pulls", "10"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res results
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	got := map[string]row{}
	for _, w := range res.Rows {
		got[w.Name] = w
	}
	fired := got["fire 300 due in 1 s, 3 workers: delivered"]
	if fired.Value != 300 || fired.Met == nil || !*fired.Met {
		t.Errorf("firing: %+v", fired)
	}
	if w := got["AddTask, 32 goroutines"]; w.Value <= 0 || w.Ratio <= 0 {
		t.Errorf("AddTask row: %+v", w)
	}
	if w := got["pull per tick, 3000 waiting in the scanned slice (median)"]; w.Value <= 0 || w.Ratio <= 0 {
		t.Errorf("pull row: %+v", w)
	}
}
