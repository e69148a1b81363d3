// Package httpclient performs the HTTP callbacks of rtimewheel: one Call is
// one attempt at delivering a task to its URL, classified as delivered (2xx)
// or failed, with the receiver's Retry-After when it sent one. The request
// format (the Rtw-* headers and the optional Rtw-Signature) is the one
// described in section 4 of the API; receivers check signatures with
// VerifySignature.
package httpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Headers added to every callback. Headers whose names start with "Rtw-"
// are reserved: values for them in Callback.Header are not sent.
const (
	HeaderTaskKey     = "Rtw-Task-Key"     // the task's key
	HeaderAttempt     = "Rtw-Attempt"      // 1 for the first attempt, 2 for the second, ...
	HeaderScheduledAt = "Rtw-Scheduled-At" // the time the task was due, UTC, e.g. 2026-11-22T08:00:00.250Z
	HeaderSignature   = "Rtw-Signature"    // t=<unix seconds>,v1=<hex HMAC>; only with a signing secret
)

const (
	defaultUserAgent        = "rtimewheel/1"
	defaultTimeout          = 10 * time.Second
	defaultMaxResponseBytes = 64 << 10

	// scheduledAtLayout is RFC 3339 with exactly three fractional digits;
	// applied to a UTC time it prints Z.
	scheduledAtLayout = "2006-01-02T15:04:05.000Z07:00"
	reservedPrefix    = "Rtw-"
)

// ErrStatus is wrapped by Result.Err when the receiver answered with a
// status other than 2xx; Result.StatusCode holds the status.
var ErrStatus = errors.New("unexpected status")

// Callback is one attempt at calling a task's URL.
type Callback struct {
	Key         string            // sent as Rtw-Task-Key
	Attempt     int               // sent as Rtw-Attempt, from 1
	ScheduledAt time.Time         // sent as Rtw-Scheduled-At
	Method      string            // GET, POST, PUT, PATCH or DELETE; empty means POST
	URL         string            // absolute http or https URL
	Header      map[string]string // sent as given, except reserved Rtw-* names
	Body        []byte            // JSON sent with Content-Type application/json; nil for none
	Timeout     time.Duration     // bounds this attempt; 0 means the client's default
}

// Result is the outcome of one attempt.
type Result struct {
	Delivered  bool          // the receiver answered 2xx
	StatusCode int           // 0 when no response arrived
	RetryAfter time.Duration // from Retry-After on a 429 or 503, else 0
	Duration   time.Duration // time spent in the attempt, reading the response included
	Err        error         // nil when delivered; describes the failure otherwise
}

// Client performs callbacks. Create it with NewClient; it is safe for
// concurrent use and keeps idle connections for reuse, so share one.
type Client struct {
	http             *http.Client
	secret           []byte
	timeout          time.Duration
	maxResponseBytes int64
	userAgent        string
}

// Option configures a Client.
type Option func(*Client)

// WithSigningSecret makes every callback carry Rtw-Signature, an HMAC of the
// request made with secret (see Sign). The secret is copied. An empty secret
// turns signing off.
func WithSigningSecret(secret []byte) Option {
	return func(c *Client) { c.secret = append([]byte(nil), secret...) }
}

// WithDefaultTimeout sets the timeout of attempts whose Callback.Timeout is
// 0. The default is 10s. A value <= 0 is ignored.
func WithDefaultTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithTransport makes the client send requests through rt instead of its own
// transport (for tests, proxies or custom TLS). Redirects are still not
// followed. A nil rt is ignored.
func WithTransport(rt http.RoundTripper) Option {
	return func(c *Client) {
		if rt != nil {
			c.http.Transport = rt
		}
	}
}

// WithMaxResponseBytes sets how many bytes of a response body are read (and
// discarded) before the body is closed. The default is 64 KiB. Receivers that
// answer with more lose connection reuse, nothing else. A value <= 0 is
// ignored.
func WithMaxResponseBytes(n int64) Option {
	return func(c *Client) {
		if n > 0 {
			c.maxResponseBytes = n
		}
	}
}

// WithUserAgent sets the User-Agent header; the default is "rtimewheel/1".
// An empty ua sends no User-Agent. A User-Agent in Callback.Header wins.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// NewClient returns a callback client configured by opts.
//
// Its transport dials with a 5s timeout, bounds TLS handshakes and the wait
// for response headers, and keeps up to 1024 idle connections per host,
// since many callbacks usually go to one host: as many as a worker's
// default concurrency (1000), so a burst to one host reuses its connections
// instead of dialing and closing hundreds per second. Redirects are not followed: a
// 3xx is a failed attempt with that status. A webhook scheduler must not
// silently send a callback somewhere else than the task says, nor turn a
// POST into a GET on a 301, 302 or 303.
func NewClient(opts ...Option) *Client {
	c := &Client{
		http: &http.Client{
			Transport: newTransport(),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		timeout:          defaultTimeout,
		maxResponseBytes: defaultMaxResponseBytes,
		userAgent:        defaultUserAgent,
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute, // a backstop; each attempt's timeout is the real bound
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
	}
}

// CloseIdleConnections closes the connections kept for reuse. Calls in
// progress are not affected.
func (c *Client) CloseIdleConnections() {
	if c != nil && c.http != nil {
		c.http.CloseIdleConnections()
	}
}

// Call performs cb once and reports the outcome; it never panics and all
// failures are in Result.Err. It blocks until a response arrives and at most
// WithMaxResponseBytes of its body are read, the attempt's timeout
// (cb.Timeout, or the client's default) passes, or ctx is done.
//
// The request carries cb.Header, then Content-Type application/json when
// cb.Body is not nil (unless cb.Header sets one), then the Rtw-* headers,
// which cb.Header cannot override. A Host in cb.Header sets the request's
// host.
//
// A 2xx is delivered. Any other status is a failure wrapping ErrStatus, with
// RetryAfter set from the Retry-After header on a 429 or 503. A timeout or a
// connection error is a failure with StatusCode 0 whose Err wraps the cause
// (context.DeadlineExceeded, *net.OpError, *net.DNSError, ...). Errors name
// the URL without userinfo and query, which may carry credentials.
func (c *Client) Call(ctx context.Context, cb Callback) Result {
	start := time.Now()
	res := c.call(ctx, cb)
	res.Duration = time.Since(start)
	return res
}

func (c *Client) call(ctx context.Context, cb Callback) Result {
	if c == nil || c.http == nil {
		return Result{Err: errors.New("callback: httpclient.Client not created with NewClient")}
	}
	method := cb.Method
	if method == "" {
		method = http.MethodPost
	}
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return Result{Err: fmt.Errorf("callback: unsupported method %q", method)}
	}
	u, err := parseURL(cb.URL)
	if err != nil {
		return Result{Err: err}
	}
	target := redact(u)

	timeout := cb.Timeout
	if timeout <= 0 {
		timeout = c.timeout
	}
	attemptCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := c.newRequest(attemptCtx, method, u, cb)
	if err != nil {
		return Result{Err: fmt.Errorf("callback %s %s: %w", method, target, unwrapURLError(err))}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		err = unwrapURLError(err)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return Result{Err: fmt.Errorf("callback %s %s: timed out after %s: %w", method, target, timeout, err)}
		}
		return Result{Err: fmt.Errorf("callback %s %s: %w", method, target, err)}
	}
	// Read a bounded part of the body so that a small answer leaves the
	// connection reusable; a body that fails to arrive changes nothing, the
	// status decides.
	_, _ = io.CopyN(io.Discard, resp.Body, c.maxResponseBytes)
	resp.Body.Close()

	res := Result{StatusCode: resp.StatusCode}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		res.Delivered = true
		return res
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		res.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	status := strconv.Itoa(resp.StatusCode)
	if text := http.StatusText(resp.StatusCode); text != "" {
		status += " " + text
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		status += " (redirects are not followed)"
	}
	res.Err = fmt.Errorf("callback %s %s: %w %s", method, target, ErrStatus, status)
	return res
}

func (c *Client) newRequest(ctx context.Context, method string, u *url.URL, cb Callback) (*http.Request, error) {
	var body io.Reader
	if cb.Body != nil {
		body = bytes.NewReader(cb.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.userAgent) // an empty value sends none
	if cb.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range cb.Header {
		k = http.CanonicalHeaderKey(k)
		switch {
		case strings.HasPrefix(k, reservedPrefix):
			continue
		case k == "Host":
			req.Host = v
		default:
			req.Header.Set(k, v)
		}
	}
	req.Header.Set(HeaderTaskKey, cb.Key)
	req.Header.Set(HeaderAttempt, strconv.Itoa(cb.Attempt))
	req.Header.Set(HeaderScheduledAt, cb.ScheduledAt.UTC().Format(scheduledAtLayout))
	if len(c.secret) > 0 {
		req.Header.Set(HeaderSignature, Sign(c.secret, time.Now(), cb.Key, cb.Body))
	}
	return req, nil
}

// parseURL accepts absolute http and https URLs with a host. Its errors
// never repeat the URL.
func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("callback: invalid URL: %w", unwrapURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("callback: invalid URL: scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("callback: invalid URL: no host")
	}
	return u, nil
}

// unwrapURLError drops the *url.Error layer net/http and net/url add: it
// repeats the URL, query and user name included.
func unwrapURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// redact returns u for error messages: without userinfo, query and fragment.
func redact(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return v.String()
}

// parseRetryAfter reads a Retry-After value, delta-seconds or an HTTP-date,
// as a duration from now. Negative, past, overflowing or malformed values
// give 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > math.MaxInt64/int64(time.Second) {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return max(t.Sub(now), 0)
}
