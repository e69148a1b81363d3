package main

import (
	"io"
	"log/slog"
	"net/http"
)

// demoBodyLogLimit bounds how much of a received body the demo receiver logs.
const demoBodyLogLimit = 4 << 10

// demoEcho is /demo/echo, a receiver for trying the service out: it logs the
// callback it got (method, task key, attempt, body) and answers 204. It logs
// no header besides the rtimewheel ones, so no credential a task carries.
func (s *apiServer) demoEcho(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, demoBodyLogLimit+1))
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("key", r.Header.Get("Rtw-Task-Key")),
		slog.String("attempt", r.Header.Get("Rtw-Attempt")),
		slog.String("scheduled_at", r.Header.Get("Rtw-Scheduled-At")),
		slog.Bool("signed", r.Header.Get("Rtw-Signature") != ""),
	}
	if len(body) > demoBodyLogLimit {
		body = body[:demoBodyLogLimit]
		attrs = append(attrs, slog.Bool("body_truncated", true))
	}
	attrs = append(attrs, slog.String("body", string(body)))
	if err != nil {
		attrs = append(attrs, slog.String("read_error", err.Error()))
	}
	s.logger.LogAttrs(r.Context(), slog.LevelInfo, "demo echo received a callback", attrs...)
	w.WriteHeader(http.StatusNoContent)
}
