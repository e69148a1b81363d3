package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rtimewheel/rtimewheel/cmd/rtimewheel/ui"
	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// Limits of the HTTP API.
const (
	maxBatchTasks        = 1000
	defaultDeadLetters   = 100
	maxDeadLetters       = 1000
	requestTimeout       = 15 * time.Second // bounds the Redis work of one request
	readinessPingTimeout = 2 * time.Second
)

// Error codes of the API (API.md §2), and the one the contract leaves open.
const (
	codeInvalidArgument  = "invalid_argument"
	codeUnauthenticated  = "unauthenticated"
	codeNotFound         = "not_found"
	codePayloadTooLarge  = "payload_too_large"
	codeUnavailable      = "unavailable"
	codeInternal         = "internal"
	codeMethodNotAllowed = "method_not_allowed" // a path served for other methods only
)

// requestError is an error as the API answers it.
type requestError struct {
	Status  int
	Code    string
	Message string
}

func (e *requestError) Error() string { return e.Message }

func invalidArgument(message string) *requestError {
	return &requestError{Status: http.StatusBadRequest, Code: codeInvalidArgument, Message: message}
}

func notFound(format string, args ...any) *requestError {
	return &requestError{Status: http.StatusNotFound, Code: codeNotFound, Message: fmt.Sprintf(format, args...)}
}

// errorObject is the body of an error: {"code": ..., "message": ...}.
type errorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorResponse is {"error": {...}}.
type errorResponse struct {
	Error errorObject `json:"error"`
}

// apiServer serves the HTTP API of API.md §2 on a wheel.
type apiServer struct {
	wheel        *rtimewheel.RTimeWheel
	ping         func(context.Context) error // checks that Redis answers
	metrics      *serviceMetrics
	logger       *slog.Logger
	token        string // empty: no authentication
	maxBodyBytes int64
	now          func() time.Time
	dashboard    http.Handler // the /ui/ assets; set by handler
}

// endpointGroup says which role serves an endpoint.
type endpointGroup int

const (
	groupV1   endpointGroup = iota // the task API: with --api, behind the bearer token
	groupOps                       // health, readiness, metrics: always, without a token
	groupDemo                      // the demo receiver: with --api and --demo-echo
	groupUI                        // the dashboard's static assets: with --api, without a token (its data come from /v1)
)

// endpoint is one route of the HTTP server.
type endpoint struct {
	Method string
	Path   string // a net/http.ServeMux path pattern
	Group  endpointGroup
	Serve  func(*apiServer, http.ResponseWriter, *http.Request)
}

// Pattern is the ServeMux pattern of e.
func (e endpoint) Pattern() string { return e.Method + " " + e.Path }

// endpoints lists every route the server can serve. It is the one list both
// the mux and the test against api/openapi.yaml read.
func endpoints() []endpoint {
	return []endpoint{
		{"POST", "/v1/tasks", groupV1, (*apiServer).createTask},
		{"POST", "/v1/tasks:batch", groupV1, (*apiServer).createTasks},
		{"GET", "/v1/tasks/{key}", groupV1, (*apiServer).getTask},
		{"DELETE", "/v1/tasks/{key}", groupV1, (*apiServer).deleteTask},
		{"GET", "/v1/dead-letters", groupV1, (*apiServer).listDeadLetters},
		{"POST", "/v1/dead-letters/{key}/retry", groupV1, (*apiServer).retryDeadLetter},
		{"DELETE", "/v1/dead-letters/{key}", groupV1, (*apiServer).deleteDeadLetter},
		{"GET", "/v1/stats/upcoming", groupV1, (*apiServer).statsUpcoming},
		{"GET", "/v1/stats/recent", groupV1, (*apiServer).statsRecent},
		{"GET", "/v1/stats/workers", groupV1, (*apiServer).statsWorkers},
		{"GET", "/v1/stats/dead-letters", groupV1, (*apiServer).statsDeadLetters},
		{"GET", "/ui/", groupUI, (*apiServer).serveUI},
		{"GET", "/healthz", groupOps, (*apiServer).healthz},
		{"GET", "/readyz", groupOps, (*apiServer).readyz},
		{"GET", "/metrics", groupOps, (*apiServer).serveMetrics},
		{"GET", "/demo/echo", groupDemo, (*apiServer).demoEcho},
		{"POST", "/demo/echo", groupDemo, (*apiServer).demoEcho},
		{"PUT", "/demo/echo", groupDemo, (*apiServer).demoEcho},
		{"PATCH", "/demo/echo", groupDemo, (*apiServer).demoEcho},
		{"DELETE", "/demo/echo", groupDemo, (*apiServer).demoEcho},
	}
}

// handler returns the HTTP handler of the groups served: the ops endpoints
// always, the task API when serveAPI, the demo receiver when also demoEcho.
func (s *apiServer) handler(serveAPI, demoEcho bool) http.Handler {
	mux := http.NewServeMux()
	s.dashboard = ui.Handler("/ui/")
	for _, e := range endpoints() {
		switch {
		case e.Group == groupV1 && !serveAPI, e.Group == groupUI && !serveAPI, e.Group == groupDemo && !(serveAPI && demoEcho):
			continue
		}
		serve := e.Serve
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serve(s, w, r) })
		if e.Group == groupV1 {
			h = s.authenticate(h)
		}
		mux.Handle(e.Pattern(), h)
	}
	return jsonUnmatched(mux)
}

// authenticate lets a request through when it carries the bearer token, and
// answers 401 otherwise. Without a configured token it lets all through.
func (s *apiServer) authenticate(next http.HandlerFunc) http.HandlerFunc {
	if s.token == "" {
		return next
	}
	// Comparing digests keeps the comparison constant-time even in length.
	want := sha256.Sum256([]byte(s.token))
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !found || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rtimewheel"`)
			writeJSON(w, http.StatusUnauthorized, errorResponse{errorObject{codeUnauthenticated,
				"Authorization: Bearer <token> with the server's API token is required"}})
			return
		}
		next(w, r)
	}
}

// jsonUnmatched answers requests no route matches with the API's error
// shape: 404 not_found, or 405 with Allow for a path served for other methods.
func jsonUnmatched(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		status := statusRecorder{header: http.Header{}}
		mux.ServeHTTP(&status, r)
		if allow := status.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		body := errorObject{codeNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path)}
		if status.code == http.StatusMethodNotAllowed {
			body = errorObject{codeMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)}
		} else {
			status.code = http.StatusNotFound
		}
		writeJSON(w, status.code, errorResponse{body})
	})
}

// statusRecorder keeps the status and header a handler writes and drops its body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.code = code }

// createTask is POST /v1/tasks.
func (s *apiServer) createTask(w http.ResponseWriter, r *http.Request) {
	received := s.now()
	var req taskRequest
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, s.maxBodyBytes), &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	task, err := req.toScheduled(received)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	if err := s.wheel.AddTask(ctx, task.Task.Key, task.Task, task.ExecuteAt); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.metrics.tasksAdded.Inc()
	writeJSON(w, http.StatusCreated, responseOfScheduled(task))
}

// batchRequest is the body of POST /v1/tasks:batch. Each task is decoded on
// its own, so that one bad task fails alone.
type batchRequest struct {
	Tasks []json.RawMessage `json:"tasks"`
}

// batchResult is the outcome of one task of a batch; Error is null when it
// was stored.
type batchResult struct {
	Key   string       `json:"key"`
	Error *errorObject `json:"error"`
}

type batchResponse struct {
	Results []batchResult `json:"results"`
}

// createTasks is POST /v1/tasks:batch.
func (s *apiServer) createTasks(w http.ResponseWriter, r *http.Request) {
	received := s.now()
	var req batchRequest
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, s.maxBodyBytes), &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case req.Tasks == nil:
		s.writeError(w, r, invalidArgument(fmt.Sprintf("tasks: required: a list of at most %d tasks", maxBatchTasks)))
		return
	case len(req.Tasks) > maxBatchTasks:
		s.writeError(w, r, invalidArgument(fmt.Sprintf("tasks: at most %d tasks per batch, got %d", maxBatchTasks, len(req.Tasks))))
		return
	}

	results := make([]batchResult, len(req.Tasks))
	var items []rtimewheel.TaskAt
	var positions []int // positions[j] is the index in the request of items[j]
	for i, raw := range req.Tasks {
		task, key, err := decodeBatchItem(raw, received)
		results[i].Key = key
		if err != nil {
			results[i].Error = s.errorObjectOf(r, err)
			continue
		}
		items = append(items, rtimewheel.TaskAt{Key: key, Task: task.Task, ExecuteAt: task.ExecuteAt})
		positions = append(positions, i)
	}

	if len(items) > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		itemErrs, err := itemErrors(s.wheel.AddTasks(ctx, items), len(items))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		stored, unavailable := 0, false
		for j, itemErr := range itemErrs {
			if itemErr == nil {
				stored++
				continue
			}
			obj := s.errorObjectOf(r, itemErr)
			unavailable = unavailable || obj.Code == codeUnavailable
			results[positions[j]].Error = obj
		}
		s.metrics.tasksAdded.Add(float64(stored))
		if stored == 0 && unavailable {
			s.writeError(w, r, &requestError{http.StatusServiceUnavailable, codeUnavailable, "redis is unavailable: no task of the batch was stored"})
			return
		}
	}
	writeJSON(w, http.StatusOK, batchResponse{Results: results})
}

// decodeBatchItem decodes and checks one task of a batch and returns its key
// (empty when the item is not an object with one).
func decodeBatchItem(raw json.RawMessage, received time.Time) (scheduledTask, string, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return scheduledTask{}, "", invalidArgument("tasks: each task must be a JSON object")
	}
	var req taskRequest
	if err := decodeStrict(bytes.NewReader(raw), &req); err != nil {
		return scheduledTask{}, req.Key, err
	}
	task, err := req.toScheduled(received)
	return task, req.Key, err
}

// itemErrors splits the result of AddTasks into one error per item. It
// returns an error of its own when the batch failed as a whole.
func itemErrors(err error, n int) ([]error, error) {
	if err == nil {
		return make([]error, n), nil
	}
	var batchErr *rtimewheel.BatchError
	if errors.As(err, &batchErr) && len(batchErr.Errs) == n {
		return batchErr.Errs, nil
	}
	return nil, err
}

// getTask is GET /v1/tasks/{key}.
func (s *apiServer) getTask(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	info, err := s.wheel.GetTask(ctx, key)
	if errors.Is(err, rtimewheel.ErrNotFound) {
		err = notFound("no task with key %q", key)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, responseOfInfo(info))
}

// deleteTask is DELETE /v1/tasks/{key}.
func (s *apiServer) deleteTask(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	err := s.wheel.RemoveTask(ctx, key, time.Time{})
	if errors.Is(err, rtimewheel.ErrNotFound) {
		err = notFound("no task scheduled with key %q", key)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.metrics.tasksRemoved.Inc()
	w.WriteHeader(http.StatusNoContent)
}

// deadLettersResponse is the body of GET /v1/dead-letters.
type deadLettersResponse struct {
	Tasks []taskResponse `json:"tasks"`
}

// listDeadLetters is GET /v1/dead-letters?limit=N.
func (s *apiServer) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	limit := defaultDeadLetters
	if raw := r.URL.Query().Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxDeadLetters {
			s.writeError(w, r, invalidArgument(fmt.Sprintf("limit: must be an integer between 1 and %d, got %q", maxDeadLetters, raw)))
			return
		}
		limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	infos, err := s.wheel.DeadLetters(ctx, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := deadLettersResponse{Tasks: make([]taskResponse, 0, len(infos))}
	for i := range infos {
		resp.Tasks = append(resp.Tasks, responseOfInfo(&infos[i]))
	}
	writeJSON(w, http.StatusOK, resp)
}

// retryResponse is the body of a 202 from POST /v1/dead-letters/{key}/retry.
type retryResponse struct {
	Key   string `json:"key"`
	State string `json:"state"`
}

// retryDeadLetter is POST /v1/dead-letters/{key}/retry.
func (s *apiServer) retryDeadLetter(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	err := s.wheel.RetryDeadLetter(ctx, key)
	if errors.Is(err, rtimewheel.ErrNotFound) {
		err = notFound("no dead letter with key %q", key)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, retryResponse{Key: key, State: string(rtimewheel.StateScheduled)})
}

// deleteDeadLetter is DELETE /v1/dead-letters/{key}.
func (s *apiServer) deleteDeadLetter(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	err := s.wheel.DeleteDeadLetter(ctx, key)
	if errors.Is(err, rtimewheel.ErrNotFound) {
		err = notFound("no dead letter with key %q", key)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// statusResponse is the body of /healthz and of a ready /readyz.
type statusResponse struct {
	Status string `json:"status"`
}

// healthz is GET /healthz: 200 while the process runs.
func (s *apiServer) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, statusResponse{"ok"})
}

// readyz is GET /readyz: 200 when Redis answers a PING in time, else 503.
func (s *apiServer) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readinessPingTimeout)
	defer cancel()
	if err := s.ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, errorResponse{errorObject{codeUnavailable, fmt.Sprintf("redis does not answer: %v", err)}})
		return
	}
	writeJSON(w, http.StatusOK, statusResponse{"ok"})
}

// serveMetrics is GET /metrics.
func (s *apiServer) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s.metrics.handler.ServeHTTP(w, r)
}

// classify maps an error of a handler or of the wheel to what the client
// sees: its own message for the client's mistakes, a fixed one otherwise.
func classify(err error) *requestError {
	var reqErr *requestError
	var fieldErr *rtimewheel.FieldError
	switch {
	case errors.As(err, &reqErr):
		return reqErr
	case errors.As(err, &fieldErr):
		return invalidArgument(fieldErr.Error())
	case errors.Is(err, rtimewheel.ErrInvalidTask):
		return invalidArgument(err.Error())
	case errors.Is(err, rtimewheel.ErrNotFound):
		return notFound("%v", err)
	case errors.Is(err, rtimewheel.ErrStopped):
		return &requestError{http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down"}
	case errors.Is(err, rtimewheel.ErrUnavailable), redisclient.IsUnavailable(err), errors.Is(err, context.DeadlineExceeded):
		return &requestError{http.StatusServiceUnavailable, codeUnavailable, "redis is unavailable: nothing was stored or changed; retry later"}
	default:
		return &requestError{http.StatusInternalServerError, codeInternal, "internal error"}
	}
}

// errorObjectOf is err as one result of a batch. Internal errors are logged.
func (s *apiServer) errorObjectOf(r *http.Request, err error) *errorObject {
	e := classify(err)
	if e.Status == http.StatusInternalServerError {
		s.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	return &errorObject{Code: e.Code, Message: e.Message}
}

// writeError answers err in the API's error shape, logging server-side
// failures (5xx) with their cause.
func (s *apiServer) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := classify(err)
	switch {
	case e.Status == http.StatusInternalServerError:
		s.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case e.Status >= 500:
		s.logger.Warn("request refused", "method", r.Method, "path", r.URL.Path, "status", e.Status, "err", err)
	}
	writeJSON(w, e.Status, errorResponse{errorObject{e.Code, e.Message}})
}

// writeJSON answers status with v as JSON. HTML characters stay as they are
// (a task's req is shown as sent, not \u003c-escaped).
func writeJSON(w http.ResponseWriter, status int, v any) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		body.Reset()
		body.WriteString(`{"error":{"code":"internal","message":"encoding the response failed"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}
