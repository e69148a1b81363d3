package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// defaultStatsMinutes is the window of the statistics endpoints unless
// ?minutes= says otherwise.
const defaultStatsMinutes = 60

// upcomingMinute is one minute of GET /v1/stats/upcoming.
type upcomingMinute struct {
	Minute string `json:"minute"`
	Due    int    `json:"due"`    // waiting to be pulled
	Leased int    `json:"leased"` // pulled by a worker, firing or about to
}

type upcomingResponse struct {
	Minutes []upcomingMinute `json:"minutes"`
	Total   int              `json:"total"`
}

// recentMinute is one minute of GET /v1/stats/recent.
type recentMinute struct {
	Minute        string `json:"minute"`
	Fired         int    `json:"fired"`
	Delivered     int    `json:"delivered"`
	Retried       int    `json:"retried"`
	Dead          int    `json:"dead"`
	Dropped       int    `json:"dropped"`
	LatenessP50Ms int64  `json:"lateness_p50_ms"`
	LatenessP99Ms int64  `json:"lateness_p99_ms"`
}

type recentResponse struct {
	Minutes []recentMinute `json:"minutes"`
}

// workerResponse is one worker of GET /v1/stats/workers.
type workerResponse struct {
	ID          string `json:"id"`
	Host        string `json:"host"`
	PID         int    `json:"pid"`
	StartedAt   string `json:"started_at"`
	LastSeenAt  string `json:"last_seen_at"`
	InFlight    int    `json:"in_flight"`
	Queued      int    `json:"queued"`
	Concurrency int    `json:"concurrency"`
}

type workersResponse struct {
	Workers []workerResponse `json:"workers"`
}

type countResponse struct {
	Count int `json:"count"`
}

// statsMinutes reads ?minutes=, 1 to most.
func statsMinutes(r *http.Request, most int) (int, error) {
	raw := r.URL.Query().Get("minutes")
	if raw == "" {
		return defaultStatsMinutes, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > most {
		return 0, invalidArgument(fmt.Sprintf("minutes: must be an integer between 1 and %d, got %q", most, raw))
	}
	return n, nil
}

// serveStatsWindow answers a statistics endpoint over ?minutes= (at most
// most): read gets the number of minutes and returns the body.
func (s *apiServer) serveStatsWindow(w http.ResponseWriter, r *http.Request, most int, read func(context.Context, int) (any, error)) {
	minutes, err := statsMinutes(r, most)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	body, err := read(ctx, minutes)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// statsUpcoming is GET /v1/stats/upcoming: tasks due per minute, from the
// current minute on, summed over every shard.
func (s *apiServer) statsUpcoming(w http.ResponseWriter, r *http.Request) {
	s.serveStatsWindow(w, r, rtimewheel.MaxUpcomingMinutes, func(ctx context.Context, minutes int) (any, error) {
		load, err := s.wheel.UpcomingLoad(ctx, minutes)
		if err != nil {
			return nil, err
		}
		resp := upcomingResponse{Minutes: make([]upcomingMinute, len(load))}
		for i, m := range load {
			resp.Minutes[i] = upcomingMinute{Minute: formatTime(m.Minute), Due: m.Waiting, Leased: m.Leased}
			resp.Total += m.Waiting + m.Leased
		}
		return resp, nil
	})
}

// statsRecent is GET /v1/stats/recent: callback outcomes and lateness per
// minute, ending with the current minute.
func (s *apiServer) statsRecent(w http.ResponseWriter, r *http.Request) {
	s.serveStatsWindow(w, r, rtimewheel.MaxRecentMinutes, func(ctx context.Context, minutes int) (any, error) {
		stats, err := s.wheel.RecentStats(ctx, minutes)
		if err != nil {
			return nil, err
		}
		resp := recentResponse{Minutes: make([]recentMinute, len(stats))}
		for i, m := range stats {
			resp.Minutes[i] = recentMinute{
				Minute: formatTime(m.Minute), Fired: m.Fired, Delivered: m.Delivered, Retried: m.Retried,
				Dead: m.Dead, Dropped: m.Dropped,
				LatenessP50Ms: m.LatenessP50.Milliseconds(), LatenessP99Ms: m.LatenessP99.Milliseconds(),
			}
		}
		return resp, nil
	})
}

// statsWorkers is GET /v1/stats/workers: the workers whose heartbeat is
// recent, most recently seen first.
func (s *apiServer) statsWorkers(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	workers, err := s.wheel.Workers(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := workersResponse{Workers: make([]workerResponse, len(workers))}
	for i, wi := range workers {
		resp.Workers[i] = workerResponse{
			ID: wi.ID, Host: wi.Host, PID: wi.PID,
			StartedAt: formatTime(wi.StartedAt), LastSeenAt: formatTime(wi.LastSeenAt),
			InFlight: wi.InFlight, Queued: wi.Queued, Concurrency: wi.Concurrency,
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// statsDeadLetters is GET /v1/stats/dead-letters: how many dead letters
// are kept.
func (s *apiServer) statsDeadLetters(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	n, err := s.wheel.DeadLetterCount(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, countResponse{Count: n})
}

// serveUI is GET /ui/: the dashboard's page and its assets.
func (s *apiServer) serveUI(w http.ResponseWriter, r *http.Request) {
	s.dashboard.ServeHTTP(w, r)
}
