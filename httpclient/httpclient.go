// Package httpclient performs the HTTP callbacks of rtimewheel and lets
// receivers verify their signatures.
package httpclient

import (
	"context"
	"errors"
	"time"
)

// Callback is one attempt at calling a task's URL.
type Callback struct {
	Key         string            // sent as Rtw-Task-Key
	Attempt     int               // sent as Rtw-Attempt, from 1
	ScheduledAt time.Time         // sent as Rtw-Scheduled-At
	Method      string            // GET, POST, PUT, PATCH or DELETE
	URL         string            // absolute http or https URL
	Header      map[string]string // sent as given
	Body        []byte            // JSON sent with Content-Type application/json; nil for none
	Timeout     time.Duration     // bounds this attempt; 0 means the client's default
}

// Result is the outcome of one attempt.
type Result struct {
	Delivered  bool          // the receiver answered 2xx
	StatusCode int           // 0 when no response arrived
	RetryAfter time.Duration // from Retry-After on a 429 or 503, else 0
	Duration   time.Duration
	Err        error // nil when delivered; describes the failure otherwise
}

// Client performs callbacks.
type Client struct{}

// Option configures a Client.
type Option func(*Client)

// NewClient returns a callback client.
func NewClient(opts ...Option) *Client { return &Client{} }

// Call performs cb once.
func (c *Client) Call(ctx context.Context, cb Callback) Result {
	return Result{Err: errors.New("stub")}
}
