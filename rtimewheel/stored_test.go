package rtimewheel

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestStoredTaskLeavesOutKeyAndDefaults(t *testing.T) {
	full := &storedTask{Key: "order-42", URL: "http://h/x", Method: "POST", Body: json.RawMessage(`{"a":1}`),
		MaxAttempts: DefaultMaxAttempts, TimeoutMs: DefaultTimeout.Milliseconds(), ScheduledMs: 1_700_000_000_000, DueMs: 1_700_000_000_000}
	enc, err := encodeTask("0123456789abcdef", full)
	if err != nil {
		t.Fatal(err)
	}
	if want := `0123456789abcdef{"u":"http://h/x","b":{"a":1},"s":1700000000000}`; enc != want {
		t.Fatalf("stored form\n got %s\nwant %s", enc, want)
	}
	version, got, err := decodeTask(full.Key, enc) // the key: the field the task is stored under
	if err != nil {
		t.Fatal(err)
	}
	if version != "0123456789abcdef" || !reflect.DeepEqual(got, full) {
		t.Fatalf("round trip: version %s, got %+v, want %+v", version, got, full)
	}
}

func TestStoredTaskKeepsFieldsThatDifferFromDefaults(t *testing.T) {
	task := &storedTask{Key: "k", URL: "http://h/x", Method: "PUT", MaxAttempts: 3, TimeoutMs: 250,
		ScheduledMs: 1000, DueMs: 5000, Attempts: 2, LastError: "boom"}
	enc, err := encodeTask("0123456789abcdef", task)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"m":"PUT"`, `"ma":3`, `"to":250`, `"n":5000`, `"a":2`, `"e":"boom"`} {
		if !strings.Contains(enc, field) {
			t.Errorf("stored form %s lacks %s", enc, field)
		}
	}
	_, got, err := decodeTask(task.Key, enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, task) {
		t.Fatalf("round trip: got %+v, want %+v", got, task)
	}
}

// Tasks written before fields were left out decode the same.
func TestStoredTaskDecodesTheFullForm(t *testing.T) {
	raw := `0123456789abcdef{"k":"old","u":"http://h/x","m":"POST","ma":5,"to":10000,"s":1000,"n":2000}`
	_, got, err := decodeTask("old", raw)
	if err != nil {
		t.Fatal(err)
	}
	want := &storedTask{Key: "old", URL: "http://h/x", Method: "POST", MaxAttempts: 5, TimeoutMs: 10000, ScheduledMs: 1000, DueMs: 2000}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
