package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/httpclient"
)

// validTask returns a valid task body to vary.
func validTask(key string) map[string]any {
	return map[string]any{
		"key":          key,
		"callback_url": "http://127.0.0.1:1/callback",
		"delay_ms":     60_000,
	}
}

func with(task map[string]any, changes map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range task {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// drop marks a field to delete in with.
var drop any = nil

func TestCreateTaskRejectsBadInput(t *testing.T) {
	e := newAPIEnv(t, envConfig{maxBodyBytes: 4096})
	base := validTask("k")
	cases := []struct {
		name    string
		body    any
		field   string // what the message must name
		status  int
		code    string
		compact bool // the body is sent as given (a string)
	}{
		{name: "missing key", body: with(base, map[string]any{"key": drop}), field: "key"},
		{name: "empty key", body: with(base, map[string]any{"key": ""}), field: "key"},
		{name: "key of 257 bytes", body: with(base, map[string]any{"key": strings.Repeat("k", 257)}), field: "key"},
		{name: "control character in key", body: with(base, map[string]any{"key": "a\u0001b"}), field: "key"},
		{name: "missing callback_url", body: with(base, map[string]any{"callback_url": drop}), field: "callback_url"},
		{name: "relative callback_url", body: with(base, map[string]any{"callback_url": "/callback"}), field: "callback_url"},
		{name: "ftp callback_url", body: with(base, map[string]any{"callback_url": "ftp://example.com/x"}), field: "callback_url"},
		{name: "callback_url without host", body: with(base, map[string]any{"callback_url": "http:///x"}), field: "callback_url"},
		{name: "bad method", body: with(base, map[string]any{"method": "FETCH"}), field: "method"},
		{name: "bad header name", body: with(base, map[string]any{"header": map[string]string{"bad name": "v"}}), field: "header"},
		{name: "header not strings", body: with(base, map[string]any{"header": map[string]int{"X-A": 1}}), field: "header"},
		{name: "req with GET", body: with(base, map[string]any{"method": "GET", "req": map[string]int{"a": 1}}), field: "req"},
		{name: "execute_at and delay_ms", body: with(base, map[string]any{"execute_at": "2030-01-01T00:00:00Z"}), field: "delay_ms"},
		{name: "neither execute_at nor delay_ms", body: with(base, map[string]any{"delay_ms": drop}), field: "execute_at"},
		{name: "negative delay_ms", body: with(base, map[string]any{"delay_ms": -1}), field: "delay_ms"},
		{name: "fractional delay_ms", body: with(base, map[string]any{"delay_ms": 1.5}), field: "delay_ms"},
		{name: "execute_at not RFC 3339", body: with(base, map[string]any{"delay_ms": drop, "execute_at": "2030-01-01 08:00:00"}), field: "execute_at"},
		{name: "execute_at without zone", body: with(base, map[string]any{"delay_ms": drop, "execute_at": "2030-01-01T08:00:00"}), field: "execute_at"},
		{name: "execute_at a number", body: with(base, map[string]any{"delay_ms": drop, "execute_at": 1700000000}), field: "execute_at"},
		{name: "max_attempts 0", body: with(base, map[string]any{"max_attempts": 0}), field: "max_attempts"},
		{name: "max_attempts 101", body: with(base, map[string]any{"max_attempts": 101}), field: "max_attempts"},
		{name: "max_attempts a string", body: with(base, map[string]any{"max_attempts": "5"}), field: "max_attempts"},
		{name: "timeout_ms 0", body: with(base, map[string]any{"timeout_ms": 0}), field: "timeout_ms"},
		{name: "timeout_ms 30001", body: with(base, map[string]any{"timeout_ms": 30001}), field: "timeout_ms"},
		{name: "unknown field", body: with(base, map[string]any{"colour": "red"}), field: `"colour"`},
		{name: "malformed JSON", body: `{"key": "k", "callback_url": `, field: "JSON"},
		{name: "not an object", body: `["k"]`, field: "JSON"},
		{name: "two JSON values", body: `{"key":"k","callback_url":"http://h/","delay_ms":0} {}`, field: "JSON"},
		{name: "empty body", body: ``, field: "empty"},
		{name: "body over --max-body-bytes", body: with(base, map[string]any{"req": strings.Repeat("x", 5000)}),
			status: http.StatusRequestEntityTooLarge, code: "payload_too_large", field: "4096"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.status == 0 {
				c.status, c.code = http.StatusBadRequest, "invalid_argument"
			}
			e.do("POST", "/v1/tasks", c.body).wantError(t, c.status, c.code, c.field)
		})
	}
	t.Run("batch of 1001", func(t *testing.T) {
		big := newAPIEnv(t, envConfig{maxBodyBytes: 1 << 20})
		tasks := make([]map[string]any, 1001)
		for i := range tasks {
			tasks[i] = validTask(fmt.Sprintf("k%d", i))
		}
		big.do("POST", "/v1/tasks:batch", map[string]any{"tasks": tasks}).wantError(t, 400, "invalid_argument", "tasks", "1000")
		if keys := big.storedKeys(); len(keys) != 0 {
			t.Errorf("a rejected batch stored keys %v", keys)
		}
	})
	t.Run("batch without tasks", func(t *testing.T) {
		e.do("POST", "/v1/tasks:batch", `{}`).wantError(t, 400, "invalid_argument", "tasks")
	})
	t.Run("batch over --max-body-bytes", func(t *testing.T) {
		tasks := make([]map[string]any, 100)
		for i := range tasks {
			tasks[i] = validTask(fmt.Sprintf("k%d", i))
		}
		e.do("POST", "/v1/tasks:batch", map[string]any{"tasks": tasks}).wantError(t, 413, "payload_too_large")
	})
	if keys := e.storedKeys(); len(keys) != 0 {
		t.Errorf("rejected tasks stored keys in Redis: %v", keys)
	}
}

// taskJSON is a Task answer, decoded for checks.
type taskJSON struct {
	Key           string            `json:"key"`
	CallbackURL   string            `json:"callback_url"`
	Method        string            `json:"method"`
	Header        map[string]string `json:"header"`
	Req           json.RawMessage   `json:"req"`
	ExecuteAt     string            `json:"execute_at"`
	MaxAttempts   int               `json:"max_attempts"`
	TimeoutMs     int               `json:"timeout_ms"`
	State         string            `json:"state"`
	Attempts      *int              `json:"attempts"`
	LastError     string            `json:"last_error"`
	NextAttemptAt string            `json:"next_attempt_at"`
	DiedAt        string            `json:"died_at"`
}

func TestCreateGetReplaceDeleteTask(t *testing.T) {
	e := newAPIEnv(t, envConfig{})
	key := "orders/42 ?&%é" // escaped in paths
	path := "/v1/tasks/" + url.PathEscape(key)
	body := map[string]any{
		"key":          key,
		"callback_url": "https://example.com/hook?x=1",
		"method":       "PUT",
		"header":       map[string]string{"X-Tenant": "acme"},
		"req":          json.RawMessage(`{"id": 42, "tags": ["a", "<b>"]}`),
		"execute_at":   "2030-01-02T10:00:00.250+02:00",
		"max_attempts": 7,
		"timeout_ms":   2500,
	}
	created := e.do("POST", "/v1/tasks", body)
	if created.Status != http.StatusCreated {
		t.Fatalf("POST: %d %s", created.Status, created.Body)
	}
	var c taskJSON
	created.decode(t, &c)
	want := taskJSON{Key: key, CallbackURL: "https://example.com/hook?x=1", Method: "PUT",
		Header: map[string]string{"X-Tenant": "acme"}, Req: json.RawMessage(`{"id":42,"tags":["a","<b>"]}`),
		ExecuteAt: "2030-01-02T08:00:00.250Z", MaxAttempts: 7, TimeoutMs: 2500, State: "scheduled"}
	checkTask(t, "POST answer", c, want, 0)

	got := e.do("GET", path, nil)
	if got.Status != http.StatusOK {
		t.Fatalf("GET: %d %s", got.Status, got.Body)
	}
	var g taskJSON
	got.decode(t, &g)
	checkTask(t, "GET answer", g, want, 0)

	// A task read with GET can be posted again as it is; the same key
	// replaces the earlier task.
	var again map[string]any
	got.decode(t, &again)
	again["execute_at"] = "2031-05-06T07:08:09.001Z"
	again["method"] = "POST"
	if a := e.do("POST", "/v1/tasks", again); a.Status != http.StatusCreated {
		t.Fatalf("POST again: %d %s", a.Status, a.Body)
	}
	e.do("GET", path, nil).decode(t, &g)
	want.ExecuteAt, want.Method = "2031-05-06T07:08:09.001Z", "POST"
	checkTask(t, "GET after replacing", g, want, 0)

	if d := e.do("DELETE", path, nil); d.Status != http.StatusNoContent || len(d.Body) != 0 {
		t.Fatalf("DELETE: %d %q, want 204 without body", d.Status, d.Body)
	}
	e.do("GET", path, nil).wantError(t, 404, "not_found", key)
	e.do("DELETE", path, nil).wantError(t, 404, "not_found", key)
	e.do("GET", "/v1/tasks/never-added", nil).wantError(t, 404, "not_found", "never-added")
}

func checkTask(t *testing.T, what string, got, want taskJSON, attempts int) {
	t.Helper()
	if got.Attempts == nil || *got.Attempts != attempts {
		t.Errorf("%s: attempts %v, want %d", what, got.Attempts, attempts)
	}
	got.Attempts = nil
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("%s:\n got %s\nwant %s", what, gotJSON, wantJSON)
	}
}

func TestCreateTaskTimes(t *testing.T) {
	e := newAPIEnv(t, envConfig{})
	post := func(fields map[string]any) taskJSON {
		t.Helper()
		a := e.do("POST", "/v1/tasks", with(validTask("k"), fields))
		if a.Status != http.StatusCreated {
			t.Fatalf("POST %v: %d %s", fields, a.Status, a.Body)
		}
		var task taskJSON
		a.decode(t, &task)
		return task
	}
	if got := post(map[string]any{"delay_ms": drop, "execute_at": "2030-06-01T12:00:00Z"}).ExecuteAt; got != "2030-06-01T12:00:00.000Z" {
		t.Errorf("whole seconds: execute_at %s", got)
	}
	if got := post(map[string]any{"delay_ms": drop, "execute_at": "2030-06-01T12:00:00.2501Z"}).ExecuteAt; got != "2030-06-01T12:00:00.251Z" {
		t.Errorf("sub-millisecond time is not rounded up (never early): execute_at %s", got)
	}
	before := time.Now()
	past := post(map[string]any{"delay_ms": drop, "execute_at": "2001-01-01T00:00:00Z"})
	if at := mustParse(t, past.ExecuteAt); at.Before(before.Truncate(time.Millisecond)) || at.After(time.Now().Add(time.Millisecond)) {
		t.Errorf("a past execute_at is not stored as now: %s (now %s)", past.ExecuteAt, before.UTC().Format(timeLayout))
	}
	before = time.Now()
	delayed := post(map[string]any{"delay_ms": 5000})
	if at := mustParse(t, delayed.ExecuteAt); at.Before(before.Add(5*time.Second).Truncate(time.Millisecond)) || at.After(time.Now().Add(5*time.Second+time.Millisecond)) {
		t.Errorf("delay_ms 5000: execute_at %s, received at %s", delayed.ExecuteAt, before.UTC().Format(timeLayout))
	}
	if !strings.HasSuffix(delayed.ExecuteAt, "Z") || len(delayed.ExecuteAt) != len("2026-11-22T08:00:00.250Z") {
		t.Errorf("execute_at %q is not UTC with milliseconds", delayed.ExecuteAt)
	}
}

func mustParse(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return at
}

func TestBatch(t *testing.T) {
	e := newAPIEnv(t, envConfig{})
	body := `{"tasks": [
		{"key": "a", "callback_url": "http://h/a", "delay_ms": 60000},
		{"key": "b", "callback_url": "ftp://h/b", "delay_ms": 60000},
		{"key": "c", "callback_url": "http://h/c", "delay_ms": 60000, "max_attempts": 0},
		{"key": "d", "callback_url": "http://h/d", "delay_ms": 60000, "extra": 1},
		null,
		{"key": "e", "callback_url": "http://h/e", "execute_at": "2030-01-01T00:00:00.5Z"}
	]}`
	a := e.do("POST", "/v1/tasks:batch", body)
	if a.Status != http.StatusOK {
		t.Fatalf("batch: %d %s", a.Status, a.Body)
	}
	var got struct {
		Results []struct {
			Key   string       `json:"key"`
			Error *errorObject `json:"error"`
		} `json:"results"`
	}
	a.decode(t, &got)
	if !strings.Contains(string(a.Body), `"error":null`) {
		t.Errorf("a stored task's error is not null: %s", a.Body)
	}
	wantKeys := []string{"a", "b", "c", "d", "", "e"}
	wantField := []string{"", "callback_url", "max_attempts", `"extra"`, "tasks", ""}
	if len(got.Results) != len(wantKeys) {
		t.Fatalf("%d results, want %d: %s", len(got.Results), len(wantKeys), a.Body)
	}
	for i, r := range got.Results {
		if r.Key != wantKeys[i] {
			t.Errorf("result %d: key %q, want %q", i, r.Key, wantKeys[i])
		}
		switch {
		case wantField[i] == "" && r.Error != nil:
			t.Errorf("result %d: error %+v, want null", i, r.Error)
		case wantField[i] != "" && (r.Error == nil || r.Error.Code != "invalid_argument" || !strings.Contains(r.Error.Message, wantField[i])):
			t.Errorf("result %d: error %+v, want invalid_argument naming %s", i, r.Error, wantField[i])
		}
	}
	for _, key := range []string{"a", "e"} {
		if g := e.do("GET", "/v1/tasks/"+key, nil); g.Status != 200 {
			t.Errorf("GET %s after the batch: %d %s", key, g.Status, g.Body)
		}
	}
	for _, key := range []string{"b", "c", "d"} {
		e.do("GET", "/v1/tasks/"+key, nil).wantError(t, 404, "not_found")
	}
	if a := e.do("POST", "/v1/tasks:batch", `{"tasks": []}`); a.Status != 200 || strings.TrimSpace(string(a.Body)) != `{"results":[]}` {
		t.Errorf("empty batch: %d %s", a.Status, a.Body)
	}
}

func TestAuthentication(t *testing.T) {
	e := newAPIEnv(t, envConfig{token: "s3cret-token"})
	task := validTask("k")
	for name, header := range map[string]string{
		"no token":        "",
		"wrong token":     "Bearer wrong",
		"token prefix":    "Bearer s3cret",
		"basic scheme":    "Basic s3cret-token",
		"token as scheme": "s3cret-token",
	} {
		t.Run(name, func(t *testing.T) {
			a := doWithAuthorization(t, "POST", e.server.URL+"/v1/tasks", header, task)
			a.wantError(t, http.StatusUnauthorized, "unauthenticated", "Bearer")
			if a.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("no WWW-Authenticate header")
			}
		})
	}
	for _, path := range []string{"/v1/tasks/k", "/v1/dead-letters"} {
		doWithAuthorization(t, "GET", e.server.URL+path, "", nil).wantError(t, 401, "unauthenticated")
	}
	if keys := e.storedKeys(); len(keys) != 0 {
		t.Errorf("unauthenticated requests stored %v", keys)
	}
	if a := doWithAuthorization(t, "POST", e.server.URL+"/v1/tasks", "Bearer s3cret-token", task); a.Status != http.StatusCreated {
		t.Errorf("right token: %d %s", a.Status, a.Body)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if a := doWithAuthorization(t, "GET", e.server.URL+path, "", nil); a.Status != http.StatusOK {
			t.Errorf("GET %s without token: %d, want 200", path, a.Status)
		}
	}
}

func doWithAuthorization(t *testing.T, method, url, authorization string, body any) answer {
	t.Helper()
	var encoded string
	if body != nil {
		b, _ := json.Marshal(body)
		encoded = string(b)
	}
	req, err := http.NewRequest(method, url, strings.NewReader(encoded))
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

func TestDeadLetters(t *testing.T) {
	e := newAPIEnv(t, envConfig{worker: true})
	rcv := newReceiver(t)
	rcv.setStatus(http.StatusInternalServerError)
	post := func(key string) {
		t.Helper()
		a := e.do("POST", "/v1/tasks", map[string]any{
			"key": key, "callback_url": rcv.server.URL + "/hook", "delay_ms": 0, "max_attempts": 1, "req": map[string]int{"n": 1},
		})
		if a.Status != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", key, a.Status, a.Body)
		}
	}
	waitDead := func(key string) taskJSON {
		t.Helper()
		var task taskJSON
		eventually(t, 10*time.Second, key+" to become a dead letter", func() bool {
			a := e.do("GET", "/v1/tasks/"+key, nil)
			task = taskJSON{}
			if a.Status == 200 {
				a.decode(t, &task)
			}
			return task.State == "dead"
		})
		return task
	}

	post("doomed")
	dead := waitDead("doomed")
	if dead.Attempts == nil || *dead.Attempts != 1 || dead.LastError == "" || dead.DiedAt == "" {
		t.Errorf("dead letter: attempts %v, last_error %q, died_at %q", dead.Attempts, dead.LastError, dead.DiedAt)
	}
	if !strings.Contains(dead.LastError, "500") {
		t.Errorf("last_error %q does not mention the status 500", dead.LastError)
	}

	var list struct {
		Tasks []taskJSON `json:"tasks"`
	}
	e.do("GET", "/v1/dead-letters?limit=10", nil).decode(t, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].Key != "doomed" || list.Tasks[0].LastError == "" || list.Tasks[0].State != "dead" {
		t.Fatalf("dead letters: %+v", list.Tasks)
	}
	for _, bad := range []string{"0", "-1", "1001", "ten"} {
		e.do("GET", "/v1/dead-letters?limit="+bad, nil).wantError(t, 400, "invalid_argument", "limit")
	}

	// Retry: the receiver now accepts; the task fires again and is done.
	rcv.setStatus(http.StatusNoContent)
	a := e.do("POST", "/v1/dead-letters/doomed/retry", nil)
	if a.Status != http.StatusAccepted {
		t.Fatalf("retry: %d %s", a.Status, a.Body)
	}
	eventually(t, 10*time.Second, "the retried dead letter to be delivered", func() bool {
		return rcv.count() == 2 && e.do("GET", "/v1/tasks/doomed", nil).Status == http.StatusNotFound
	})
	calls := rcv.snapshot()
	if calls[1].Header.Get("Rtw-Attempt") != "1" {
		t.Errorf("a retried dead letter starts again at attempt %q, want 1", calls[1].Header.Get("Rtw-Attempt"))
	}
	e.do("POST", "/v1/dead-letters/doomed/retry", nil).wantError(t, 404, "not_found", "doomed")

	// Delete.
	rcv.setStatus(http.StatusInternalServerError)
	post("doomed-2")
	waitDead("doomed-2")
	if d := e.do("DELETE", "/v1/dead-letters/doomed-2", nil); d.Status != http.StatusNoContent {
		t.Fatalf("DELETE dead letter: %d %s", d.Status, d.Body)
	}
	e.do("GET", "/v1/dead-letters", nil).decode(t, &list)
	if len(list.Tasks) != 0 {
		t.Errorf("dead letters after delete: %+v", list.Tasks)
	}
	e.do("GET", "/v1/tasks/doomed-2", nil).wantError(t, 404, "not_found")
	e.do("DELETE", "/v1/dead-letters/doomed-2", nil).wantError(t, 404, "not_found")
}

func TestRedisOutage(t *testing.T) {
	e := newAPIEnv(t, envConfig{})
	if a := e.do("POST", "/v1/tasks", validTask("before")); a.Status != http.StatusCreated {
		t.Fatalf("POST before the outage: %d %s", a.Status, a.Body)
	}
	e.redis.Close()

	e.do("POST", "/v1/tasks", validTask("during")).wantError(t, 503, "unavailable")
	e.do("POST", "/v1/tasks:batch", map[string]any{"tasks": []any{validTask("b1"), validTask("b2")}}).wantError(t, 503, "unavailable")
	e.do("GET", "/v1/tasks/before", nil).wantError(t, 503, "unavailable")
	e.do("GET", "/readyz", nil).wantError(t, 503, "unavailable")
	if a := e.do("GET", "/healthz", nil); a.Status != http.StatusOK {
		t.Errorf("/healthz during the outage: %d", a.Status)
	}

	if err := e.redis.Restart(); err != nil {
		t.Fatalf("restart miniredis: %v", err)
	}
	eventually(t, 10*time.Second, "POST to succeed after Redis is back", func() bool {
		return e.do("POST", "/v1/tasks", validTask("after")).Status == http.StatusCreated
	})
	if a := e.do("GET", "/readyz", nil); a.Status != http.StatusOK {
		t.Errorf("/readyz after the outage: %d %s", a.Status, a.Body)
	}
	for key, status := range map[string]int{"before": 200, "after": 200, "during": 404, "b1": 404} {
		if a := e.do("GET", "/v1/tasks/"+key, nil); a.Status != status {
			t.Errorf("GET %s: %d, want %d", key, a.Status, status)
		}
	}
}

func TestSignedCallback(t *testing.T) {
	secret := []byte("receiver-shared-secret")
	e := newAPIEnv(t, envConfig{worker: true, signingSecret: secret})
	rcv := newReceiver(t)
	a := e.do("POST", "/v1/tasks", map[string]any{
		"key": "signed/1", "callback_url": rcv.server.URL + "/hook", "delay_ms": 0,
		"header": map[string]string{"X-Tenant": "acme"}, "req": json.RawMessage(`{"hi":1}`),
	})
	if a.Status != http.StatusCreated {
		t.Fatalf("POST: %d %s", a.Status, a.Body)
	}
	var created taskJSON
	a.decode(t, &created)
	eventually(t, 10*time.Second, "the callback", func() bool { return rcv.count() >= 1 })
	cb := rcv.snapshot()[0]

	if cb.Method != "POST" || string(cb.Body) != `{"hi":1}` || cb.Header.Get("Content-Type") != "application/json" {
		t.Errorf("callback %s %q Content-Type %q", cb.Method, cb.Body, cb.Header.Get("Content-Type"))
	}
	for name, want := range map[string]string{
		"Rtw-Task-Key": "signed/1", "Rtw-Attempt": "1", "Rtw-Scheduled-At": created.ExecuteAt, "X-Tenant": "acme",
	} {
		if got := cb.Header.Get(name); got != want {
			t.Errorf("header %s: %q, want %q", name, got, want)
		}
	}
	signature := cb.Header.Get("Rtw-Signature")
	if err := httpclient.VerifySignature(secret, signature, "signed/1", cb.Body, time.Now()); err != nil {
		t.Errorf("VerifySignature(%q): %v", signature, err)
	}
	if err := httpclient.VerifySignature([]byte("another secret"), signature, "signed/1", cb.Body, time.Now()); err == nil {
		t.Errorf("VerifySignature accepts a wrong secret")
	}

	// The formula of API.md §4, computed independently.
	parts := strings.Split(signature, ",")
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "t=") || !strings.HasPrefix(parts[1], "v1=") {
		t.Fatalf("Rtw-Signature %q is not t=<unix>,v1=<hex>", signature)
	}
	ts := strings.TrimPrefix(parts[0], "t=")
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + ".signed/1." + string(cb.Body)))
	if want := hex.EncodeToString(mac.Sum(nil)); strings.TrimPrefix(parts[1], "v1=") != want {
		t.Errorf("v1 %s, want HMAC-SHA256(secret, t.key.body) = %s", parts[1], want)
	}
	var unix int64
	if _, err := fmt.Sscan(ts, &unix); err != nil || time.Since(time.Unix(unix, 0)).Abs() > time.Minute {
		t.Errorf("t=%s is not the current unix time", ts)
	}
}

func TestMetricsExposed(t *testing.T) {
	e := newAPIEnv(t, envConfig{worker: true})
	rcv := newReceiver(t)
	if a := e.do("POST", "/v1/tasks", with(validTask("m1"), map[string]any{"callback_url": rcv.server.URL, "delay_ms": 0})); a.Status != 201 {
		t.Fatalf("POST: %d %s", a.Status, a.Body)
	}
	if a := e.do("POST", "/v1/tasks", validTask("m2")); a.Status != 201 {
		t.Fatalf("POST: %d %s", a.Status, a.Body)
	}
	if a := e.do("DELETE", "/v1/tasks/m2", nil); a.Status != 204 {
		t.Fatalf("DELETE: %d %s", a.Status, a.Body)
	}
	eventually(t, 10*time.Second, "the callback", func() bool { return rcv.count() == 1 })
	var text string
	eventually(t, 5*time.Second, "the delivered callback in the metrics", func() bool {
		text = string(e.do("GET", "/metrics", nil).Body)
		return strings.Contains(text, `rtimewheel_callbacks_total{outcome="delivered"} 1`)
	})
	for _, want := range []string{
		"rtimewheel_tasks_added_total 2",
		"rtimewheel_tasks_removed_total 1",
		`rtimewheel_callbacks_total{outcome="retry"} 0`,
		`rtimewheel_callbacks_total{outcome="dead"} 0`,
		`rtimewheel_callbacks_total{outcome="dropped"} 0`,
		"rtimewheel_callback_retries_total 0",
		"rtimewheel_dead_letters_total 0",
		"rtimewheel_callbacks_in_flight ",
		"rtimewheel_callback_duration_seconds_count 1",
		"rtimewheel_callback_lateness_seconds_count 1",
		`rtimewheel_callback_lateness_seconds_bucket{le="0.001"}`,
		`rtimewheel_callback_lateness_seconds_bucket{le="10"}`,
		"rtimewheel_pull_duration_seconds_count ",
		"rtimewheel_pulled_tasks_total ",
		"rtimewheel_pull_errors_total ",
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestUnmatchedRoutesAnswerJSON(t *testing.T) {
	e := newAPIEnv(t, envConfig{})
	e.do("GET", "/v1/nothing-here", nil).wantError(t, 404, "not_found", "/v1/nothing-here")
	a := e.do("GET", "/v1/tasks", nil)
	a.wantError(t, 405, "method_not_allowed", "GET")
	if allow := a.Header.Get("Allow"); !strings.Contains(allow, "POST") {
		t.Errorf("Allow %q", allow)
	}
	// tasks:batch is a literal path segment, beside /v1/tasks/{key}.
	e.do("GET", "/v1/tasks:batch", nil).wantError(t, 405, "method_not_allowed")
	if a := e.do("POST", "/v1/tasks:batch", `{"tasks":[]}`); a.Status != 200 {
		t.Errorf("POST /v1/tasks:batch: %d %s", a.Status, a.Body)
	}
}

func TestRolesSelectRoutes(t *testing.T) {
	api := &apiServer{metrics: newServiceMetrics(), ping: func(context.Context) error { return nil }, logger: slog.New(slog.DiscardHandler)}
	status := func(h http.Handler, method, path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader("")))
		return rec.Code
	}
	workerOnly := api.handler(false, true)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if got := status(workerOnly, "GET", path); got != 200 {
			t.Errorf("--api=false: GET %s: %d, want 200", path, got)
		}
	}
	for _, path := range []string{"/v1/dead-letters", "/v1/tasks/k", "/demo/echo"} {
		if got := status(workerOnly, "GET", path); got != 404 {
			t.Errorf("--api=false: GET %s: %d, want 404", path, got)
		}
	}
	if got := status(api.handler(true, false), "POST", "/demo/echo"); got != 404 {
		t.Errorf("--demo-echo=false: POST /demo/echo: %d, want 404", got)
	}
	if got := status(api.handler(true, true), "POST", "/demo/echo"); got != 204 {
		t.Errorf("POST /demo/echo: %d, want 204", got)
	}
}
