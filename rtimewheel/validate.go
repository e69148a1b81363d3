package rtimewheel

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

var methods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// validKey checks a task key: 1 to 256 bytes of UTF-8 without control
// characters.
func validKey(key string) error {
	switch {
	case key == "":
		return invalid("key", "is required")
	case len(key) > MaxKeyBytes:
		return invalid("key", "is %d bytes, more than %d", len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return invalid("key", "is not valid UTF-8")
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		return invalid("key", "contains a control character")
	}
	return nil
}

// newStoredTask validates task and returns it as it will be stored, with
// defaults filled in. Field names in errors are those of the HTTP API.
func newStoredTask(key string, task *RTaskElement) (*storedTask, error) {
	if task == nil {
		return nil, invalid("task", "is nil")
	}
	if task.Key != "" && task.Key != key {
		return nil, invalid("key", "argument %q does not match the task's key %q", key, task.Key)
	}
	if err := validKey(key); err != nil {
		return nil, err
	}
	if err := validURL(task.CallbackURL); err != nil {
		return nil, err
	}
	method := strings.ToUpper(task.Method)
	if method == "" {
		method = "POST"
	}
	if !methods[method] {
		return nil, invalid("method", "%q is not one of GET, POST, PUT, PATCH, DELETE", task.Method)
	}
	if err := validHeader(task.Header); err != nil {
		return nil, err
	}
	body, err := encodeReq(task.Req)
	if err != nil {
		return nil, err
	}
	if body != nil && method == "GET" {
		return nil, invalid("req", "a body is not allowed with GET")
	}
	attempts := task.MaxAttempts
	switch {
	case attempts == 0:
		attempts = DefaultMaxAttempts
	case attempts < 1 || attempts > MaxMaxAttempts:
		return nil, invalid("max_attempts", "%d is out of range 1..%d", attempts, MaxMaxAttempts)
	}
	timeout := task.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultTimeout
	case timeout < time.Millisecond || timeout > MaxTimeout:
		return nil, invalid("timeout_ms", "%v is out of range 1ms..%v", timeout, MaxTimeout)
	}
	return &storedTask{
		Key:         key,
		URL:         task.CallbackURL,
		Method:      method,
		Header:      task.Header,
		Body:        body,
		MaxAttempts: attempts,
		TimeoutMs:   timeout.Milliseconds(),
	}, nil
}

func validURL(raw string) error {
	if raw == "" {
		return invalid("callback_url", "is required")
	}
	if strings.IndexFunc(raw, unicode.IsControl) >= 0 {
		return invalid("callback_url", "contains a control character")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalid("callback_url", "is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return invalid("callback_url", "scheme must be http or https, not %q", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return invalid("callback_url", "has no host")
	}
	return nil
}

// validHeader accepts header names that are HTTP tokens and values without
// line breaks or NUL. The Rtw- headers are the wheel's own.
func validHeader(h map[string]string) error {
	for name, value := range h {
		if name == "" || strings.IndexFunc(name, notTokenChar) >= 0 {
			return invalid("header", "%q is not a valid header name", name)
		}
		if strings.HasPrefix(strings.ToLower(name), "rtw-") {
			return invalid("header", "%q: the Rtw- headers are set by rtimewheel", name)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return invalid("header", "value of %q contains a line break or NUL", name)
		}
	}
	return nil
}

func notTokenChar(r rune) bool {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
		return false
	}
	return !strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// encodeReq returns the JSON body for req: nil for none (nil or JSON null).
func encodeReq(req any) (json.RawMessage, error) {
	var body []byte
	switch r := req.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if !json.Valid(r) {
			return nil, invalid("req", "is not valid JSON")
		}
		body = r
	default:
		b, err := json.Marshal(r)
		if err != nil {
			return nil, invalid("req", "cannot be encoded as JSON: %v", err)
		}
		body = b
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return nil, invalid("req", "is not valid JSON")
	}
	if bytes.Equal(compact.Bytes(), []byte("null")) {
		return nil, nil
	}
	return compact.Bytes(), nil
}
