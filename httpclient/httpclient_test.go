package httpclient

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// received is what a test server saw of one request.
type received struct {
	method string
	uri    string
	host   string
	header http.Header
	body   []byte
	user   string
	pass   string
	auth   bool
}

// newRecorder starts a server that answers status and reports every request
// it gets on the returned channel (buffered, so handlers never block).
func newRecorder(t *testing.T, status int) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server: reading body: %v", err)
		}
		user, pass, auth := r.BasicAuth()
		got <- received{r.Method, r.RequestURI, r.Host, r.Header.Clone(), body, user, pass, auth}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func receive(t *testing.T, got <-chan received) received {
	t.Helper()
	select {
	case r := <-got:
		return r
	default:
		t.Fatal("server received no request")
		return received{}
	}
}

var scheduledAt = time.Date(2026, 11, 22, 8, 0, 0, 250e6, time.UTC)

func TestCallRequest(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		body     []byte
		wantVerb string
		wantCT   string
	}{
		{name: "post with body", method: "POST", body: []byte(`{"id":42}`), wantVerb: "POST", wantCT: "application/json"},
		{name: "empty method is post", method: "", body: []byte(`[]`), wantVerb: "POST", wantCT: "application/json"},
		{name: "get without body", method: "GET", wantVerb: "GET"},
		{name: "delete without body", method: "DELETE", wantVerb: "DELETE"},
		{name: "put", method: "PUT", body: []byte(`"x"`), wantVerb: "PUT", wantCT: "application/json"},
		{name: "patch with empty body", method: "PATCH", body: []byte{}, wantVerb: "PATCH", wantCT: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := newRecorder(t, http.StatusOK)
			res := NewClient().Call(context.Background(), Callback{
				Key:         "order-42",
				Attempt:     3,
				ScheduledAt: scheduledAt,
				Method:      tt.method,
				URL:         srv.URL + "/hooks/order?x=1&y=a%20b",
				Body:        tt.body,
				Timeout:     5 * time.Second,
			})
			if !res.Delivered || res.Err != nil || res.StatusCode != 200 {
				t.Fatalf("Call = %+v, want delivered 200", res)
			}
			if res.Duration <= 0 {
				t.Errorf("Duration = %v, want > 0", res.Duration)
			}
			r := receive(t, got)
			if r.method != tt.wantVerb {
				t.Errorf("method = %q, want %q", r.method, tt.wantVerb)
			}
			if r.uri != "/hooks/order?x=1&y=a%20b" {
				t.Errorf("request URI = %q", r.uri)
			}
			if string(r.body) != string(tt.body) {
				t.Errorf("body = %q, want %q", r.body, tt.body)
			}
			want := map[string]string{
				"Content-Type":     tt.wantCT,
				"User-Agent":       "rtimewheel/1",
				"Rtw-Task-Key":     "order-42",
				"Rtw-Attempt":      "3",
				"Rtw-Scheduled-At": "2026-11-22T08:00:00.250Z",
				"Rtw-Signature":    "",
			}
			for k, v := range want {
				if got := r.header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
				if v != "" && len(r.header.Values(k)) != 1 {
					t.Errorf("header %s sent %d times", k, len(r.header.Values(k)))
				}
			}
			if _, ok := r.header["Content-Type"]; ok != (tt.wantCT != "") {
				t.Errorf("Content-Type present = %v", ok)
			}
		})
	}
}

func TestCallScheduledAt(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{scheduledAt, "2026-11-22T08:00:00.250Z"},
		{time.Date(2026, 11, 22, 9, 0, 0, 250e6, time.FixedZone("CET", 3600)), "2026-11-22T08:00:00.250Z"},
		{time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), "2026-11-22T08:00:00.000Z"},
		{time.Date(2026, 11, 22, 8, 0, 0, 7_999_999, time.UTC), "2026-11-22T08:00:00.007Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 600e6, time.Local), time.Date(2026, 1, 2, 3, 4, 5, 600e6, time.Local).UTC().Format("2006-01-02T15:04:05.000") + "Z"},
	}
	srv, got := newRecorder(t, http.StatusOK)
	c := NewClient()
	for _, tt := range tests {
		res := c.Call(context.Background(), Callback{Key: "k", Attempt: 1, ScheduledAt: tt.at, URL: srv.URL})
		if !res.Delivered {
			t.Fatalf("Call = %+v", res)
		}
		if h := receive(t, got).header.Get("Rtw-Scheduled-At"); h != tt.want {
			t.Errorf("ScheduledAt %v: Rtw-Scheduled-At = %q, want %q", tt.at, h, tt.want)
		}
	}
}

func TestCallUserHeaders(t *testing.T) {
	srv, got := newRecorder(t, http.StatusOK)
	res := NewClient().Call(context.Background(), Callback{
		Key:         "order-42",
		Attempt:     1,
		ScheduledAt: scheduledAt,
		Method:      "POST",
		URL:         srv.URL,
		Header: map[string]string{
			"X-Custom":         "yes",
			"authorization":    "Bearer abc",
			"rtw-task-key":     "evil",
			"Rtw-Attempt":      "99",
			"RTW-SCHEDULED-AT": "never",
			"Rtw-Signature":    "t=1,v1=00",
			"Rtw-Other":        "reserved",
			"Host":             "example.test",
		},
	})
	if !res.Delivered {
		t.Fatalf("Call = %+v", res)
	}
	r := receive(t, got)
	want := map[string]string{
		"X-Custom":         "yes",
		"Authorization":    "Bearer abc",
		"Rtw-Task-Key":     "order-42",
		"Rtw-Attempt":      "1",
		"Rtw-Scheduled-At": "2026-11-22T08:00:00.250Z",
		"Rtw-Signature":    "",
		"Rtw-Other":        "",
		"Content-Type":     "",
	}
	for k, v := range want {
		if vs := r.header.Values(k); strings.Join(vs, ",") != v {
			t.Errorf("header %s = %q, want %q", k, vs, v)
		}
	}
	if r.host != "example.test" {
		t.Errorf("Host = %q, want example.test", r.host)
	}
}

func TestCallContentTypeFromHeader(t *testing.T) {
	srv, got := newRecorder(t, http.StatusOK)
	c := NewClient()
	for _, body := range [][]byte{nil, []byte(`{}`)} {
		c.Call(context.Background(), Callback{Key: "k", URL: srv.URL, Body: body,
			Header: map[string]string{"content-type": "application/vnd.example+json"}})
		if ct := receive(t, got).header.Get("Content-Type"); ct != "application/vnd.example+json" {
			t.Errorf("body %q: Content-Type = %q", body, ct)
		}
	}
}

func TestCallUserAgent(t *testing.T) {
	srv, got := newRecorder(t, http.StatusOK)
	tests := []struct {
		opts   []Option
		header map[string]string
		want   []string
	}{
		{nil, nil, []string{"rtimewheel/1"}},
		{[]Option{WithUserAgent("acme-scheduler/2")}, nil, []string{"acme-scheduler/2"}},
		{[]Option{WithUserAgent("")}, nil, nil},
		{nil, map[string]string{"User-Agent": "mine"}, []string{"mine"}},
	}
	for _, tt := range tests {
		NewClient(tt.opts...).Call(context.Background(), Callback{Key: "k", URL: srv.URL, Header: tt.header})
		if ua := receive(t, got).header.Values("User-Agent"); strings.Join(ua, ",") != strings.Join(tt.want, ",") {
			t.Errorf("User-Agent = %q, want %q", ua, tt.want)
		}
	}
}

func TestCallSignature(t *testing.T) {
	srv, got := newRecorder(t, http.StatusOK)
	body := []byte(`{"id":42}`)
	cb := Callback{Key: "order-42", Attempt: 1, ScheduledAt: scheduledAt, URL: srv.URL, Body: body}

	if res := NewClient().Call(context.Background(), cb); !res.Delivered {
		t.Fatalf("Call = %+v", res)
	}
	if r := receive(t, got); r.header.Values("Rtw-Signature") != nil {
		t.Errorf("Rtw-Signature sent without a secret: %q", r.header.Values("Rtw-Signature"))
	}
	if res := NewClient(WithSigningSecret(nil)).Call(context.Background(), cb); !res.Delivered {
		t.Fatalf("Call = %+v", res)
	}
	if r := receive(t, got); r.header.Values("Rtw-Signature") != nil {
		t.Errorf("Rtw-Signature sent with an empty secret")
	}

	secret := []byte("whsec_test")
	for _, b := range [][]byte{body, nil} {
		cb.Body = b
		if res := NewClient(WithSigningSecret(secret)).Call(context.Background(), cb); !res.Delivered {
			t.Fatalf("Call = %+v", res)
		}
		r := receive(t, got)
		header := r.header.Get("Rtw-Signature")
		if err := VerifySignature(secret, header, r.header.Get("Rtw-Task-Key"), r.body, time.Now()); err != nil {
			t.Errorf("VerifySignature(%q) = %v", header, err)
		}
		// Recompute the HMAC without the package's code.
		ts, sig, ok := strings.Cut(strings.TrimPrefix(header, "t="), ",v1=")
		if !ok {
			t.Fatalf("Rtw-Signature = %q, want t=<unix>,v1=<hex>", header)
		}
		unix, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(unix, 0)).Abs() > time.Minute {
			t.Errorf("t = %q, want the current unix time", ts)
		}
		h := hmac.New(sha256.New, secret)
		io.WriteString(h, ts+".order-42."+string(b))
		if want := hex.EncodeToString(h.Sum(nil)); sig != want {
			t.Errorf("v1 = %s, want %s", sig, want)
		}
	}
}

func TestCallDelivered(t *testing.T) {
	for _, status := range []int{200, 201, 202, 204, 299} {
		srv, _ := newRecorder(t, status)
		res := NewClient().Call(context.Background(), Callback{Key: "k", URL: srv.URL})
		if !res.Delivered || res.StatusCode != status || res.Err != nil || res.RetryAfter != 0 {
			t.Errorf("status %d: Call = %+v, want delivered", status, res)
		}
	}
}

func TestCallStatusFailed(t *testing.T) {
	for _, status := range []int{400, 404, 409, 500, 502, 504, 599} {
		srv, _ := newRecorder(t, status)
		res := NewClient().Call(context.Background(), Callback{Key: "k", URL: srv.URL + "/hook"})
		if res.Delivered || res.StatusCode != status || !errors.Is(res.Err, ErrStatus) {
			t.Errorf("status %d: Call = %+v, want failed with ErrStatus", status, res)
			continue
		}
		if want := "callback POST " + srv.URL + "/hook: unexpected status " + strconv.Itoa(status); !strings.HasPrefix(res.Err.Error(), want) {
			t.Errorf("Err = %q, want prefix %q", res.Err, want)
		}
	}
}

func TestCallRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		min, max   time.Duration
	}{
		{"429 seconds", 429, "120", 120 * time.Second, 120 * time.Second},
		{"503 seconds", 503, "7", 7 * time.Second, 7 * time.Second},
		{"503 http-date", 503, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 58 * time.Minute, time.Hour},
		{"429 http-date past", 429, time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), 0, 0},
		{"429 negative", 429, "-5", 0, 0},
		{"429 garbage", 429, "soon", 0, 0},
		{"503 none", 503, "", 0, 0},
		{"500 ignored", 500, "30", 0, 0},
		{"302 ignored", 302, "30", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			res := NewClient().Call(context.Background(), Callback{Key: "k", URL: srv.URL})
			if res.Delivered || res.StatusCode != tt.status || !errors.Is(res.Err, ErrStatus) {
				t.Fatalf("Call = %+v, want failed %d", res, tt.status)
			}
			if res.RetryAfter < tt.min || res.RetryAfter > tt.max {
				t.Errorf("RetryAfter = %v, want in [%v, %v]", res.RetryAfter, tt.min, tt.max)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"30", 30 * time.Second},
		{" 30 ", 30 * time.Second},
		{"+30", 0},
		{"-1", 0},
		{"1.5", 0},
		{"99999999999999999999", 0},
		{"9223372037", 0}, // overflows a Duration
		{"Sun, 22 Nov 2026 08:01:30 GMT", 90 * time.Second},
		{"Sunday, 22-Nov-26 08:01:30 GMT", 90 * time.Second},
		{"Sun Nov 22 08:01:30 2026", 90 * time.Second},
		{"Sun, 22 Nov 2026 07:59:00 GMT", 0},
		{"tomorrow", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCallRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer target.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/elsewhere", status)
		}))
		res := NewClient().Call(context.Background(), Callback{Key: "k", Method: "POST", URL: redirect.URL, Body: []byte(`{}`)})
		redirect.Close()
		if res.Delivered || res.StatusCode != status || !errors.Is(res.Err, ErrStatus) {
			t.Errorf("status %d: Call = %+v, want failed with the redirect's status", status, res)
		}
		if res.Err != nil && strings.Contains(res.Err.Error(), "elsewhere") {
			t.Errorf("Err names the redirect target: %v", res.Err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("redirect target hit %d times, want 0", n)
	}
}

// newBlockingServer starts a server whose handler waits until its request is
// cancelled (or the test ends).
func newBlockingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}

func TestCallTimeout(t *testing.T) {
	srv := newBlockingServer(t)
	tests := []struct {
		name    string
		opts    []Option
		timeout time.Duration
	}{
		{"callback timeout", nil, 50 * time.Millisecond},
		{"default timeout", []Option{WithDefaultTimeout(50 * time.Millisecond)}, 0},
		{"callback timeout wins", []Option{WithDefaultTimeout(time.Hour)}, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res := NewClient(tt.opts...).Call(context.Background(), Callback{Key: "k", URL: srv.URL, Timeout: tt.timeout})
			elapsed := time.Since(start)
			if res.Delivered || res.StatusCode != 0 || !errors.Is(res.Err, context.DeadlineExceeded) {
				t.Fatalf("Call = %+v, want failed with context.DeadlineExceeded", res)
			}
			if !strings.Contains(res.Err.Error(), "timed out after 50ms") {
				t.Errorf("Err = %q, want it to name the timeout", res.Err)
			}
			if elapsed > 5*time.Second || res.Duration < 50*time.Millisecond || res.Duration > elapsed {
				t.Errorf("Call took %v (Duration %v), want about 50ms", elapsed, res.Duration)
			}
		})
	}
}

func TestCallContextCanceled(t *testing.T) {
	srv := newBlockingServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := NewClient().Call(ctx, Callback{Key: "k", URL: srv.URL})
	if res.Delivered || res.StatusCode != 0 || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("Call = %+v, want failed with context.Canceled", res)
	}
}

func TestCallConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	res := NewClient().Call(context.Background(), Callback{Key: "k", URL: "http://" + addr + "/hook"})
	var opErr *net.OpError
	if res.Delivered || res.StatusCode != 0 || !errors.As(res.Err, &opErr) {
		t.Fatalf("Call = %+v, want failed with a *net.OpError", res)
	}
	if !strings.HasPrefix(res.Err.Error(), "callback POST http://"+addr+"/hook: ") {
		t.Errorf("Err = %q", res.Err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCallTransportError(t *testing.T) {
	dnsErr := &net.DNSError{Err: "no such host", Name: "hooks.invalid", IsNotFound: true}
	c := NewClient(WithTransport(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: dnsErr}
	})))
	res := c.Call(context.Background(), Callback{Key: "k", URL: "https://hooks.invalid/x"})
	var got *net.DNSError
	if res.Delivered || res.StatusCode != 0 || !errors.As(res.Err, &got) || !got.IsNotFound {
		t.Fatalf("Call = %+v, want failed with the *net.DNSError", res)
	}
}

func TestCallInvalidInput(t *testing.T) {
	srv, got := newRecorder(t, http.StatusOK)
	tests := []struct {
		name string
		cb   Callback
	}{
		{"lowercase method", Callback{Method: "post", URL: srv.URL}},
		{"unsupported method", Callback{Method: "CONNECT", URL: srv.URL}},
		{"not a token", Callback{Method: "PO ST", URL: srv.URL}},
		{"unparsable URL", Callback{URL: "http://user:s3cret@exa mple.com/%zz"}},
		{"bad port", Callback{URL: "http://user:s3cret@127.0.0.1:port/"}},
		{"control character", Callback{URL: "http://user:s3cret@host/\n"}},
		{"relative URL", Callback{URL: "/hook"}},
		{"empty URL", Callback{URL: ""}},
		{"ftp URL", Callback{URL: "ftp://user:s3cret@host/file"}},
		{"no host", Callback{URL: "http:///path"}},
		{"bad header name", Callback{URL: srv.URL, Header: map[string]string{"Bad Name": "x"}}},
		{"bad header value", Callback{URL: srv.URL, Header: map[string]string{"X-A": "s3cret\r\nX-B: y"}}},
		{"bad key", Callback{URL: srv.URL, Key: "a\nb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := NewClient().Call(context.Background(), tt.cb)
			if res.Delivered || res.StatusCode != 0 || res.Err == nil {
				t.Fatalf("Call = %+v, want an error", res)
			}
			if strings.Contains(res.Err.Error(), "s3cret") {
				t.Errorf("Err = %q leaks the secret", res.Err)
			}
		})
	}
	if len(got) != 0 {
		t.Errorf("server received %d requests, want 0", len(got))
	}

	var zero Client
	if res := zero.Call(context.Background(), Callback{URL: srv.URL}); res.Err == nil {
		t.Errorf("zero Client: Call = %+v, want an error", res)
	}
}

func TestCallURLCredentials(t *testing.T) {
	srv, got := newRecorder(t, http.StatusInternalServerError)
	u := strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1) + "/hook?token=t0ken#frag"
	res := NewClient().Call(context.Background(), Callback{Key: "k", URL: u})
	if res.StatusCode != 500 {
		t.Fatalf("Call = %+v, want 500", res)
	}
	r := receive(t, got)
	if !r.auth || r.user != "alice" || r.pass != "s3cret" || r.uri != "/hook?token=t0ken" {
		t.Errorf("server got basic auth %v %q %q, URI %q", r.auth, r.user, r.pass, r.uri)
	}
	msg := res.Err.Error()
	for _, secret := range []string{"alice", "s3cret", "t0ken", "frag"} {
		if strings.Contains(msg, secret) {
			t.Errorf("Err = %q contains %q", msg, secret)
		}
	}
	if !strings.Contains(msg, srv.URL+"/hook") {
		t.Errorf("Err = %q, want it to name %s/hook", msg, srv.URL)
	}
}

// countingBody counts the bytes read from a response body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func TestCallLargeResponseBounded(t *testing.T) {
	const size = 10 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 32<<10)
		for written := 0; written < size; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client closed the connection
			}
		}
	}))
	defer srv.Close()

	for _, limit := range []int64{0, 1000} {
		var read atomic.Int64
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		opts := []Option{WithTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := base.RoundTrip(r)
			if err == nil {
				resp.Body = countingBody{resp.Body, &read}
			}
			return resp, err
		}))}
		want := int64(defaultMaxResponseBytes)
		if limit > 0 {
			opts = append(opts, WithMaxResponseBytes(limit))
			want = limit
		}
		res := NewClient(opts...).Call(context.Background(), Callback{Key: "k", URL: srv.URL, Timeout: 10 * time.Second})
		if !res.Delivered {
			t.Fatalf("Call = %+v, want delivered", res)
		}
		if n := read.Load(); n != want {
			t.Errorf("limit %d: read %d bytes of the body, want %d", limit, n, want)
		}
	}
}

func TestCallReusesConnection(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c := NewClient()
	defer c.CloseIdleConnections()
	for i := range 20 {
		res := c.Call(context.Background(), Callback{Key: "k", Attempt: i + 1, URL: srv.URL, Body: []byte(`{}`)})
		if !res.Delivered {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 calls used %d connections, want 1", n)
	}
}

func TestNewClientTransport(t *testing.T) {
	tr, ok := NewClient().http.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport is %T", NewClient().http.Transport)
	}
	if tr.MaxIdleConnsPerHost < 100 || tr.TLSHandshakeTimeout <= 0 || tr.ResponseHeaderTimeout <= 0 || tr.DialContext == nil {
		t.Errorf("transport not tuned: %+v", tr)
	}
}
