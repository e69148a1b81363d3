package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The statistics endpoints report exactly what was scheduled and what
// fired: tasks per minute ahead, deliveries and dead letters per minute,
// the worker, the dead-letter count.
func TestStatsEndpointsMatchWhatWasScheduledAndFired(t *testing.T) {
	e := newAPIEnv(t, envConfig{worker: true, token: "s3cret"})
	recv := newReceiver(t)

	start := time.Now().UTC().Truncate(time.Minute)
	want := map[string]int{} // minute -> tasks
	for ahead, n := range map[int]int{2: 3, 3: 5, 7: 1} {
		minute := start.Add(time.Duration(ahead) * time.Minute)
		want[formatTime(minute)] = n
		for i := range n {
			e.do("POST", "/v1/tasks", map[string]any{"key": fmt.Sprintf("later-%d-%d", ahead, i), "callback_url": recv.server.URL,
				"execute_at": formatTime(minute.Add(time.Duration(i) * time.Second))}).decode(t, &struct{}{})
		}
	}
	var up struct {
		Minutes []struct {
			Minute string
			Due    int
			Leased int
		}
		Total int
	}
	e.do("GET", "/v1/stats/upcoming", nil).decode(t, &up)
	if len(up.Minutes) != 60 || up.Total != 9 {
		t.Fatalf("upcoming: %d minutes, total %d; want 60, 9", len(up.Minutes), up.Total)
	}
	for _, m := range up.Minutes {
		if m.Due != want[m.Minute] || m.Leased != 0 {
			t.Errorf("upcoming %s: due %d, leased %d; want %d, 0", m.Minute, m.Due, m.Leased, want[m.Minute])
		}
	}
	e.do("GET", "/v1/stats/upcoming?minutes=5", nil).decode(t, &up)
	if len(up.Minutes) != 5 || up.Total != 3+5 {
		t.Errorf("upcoming?minutes=5: %d minutes, total %d; want 5, 8", len(up.Minutes), up.Total)
	}

	const delivered, dead = 6, 2
	post := func(task map[string]any) {
		if a := e.do("POST", "/v1/tasks", task); a.Status != http.StatusCreated {
			t.Fatalf("POST %v: %d %s", task["key"], a.Status, a.Body)
		}
	}
	for i := range delivered {
		post(map[string]any{"key": fmt.Sprintf("now-%d", i), "callback_url": recv.server.URL, "delay_ms": 100})
	}
	for i := range dead {
		post(map[string]any{"key": fmt.Sprintf("dies-%d", i), "callback_url": "http://127.0.0.1:1/",
			"delay_ms": 100, "max_attempts": 1, "timeout_ms": 1000})
	}
	type recent struct {
		Minutes []struct {
			Minute                    string
			Fired, Delivered, Retried int
			Dead, Dropped             int
			P50                       int64 `json:"lateness_p50_ms"`
			P99                       int64 `json:"lateness_p99_ms"`
		}
	}
	var sum struct{ fired, delivered, retried, dead, dropped int }
	eventually(t, 15*time.Second, "the statistics to count every callback", func() bool {
		var r recent
		e.do("GET", "/v1/stats/recent", nil).decode(t, &r)
		sum = struct{ fired, delivered, retried, dead, dropped int }{}
		for _, m := range r.Minutes {
			sum.fired += m.Fired
			sum.delivered += m.Delivered
			sum.retried += m.Retried
			sum.dead += m.Dead
			sum.dropped += m.Dropped
			if m.Fired > 0 && (m.P50 > m.P99 || m.P99 > 5000) {
				t.Errorf("minute %s: lateness p50 %d ms, p99 %d ms", m.Minute, m.P50, m.P99)
			}
		}
		return sum.fired == delivered+dead && len(r.Minutes) == 60
	})
	if sum.delivered != delivered || sum.dead != dead || sum.retried != 0 || sum.dropped != 0 {
		t.Errorf("recent: %+v; want %d delivered, %d dead", sum, delivered, dead)
	}
	if recv.count() != delivered {
		t.Errorf("the receiver got %d callbacks, want %d", recv.count(), delivered)
	}

	var count struct{ Count int }
	e.do("GET", "/v1/stats/dead-letters", nil).decode(t, &count)
	if count.Count != dead {
		t.Errorf("dead letters: %d, want %d", count.Count, dead)
	}
	var workers struct {
		Workers []struct {
			ID, Host    string
			PID         int
			Started     string `json:"started_at"`
			Seen        string `json:"last_seen_at"`
			Concurrency int
		}
	}
	e.do("GET", "/v1/stats/workers", nil).decode(t, &workers)
	if len(workers.Workers) != 1 || workers.Workers[0].Host == "" || workers.Workers[0].Concurrency != 100 || workers.Workers[0].Seen == "" {
		t.Errorf("workers: %+v; want one, with host, concurrency 100 and last seen", workers.Workers)
	}
}

func TestStatsEndpointsCheckTheirInput(t *testing.T) {
	e := newAPIEnv(t, envConfig{token: "s3cret"})
	for _, q := range []string{"0", "1441", "x", "-1"} {
		e.do("GET", "/v1/stats/recent?minutes="+q, nil).wantError(t, http.StatusBadRequest, codeInvalidArgument, "minutes")
		e.do("GET", "/v1/stats/upcoming?minutes="+q, nil).wantError(t, http.StatusBadRequest, codeInvalidArgument, "minutes")
	}
	// Statistics are kept two hours: more is refused, not read as zeros.
	e.do("GET", "/v1/stats/recent?minutes=121", nil).wantError(t, http.StatusBadRequest, codeInvalidArgument, "minutes", "120")
	if a := e.do("GET", "/v1/stats/recent?minutes=120", nil); a.Status != http.StatusOK {
		t.Errorf("recent?minutes=120: %d %s, want 200", a.Status, a.Body)
	}
	for _, path := range []string{"/v1/stats/upcoming", "/v1/stats/recent", "/v1/stats/workers", "/v1/stats/dead-letters"} {
		doRequest(t, "GET", e.server.URL+path, "", nil).wantError(t, http.StatusUnauthorized, codeUnauthenticated)
		doRequest(t, "GET", e.server.URL+path, "wrong", nil).wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	}
	var workers struct{ Workers []any }
	e.do("GET", "/v1/stats/workers", nil).decode(t, &workers)
	if workers.Workers == nil || len(workers.Workers) != 0 {
		t.Errorf("workers without a worker: %v; want []", workers.Workers)
	}
}

// The dashboard's assets are served without a token (they hold no data),
// from the binary, with a strict content security policy.
func TestDashboardAssetsAreServed(t *testing.T) {
	e := newAPIEnv(t, envConfig{token: "s3cret"})
	page := doRequest(t, "GET", e.server.URL+"/ui/", "", nil)
	if page.Status != http.StatusOK || !strings.Contains(page.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page.Body), "uPlot.iife.min.js") {
		t.Fatalf("GET /ui/: %d %s\n%.200s", page.Status, page.Header.Get("Content-Type"), page.Body)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	for path, want := range map[string]string{
		"/ui/app.js":                         "sessionStorage",
		"/ui/app.css":                        "font",
		"/ui/vendor/uplot/uPlot.iife.min.js": "uPlot",
		"/ui/vendor/uplot/uPlot.min.css":     ".uplot",
		"/ui/vendor/uplot/LICENSE":           "MIT License",
	} {
		a := doRequest(t, "GET", e.server.URL+path, "", nil)
		if a.Status != http.StatusOK || !strings.Contains(string(a.Body), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, a.Status, want)
		}
	}
	if a := doRequest(t, "GET", e.server.URL+"/ui/missing.js", "", nil); a.Status != http.StatusNotFound {
		t.Errorf("GET /ui/missing.js: %d, want 404", a.Status)
	}
	workerOnly := (&apiServer{metrics: newServiceMetrics(), logger: slog.New(slog.DiscardHandler)}).handler(false, false)
	rec := httptest.NewRecorder()
	workerOnly.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("--api=false: GET /ui/: %d, want 404", rec.Code)
	}
}
