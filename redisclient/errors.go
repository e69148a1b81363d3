package redisclient

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/gomodule/redigo/redis"
)

// IsUnavailable reports whether err means that Redis could not be reached or
// cannot serve now, so the same call may succeed later. It looks through
// wrapping (errors.Is / errors.As) and reports true for:
//
//   - network errors: any net.Error (refused or reset connections, timeouts),
//     io.EOF, io.ErrUnexpectedEOF, ECONNREFUSED, ECONNRESET, EPIPE,
//     ECONNABORTED, os.ErrDeadlineExceeded;
//   - context.DeadlineExceeded: Redis (or a free pooled connection) did not
//     come within the deadline, while dialing or waiting for a reply;
//   - the pool being exhausted or closed (redis.ErrPoolExhausted, ErrClosed);
//   - server errors that mean "cannot serve now": OOM (maxmemory reached
//     under noeviction: nothing was written), LOADING, BUSY, MASTERDOWN,
//     CLUSTERDOWN, TRYAGAIN, READONLY, a redirection (MOVED, ASK) still
//     answered after a ClusterClient's retries, and "ERR max number of
//     clients reached";
//   - a ClusterClient that reached no node of the cluster.
//
// It reports false for nil, for context.Canceled (the caller gave up), and
// for every other error, such as errors of a script or command (ERR ...,
// WRONGTYPE ...), authentication errors and invalid arguments.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return unavailableReply(string(re))
	}
	switch {
	case errors.Is(err, ErrClosed),
		errors.Is(err, errNoTopology),
		errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// redigo creates these with errors.New at the point of failure.
	msg := err.Error()
	return strings.Contains(msg, "redigo: get on closed pool") ||
		strings.Contains(msg, "redigo: connection pool closed")
}

// unavailableReply reports whether a server error reply means the server
// cannot serve now.
func unavailableReply(msg string) bool {
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "OOM", "MOVED", "ASK":
		return true
	}
	return strings.HasPrefix(msg, "ERR max number of clients reached")
}
