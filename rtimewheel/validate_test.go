package rtimewheel_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// Invalid input returns an error naming the field, matching
// ErrInvalidTask, and writes nothing.
func TestAddTaskRejectsInvalidInput(t *testing.T) {
	e := newEnv(t)
	w := e.wheel(nil, rtimewheel.WithoutWorker())
	// A new wheel pins the namespace's shard count; nothing else is there.
	before := e.keys()
	good := func() *rtimewheel.RTaskElement {
		return &rtimewheel.RTaskElement{CallbackURL: "https://example.com/hook", Method: "POST", Req: map[string]int{"a": 1}}
	}
	with := func(change func(*rtimewheel.RTaskElement)) *rtimewheel.RTaskElement {
		tk := good()
		change(tk)
		return tk
	}
	cases := []struct {
		name  string
		key   string
		task  *rtimewheel.RTaskElement
		field string
	}{
		{"nil task", "k", nil, "task"},
		{"empty key", "", good(), "key"},
		{"key over 256 bytes", strings.Repeat("k", 257), good(), "key"},
		{"control character in key", "a\nb", good(), "key"},
		{"invalid UTF-8 key", "a\xffb", good(), "key"},
		{"key differs from the task's", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Key = "other" }), "key"},
		{"no URL", "k", with(func(tk *rtimewheel.RTaskElement) { tk.CallbackURL = "" }), "callback_url"},
		{"relative URL", "k", with(func(tk *rtimewheel.RTaskElement) { tk.CallbackURL = "/hook" }), "callback_url"},
		{"ftp scheme", "k", with(func(tk *rtimewheel.RTaskElement) { tk.CallbackURL = "ftp://example.com/x" }), "callback_url"},
		{"no host", "k", with(func(tk *rtimewheel.RTaskElement) { tk.CallbackURL = "http:///path" }), "callback_url"},
		{"bad method", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Method = "FETCH" }), "method"},
		{"body with GET", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Method = "GET" }), "req"},
		{"invalid raw JSON", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Req = json.RawMessage("{") }), "req"},
		{"unencodable req", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Req = make(chan int) }), "req"},
		{"header name", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Header = map[string]string{"Bad Name": "x"} }), "header"},
		{"header value line break", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Header = map[string]string{"X-A": "a\r\nB: c"} }), "header"},
		{"reserved header", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Header = map[string]string{"Rtw-Attempt": "9"} }), "header"},
		{"attempts below 1", "k", with(func(tk *rtimewheel.RTaskElement) { tk.MaxAttempts = -1 }), "max_attempts"},
		{"attempts over 100", "k", with(func(tk *rtimewheel.RTaskElement) { tk.MaxAttempts = 101 }), "max_attempts"},
		{"timeout below 1ms", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Timeout = time.Microsecond }), "timeout_ms"},
		{"timeout over 30s", "k", with(func(tk *rtimewheel.RTaskElement) { tk.Timeout = 31 * time.Second }), "timeout_ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := w.AddTask(context.Background(), c.key, c.task, time.Now().Add(time.Minute))
			if !errors.Is(err, rtimewheel.ErrInvalidTask) {
				t.Fatalf("err = %v, want ErrInvalidTask", err)
			}
			var fe *rtimewheel.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("err = %v, want one naming the field %q", err, c.field)
			}
			if keys := e.keys(); !slices.Equal(keys, before) {
				t.Fatalf("an invalid task wrote %v", keys)
			}
		})
	}
	// A batch stores its valid items and rejects the rest, item by item.
	err := w.AddTasks(context.Background(), []rtimewheel.TaskAt{
		{Key: "ok", Task: good(), ExecuteAt: time.Now().Add(time.Minute)},
		{Key: "", Task: good()},
	})
	var batch *rtimewheel.BatchError
	if !errors.As(err, &batch) || batch.Errs[0] != nil || !errors.Is(batch.Errs[1], rtimewheel.ErrInvalidTask) {
		t.Fatalf("batch err = %v", err)
	}
	if _, err := w.GetTask(context.Background(), "ok"); err != nil {
		t.Fatalf("the valid item of the batch was not stored: %v", err)
	}
}

// Defaults are filled in and the stored task reads back as given.
func TestGetTaskReadsBackDefaults(t *testing.T) {
	e := newEnv(t)
	w := e.wheel(nil, rtimewheel.WithoutWorker())
	at := time.Date(2030, 1, 2, 3, 4, 5, 250_000_000, time.FixedZone("X", 3600))
	tk := &rtimewheel.RTaskElement{CallbackURL: "http://example.com/h", Header: map[string]string{"X-Id": "7"}, Req: json.RawMessage(`{"a": [1, 2]}`)}
	if err := w.AddTask(context.Background(), "order:42", tk, at); err != nil {
		t.Fatal(err)
	}
	info, err := w.GetTask(context.Background(), "order:42")
	if err != nil {
		t.Fatal(err)
	}
	if info.Method != "POST" || info.MaxAttempts != rtimewheel.DefaultMaxAttempts || info.Timeout != rtimewheel.DefaultTimeout ||
		!info.ExecuteAt.Equal(at) || info.ExecuteAt.Location() != time.UTC || info.State != rtimewheel.StateScheduled ||
		info.Attempts != 0 || string(info.Req) != `{"a":[1,2]}` || info.Header["X-Id"] != "7" {
		t.Fatalf("GetTask = %+v", info)
	}
	if _, err := w.GetTask(context.Background(), "missing"); !isNotFound(err) {
		t.Fatalf("GetTask(missing) = %v, want ErrNotFound", err)
	}
}
