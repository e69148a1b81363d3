package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// runCmd runs the binary's entry point with args and returns its exit code,
// stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), func() {}, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCLI(t *testing.T) {
	e := newAPIEnv(t, envConfig{token: "cli-token"})
	server := []string{"--server", e.server.URL, "--token", "cli-token"}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCmd(t, append(args, server...)...)
	}

	code, out, errOut := cli("add", "--key", "order/7", "--url", "http://127.0.0.1:1/hook", "--method", "PUT",
		"--header", "X-Tenant=acme", "--header", "X-Trace=a=b", "--req", `{"id":7}`, "--at", "2030-01-01T00:00:00.5Z",
		"--max-attempts", "3", "--timeout", "1500ms")
	if code != exitOK || !strings.Contains(out, "scheduled order/7 at 2030-01-01T00:00:00.500Z") {
		t.Fatalf("add: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, _ = cli("get", "order/7", "--json")
	var task taskJSON
	if code != exitOK || json.Unmarshal([]byte(out), &task) != nil {
		t.Fatalf("get --json: exit %d, stdout %q", code, out)
	}
	if task.Method != "PUT" || task.Header["X-Trace"] != "a=b" || string(task.Req) != `{"id":7}` || task.MaxAttempts != 3 || task.TimeoutMs != 1500 {
		t.Errorf("the task as stored: %+v", task)
	}

	code, out, _ = cli("get", "order/7")
	for _, want := range []string{"key", "order/7", "state", "scheduled", "PUT http://127.0.0.1:1/hook", "X-Tenant: acme", "0 of 3", "1.5s"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("get: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}

	// Flags may follow the key; the server and token may come from the environment.
	t.Setenv("RTW_SERVER", e.server.URL)
	t.Setenv("RTW_API_TOKEN", "cli-token")
	code, out, errOut = runCmd(t, "add", "--key", "later", "--url", "http://127.0.0.1:1/", "--delay", "1h", "--json")
	if code != exitOK || !strings.Contains(out, `"key":"later"`) {
		t.Errorf("add with the environment: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, _ = runCmd(t, "remove", "later"); code != exitOK || out != "removed later\n" {
		t.Errorf("remove: exit %d, stdout %q", code, out)
	}

	code, _, errOut = runCmd(t, "get", "later")
	if code != exitNotFound || !strings.Contains(errOut, "not_found") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("get of a removed task: exit %d, stderr %q; want %d and one line", code, errOut, exitNotFound)
	}
	if code, _, _ = runCmd(t, "remove", "later"); code != exitNotFound {
		t.Errorf("remove of a removed task: exit %d, want %d", code, exitNotFound)
	}

	// Server errors exit 1, usage errors 2.
	if code, _, errOut = runCmd(t, "add", "--key", "k", "--url", "ftp://x/"); code != exitFailure || !strings.Contains(errOut, "callback_url") {
		t.Errorf("add with a bad URL: exit %d, stderr %q; want %d naming callback_url", code, errOut, exitFailure)
	}
	if code, _, errOut = runCmd(t, "get", "order/7", "--token", "wrong"); code != exitFailure || !strings.Contains(errOut, "401") {
		t.Errorf("get with a wrong token: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{
		{"add", "--url", "http://h/"},
		{"add", "--key", "k"},
		{"add", "--key", "k", "--url", "http://h/", "--at", "2030-01-01T00:00:00Z", "--delay", "1s"},
		{"add", "--key", "k", "--url", "http://h/", "--req", "{not json"},
		{"add", "--key", "k", "--url", "http://h/", "--delay", "soon"},
		{"add", "--key", "k", "--url", "http://h/", "--header", "no-equals"},
		{"get"},
		{"get", "a", "b"},
		{"dlq"},
		{"dlq", "purge"},
		{"get", "k", "--server", "ftp://x"},
		{"frobnicate"},
	} {
		if code, _, errOut := runCmd(t, args...); code != exitUsage || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want %d and one line", args, code, errOut, exitUsage)
		}
	}
	if code, out, _ := runCmd(t, "add", "-h"); code != exitOK || !strings.Contains(out, "--key") && !strings.Contains(out, "-key") {
		t.Errorf("add -h: exit %d, stdout %q", code, out)
	}
}

func TestCLIDeadLetters(t *testing.T) {
	e := newAPIEnv(t, envConfig{worker: true})
	rcv := newReceiver(t)
	rcv.setStatus(http.StatusServiceUnavailable)
	server := []string{"--server", e.server.URL}
	code, _, errOut := runCmd(t, append([]string{"add", "--key", "dl", "--url", rcv.server.URL, "--max-attempts", "1", "--req", `{"a":1}`}, server...)...)
	if code != exitOK {
		t.Fatalf("add: exit %d, stderr %q", code, errOut)
	}
	eventually(t, 10*time.Second, "the dead letter", func() bool {
		_, out, _ := runCmd(t, append([]string{"dlq", "list", "--json"}, server...)...)
		return strings.Contains(out, `"key":"dl"`)
	})
	code, out, _ := runCmd(t, append([]string{"dlq", "list"}, server...)...)
	if code != exitOK || !strings.Contains(out, "KEY") || !strings.Contains(out, "dl ") || !strings.Contains(out, "503") {
		t.Errorf("dlq list: exit %d:\n%s", code, out)
	}
	rcv.setStatus(http.StatusOK)
	if code, out, _ = runCmd(t, append([]string{"dlq", "retry", "dl"}, server...)...); code != exitOK || !strings.Contains(out, "dl") {
		t.Errorf("dlq retry: exit %d, stdout %q", code, out)
	}
	eventually(t, 10*time.Second, "the retried callback", func() bool { return rcv.count() == 2 })
	if code, _, _ = runCmd(t, append([]string{"dlq", "delete", "dl"}, server...)...); code != exitNotFound {
		t.Errorf("dlq delete of a delivered task: exit %d, want %d", code, exitNotFound)
	}
	rcv.setStatus(http.StatusInternalServerError)
	runCmd(t, append([]string{"add", "--key", "dl2", "--url", rcv.server.URL, "--max-attempts", "1"}, server...)...)
	eventually(t, 10*time.Second, "the second dead letter", func() bool {
		_, out, _ := runCmd(t, append([]string{"dlq", "list", "--json"}, server...)...)
		return strings.Contains(out, `"key":"dl2"`)
	})
	if code, out, _ = runCmd(t, append([]string{"dlq", "delete", "dl2"}, server...)...); code != exitOK || !strings.Contains(out, "deleted") {
		t.Errorf("dlq delete: exit %d, stdout %q", code, out)
	}
	if code, _, _ = runCmd(t, append([]string{"dlq", "retry", "dl2"}, server...)...); code != exitNotFound {
		t.Errorf("dlq retry of a deleted dead letter: exit %d, want %d", code, exitNotFound)
	}
	code, _, errOut = runCmd(t, "get", "x", "--server", "http://127.0.0.1:"+itoa(freePort(t)))
	if code != exitFailure || strings.Count(errOut, "\n") != 1 {
		t.Errorf("an unreachable server: exit %d, stderr %q", code, errOut)
	}
}
