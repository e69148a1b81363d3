package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// timeLayout is how the API writes times: RFC 3339, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// taskRequest is a Task as a client sends it (API.md §2, Task).
type taskRequest struct {
	Key         string            `json:"key"`
	CallbackURL string            `json:"callback_url"`
	Method      string            `json:"method"`
	Header      map[string]string `json:"header"`
	Req         json.RawMessage   `json:"req"` // kept byte for byte
	ExecuteAt   *string           `json:"execute_at"`
	DelayMs     *int64            `json:"delay_ms"`
	MaxAttempts *int              `json:"max_attempts"`
	TimeoutMs   *int64            `json:"timeout_ms"`

	// Read-only fields of a response, accepted and ignored so that a task
	// read with GET can be posted again as it is.
	State         json.RawMessage `json:"state"`
	Attempts      json.RawMessage `json:"attempts"`
	LastError     json.RawMessage `json:"last_error"`
	NextAttemptAt json.RawMessage `json:"next_attempt_at"`
	DiedAt        json.RawMessage `json:"died_at"`
}

// taskResponse is a Task as the API answers it.
type taskResponse struct {
	Key           string            `json:"key"`
	CallbackURL   string            `json:"callback_url"`
	Method        string            `json:"method"`
	Header        map[string]string `json:"header,omitempty"`
	Req           json.RawMessage   `json:"req,omitempty"`
	ExecuteAt     string            `json:"execute_at"`
	MaxAttempts   int               `json:"max_attempts"`
	TimeoutMs     int64             `json:"timeout_ms"`
	State         string            `json:"state"`
	Attempts      int               `json:"attempts"`
	NextAttemptAt string            `json:"next_attempt_at,omitempty"`
	LastError     string            `json:"last_error,omitempty"`
	DiedAt        string            `json:"died_at,omitempty"`
}

// scheduledTask is a validated request, ready for the wheel.
type scheduledTask struct {
	Task      *rtimewheel.RTaskElement
	ExecuteAt time.Time // UTC, whole milliseconds, not before the time received
}

// decodeStrict decodes exactly one JSON value from r into v, rejecting
// unknown fields and anything after the value. Its errors are *requestErrors.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			return invalidArgument("malformed JSON: unexpected data after the JSON value")
		}
		return decodeError(err)
	}
	return nil
}

// decodeError turns an error of encoding/json (or of the body reader) into
// the API error a client sees, naming the field where there is one.
func decodeError(err error) *requestError {
	var tooLarge *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return &requestError{Status: 413, Code: codePayloadTooLarge,
			Message: fmt.Sprintf("request body exceeds %d bytes", tooLarge.Limit)}
	case errors.Is(err, io.EOF):
		return invalidArgument("request body is empty: a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidArgument("malformed JSON: unexpected end of the body")
	case errors.As(err, &syntaxErr):
		return invalidArgument(fmt.Sprintf("malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr))
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return invalidArgument(fmt.Sprintf("expected a JSON %s, got %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value))
		}
		return invalidArgument(fmt.Sprintf("%s: expected a JSON %s, got %s", field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this one.
		return invalidArgument(fmt.Sprintf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field ")))
	default:
		return invalidArgument(fmt.Sprintf("malformed JSON: %v", err))
	}
}

// jsonKind names a Go kind the way a JSON user thinks of it.
func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"):
		return "integer"
	case strings.HasPrefix(goKind, "float"):
		return "number"
	case goKind == "map", goKind == "struct":
		return "object"
	case goKind == "slice", goKind == "array":
		return "array"
	case goKind == "bool":
		return "boolean"
	default:
		return goKind
	}
}

// toScheduled checks the fields the wheel cannot (the choice between
// execute_at and delay_ms, explicit zero limits) and converts the request.
// received is when the server got the request: delay_ms counts from it, and
// an execute_at before it means "now". The wheel checks the rest (key,
// callback_url, method, header, req) when the task is added.
func (t *taskRequest) toScheduled(received time.Time) (scheduledTask, error) {
	at, err := t.dueTime(received)
	if err != nil {
		return scheduledTask{}, err
	}
	task := &rtimewheel.RTaskElement{
		Key:         t.Key,
		CallbackURL: t.CallbackURL,
		Method:      t.Method,
		Header:      t.Header,
	}
	if len(t.Req) > 0 && !bytes.Equal(t.Req, []byte("null")) {
		task.Req = t.Req // a json.RawMessage is sent byte for byte
	}
	if t.MaxAttempts != nil {
		if n := *t.MaxAttempts; n < 1 || n > rtimewheel.MaxMaxAttempts {
			return scheduledTask{}, fieldError("max_attempts", "must be between 1 and %d, got %d", rtimewheel.MaxMaxAttempts, n)
		}
		task.MaxAttempts = *t.MaxAttempts
	}
	if t.TimeoutMs != nil {
		maxMs := rtimewheel.MaxTimeout.Milliseconds()
		if ms := *t.TimeoutMs; ms < 1 || ms > maxMs {
			return scheduledTask{}, fieldError("timeout_ms", "must be between 1 and %d, got %d", maxMs, ms)
		}
		task.Timeout = time.Duration(*t.TimeoutMs) * time.Millisecond
	}
	return scheduledTask{Task: task, ExecuteAt: at}, nil
}

// dueTime resolves execute_at or delay_ms to a UTC time in whole
// milliseconds, rounded up so that a task never fires before the time asked.
func (t *taskRequest) dueTime(received time.Time) (time.Time, error) {
	var at time.Time
	switch {
	case t.ExecuteAt != nil && t.DelayMs != nil:
		return time.Time{}, fieldError("execute_at", "give exactly one of execute_at and delay_ms, not both")
	case t.ExecuteAt == nil && t.DelayMs == nil:
		return time.Time{}, fieldError("execute_at", "one of execute_at and delay_ms is required")
	case t.DelayMs != nil:
		ms := *t.DelayMs
		if ms < 0 {
			return time.Time{}, fieldError("delay_ms", "must be >= 0, got %d", ms)
		}
		if ms > math.MaxInt64/int64(time.Millisecond) {
			return time.Time{}, fieldError("delay_ms", "too large: %d", ms)
		}
		at = received.Add(time.Duration(ms) * time.Millisecond)
	default:
		parsed, err := time.Parse(time.RFC3339Nano, *t.ExecuteAt)
		if err != nil {
			return time.Time{}, fieldError("execute_at", "must be an RFC 3339 time such as 2026-11-22T08:00:00.250Z, got %q", *t.ExecuteAt)
		}
		at = parsed
	}
	if at.Before(received) {
		at = received
	}
	return ceilMillisecond(at).UTC(), nil
}

// ceilMillisecond rounds t up to a whole millisecond.
func ceilMillisecond(t time.Time) time.Time {
	floor := t.Truncate(time.Millisecond)
	if floor.Before(t) {
		return floor.Add(time.Millisecond)
	}
	return floor
}

func fieldError(field, format string, args ...any) error {
	return &rtimewheel.FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// responseOfScheduled is the 201 answer of a task just stored.
func responseOfScheduled(s scheduledTask) taskResponse {
	t := s.Task
	resp := taskResponse{
		Key:         t.Key,
		CallbackURL: t.CallbackURL,
		Method:      strings.ToUpper(t.Method),
		Header:      t.Header,
		ExecuteAt:   formatTime(s.ExecuteAt),
		MaxAttempts: t.MaxAttempts,
		TimeoutMs:   t.Timeout.Milliseconds(),
		State:       string(rtimewheel.StateScheduled),
	}
	if req, ok := t.Req.(json.RawMessage); ok {
		resp.Req = req
	}
	return withDefaults(resp)
}

// responseOfInfo is a stored task as GET and the dead-letter list show it.
func responseOfInfo(info *rtimewheel.TaskInfo) taskResponse {
	resp := taskResponse{
		Key:         info.Key,
		CallbackURL: info.CallbackURL,
		Method:      info.Method,
		Header:      info.Header,
		Req:         info.Req,
		ExecuteAt:   formatTime(info.ExecuteAt),
		MaxAttempts: info.MaxAttempts,
		TimeoutMs:   info.Timeout.Milliseconds(),
		State:       string(info.State),
		Attempts:    info.Attempts,
		LastError:   info.LastError,
	}
	if info.State == rtimewheel.StateRetrying && !info.NextAttemptAt.IsZero() {
		resp.NextAttemptAt = formatTime(info.NextAttemptAt)
	}
	if !info.DiedAt.IsZero() {
		resp.DiedAt = formatTime(info.DiedAt)
	}
	return withDefaults(resp)
}

// withDefaults fills the fields a task may leave to their defaults.
func withDefaults(r taskResponse) taskResponse {
	if r.Method == "" {
		r.Method = "POST"
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = rtimewheel.DefaultMaxAttempts
	}
	if r.TimeoutMs == 0 {
		r.TimeoutMs = rtimewheel.DefaultTimeout.Milliseconds()
	}
	if len(r.Req) == 0 {
		r.Req = nil
	}
	return r
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }
