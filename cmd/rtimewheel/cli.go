package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Defaults of the CLI subcommands.
const (
	defaultServer    = "http://127.0.0.1:8080"
	cliClientTimeout = 30 * time.Second
)

// apiError is an error answer of the server, as the CLI reports it.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("server answered %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("server answered %d %s: %s", e.Status, e.Code, e.Message)
}

// apiClient calls a server's HTTP API.
type apiClient struct {
	base  string // scheme://host[:port][/prefix], no trailing slash
	token string
	http  *http.Client
}

// call sends method path with body (JSON-encoded unless nil) and returns the
// answer's body on a 2xx; any other status is an *apiError.
func (c *apiClient) call(ctx context.Context, method, path string, body any) ([]byte, error) {
	var reader io.Reader
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode the request: %w", err)
		}
		reader = bytes.NewReader(encoded)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		return nil, fmt.Errorf("build the request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, c.base+path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, nil
	}
	var answer errorResponse
	if json.Unmarshal(data, &answer) == nil && answer.Error.Code != "" {
		return nil, &apiError{Status: resp.StatusCode, Code: answer.Error.Code, Message: answer.Error.Message}
	}
	firstLine, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	return nil, &apiError{Status: resp.StatusCode, Message: firstLine}
}

// cliCommon are the flags of every CLI subcommand.
type cliCommon struct {
	server string
	token  string
	json   bool
}

// newCLIFlags returns the flag set of a CLI subcommand with the common flags.
func newCLIFlags(name string, common *cliCommon) *flag.FlagSet {
	fs := flag.NewFlagSet("rtimewheel "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&common.server, "server", "", "`URL` of the server (default "+defaultServer+")")
	fs.StringVar(&common.token, "token", "", "API `token`")
	fs.BoolVar(&common.json, "json", false, "print the server's JSON answer instead of text")
	return fs
}

// client returns the API client the common flags (or the environment) point at.
func (c *cliCommon) client(getenv func(string) string) (*apiClient, error) {
	server := firstNonEmpty(c.server, getenv("RTW_SERVER"), defaultServer)
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--server %q: want an http or https URL such as %s", server, defaultServer)
	}
	return &apiClient{
		base:  strings.TrimSuffix(server, "/"),
		token: firstNonEmpty(c.token, getenv("RTW_API_TOKEN")),
		http:  &http.Client{Timeout: cliClientTimeout},
	}, nil
}

// parseCLIArgs parses flags anywhere among args and returns the positional
// arguments ("--" ends the flags). It checks their count against want.
func parseCLIArgs(fs *flag.FlagSet, args []string, want int, synopsis string, helpOut io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(helpOut, "usage: %s\n\n", synopsis)
				printFlags(helpOut, fs, map[string]string{"server": "RTW_SERVER", "token": "RTW_API_TOKEN"})
				return nil, errHelpShown
			}
			return nil, usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	if len(positional) != want {
		return nil, usagef("usage: %s", synopsis)
	}
	return positional, nil
}

// runCLI runs one of the subcommands add, get, remove and dlq.
func runCLI(ctx context.Context, cmd string, args []string, stdout io.Writer, getenv func(string) string) error {
	switch cmd {
	case "add":
		return cliAdd(ctx, args, stdout, getenv)
	case "get":
		return cliGet(ctx, args, stdout, getenv)
	case "remove":
		return cliRemove(ctx, args, stdout, getenv)
	case "dlq":
		if len(args) == 0 {
			return usagef("usage: rtimewheel dlq list|retry KEY|delete KEY")
		}
		switch sub, rest := args[0], args[1:]; sub {
		case "list":
			return cliDLQList(ctx, rest, stdout, getenv)
		case "retry":
			return cliDLQRetry(ctx, rest, stdout, getenv)
		case "delete":
			return cliDLQDelete(ctx, rest, stdout, getenv)
		default:
			return usagef("dlq: unknown subcommand %q (want list, retry or delete)", sub)
		}
	}
	return usagef("unknown command %q", cmd)
}

// headerFlag collects repeated --header name=value flags.
type headerFlag map[string]string

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(pair string) error {
	name, value, ok := strings.Cut(pair, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want name=value, got %q", pair)
	}
	h[strings.TrimSpace(name)] = value
	return nil
}

// addRequest is the Task `rtimewheel add` sends.
type addRequest struct {
	Key         string            `json:"key"`
	CallbackURL string            `json:"callback_url"`
	Method      string            `json:"method,omitempty"`
	Header      map[string]string `json:"header,omitempty"`
	Req         json.RawMessage   `json:"req,omitempty"`
	ExecuteAt   string            `json:"execute_at,omitempty"`
	DelayMs     *int64            `json:"delay_ms,omitempty"`
	MaxAttempts *int              `json:"max_attempts,omitempty"`
	TimeoutMs   *int64            `json:"timeout_ms,omitempty"`
}

// cliAdd is `rtimewheel add`.
func cliAdd(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var common cliCommon
	fs := newCLIFlags("add", &common)
	var task addRequest
	header := headerFlag{}
	var req string
	var delay, timeout time.Duration
	var maxAttempts int
	fs.StringVar(&task.Key, "key", "", "task `key` (required)")
	fs.StringVar(&task.CallbackURL, "url", "", "callback `URL` (required)")
	fs.StringVar(&task.Method, "method", "", "callback method: GET, POST, PUT, PATCH or DELETE (default POST)")
	fs.Var(header, "header", "callback header `name=value` (repeatable)")
	fs.StringVar(&req, "req", "", "callback body, `JSON`")
	fs.StringVar(&task.ExecuteAt, "at", "", "due `time`, RFC 3339 (default: now)")
	fs.DurationVar(&delay, "delay", 0, "due after this `duration` (instead of --at)")
	fs.IntVar(&maxAttempts, "max-attempts", 0, "attempts before the task becomes a dead letter, 1-100 (default 5)")
	fs.DurationVar(&timeout, "timeout", 0, "per-attempt callback `timeout`, up to 30s (default 10s)")
	const synopsis = "rtimewheel add --key KEY --url URL [--at TIME | --delay DUR] [--method M] [--header N=V]... [--req JSON] [--max-attempts N] [--timeout DUR] [--server URL] [--token T] [--json]"
	if _, err := parseCLIArgs(fs, args, 0, synopsis, stdout); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case task.Key == "":
		return usagef("add: --key is required")
	case task.CallbackURL == "":
		return usagef("add: --url is required")
	case given["at"] && given["delay"]:
		return usagef("add: give --at or --delay, not both")
	case req != "" && !json.Valid([]byte(req)):
		return usagef("add: --req is not valid JSON")
	case given["timeout"] && timeout < time.Millisecond:
		return usagef("add: --timeout %v: must be at least 1ms", timeout)
	}
	if !given["at"] {
		ms := delay.Milliseconds()
		task.DelayMs = &ms
	}
	if given["max-attempts"] {
		task.MaxAttempts = &maxAttempts
	}
	if given["timeout"] {
		ms := timeout.Milliseconds()
		task.TimeoutMs = &ms
	}
	if len(header) > 0 {
		task.Header = header
	}
	if req != "" {
		task.Req = json.RawMessage(req)
	}

	client, err := common.client(getenv)
	if err != nil {
		return err
	}
	answer, err := client.call(ctx, http.MethodPost, "/v1/tasks", task)
	if err != nil {
		return err
	}
	if common.json {
		_, err := stdout.Write(answer)
		return err
	}
	var stored taskResponse
	if err := json.Unmarshal(answer, &stored); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "scheduled %s at %s: %s %s\n", stored.Key, stored.ExecuteAt, stored.Method, stored.CallbackURL)
	return err
}

// cliGet is `rtimewheel get KEY`.
func cliGet(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var common cliCommon
	fs := newCLIFlags("get", &common)
	keys, err := parseCLIArgs(fs, args, 1, "rtimewheel get KEY [--server URL] [--token T] [--json]", stdout)
	if err != nil {
		return err
	}
	client, err := common.client(getenv)
	if err != nil {
		return err
	}
	answer, err := client.call(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(keys[0]), nil)
	if err != nil {
		return err
	}
	if common.json {
		_, err := stdout.Write(answer)
		return err
	}
	var task taskResponse
	if err := json.Unmarshal(answer, &task); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	return printTask(stdout, task)
}

// printTask writes task as aligned "field value" lines.
func printTask(w io.Writer, t taskResponse) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(name, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s\t%s\n", name, value)
		}
	}
	line("key", t.Key)
	line("state", t.State)
	line("execute_at", t.ExecuteAt)
	line("next_attempt_at", t.NextAttemptAt)
	line("callback", t.Method+" "+t.CallbackURL)
	names := make([]string, 0, len(t.Header))
	for name := range t.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		line("header", name+": "+t.Header[name])
	}
	line("req", string(t.Req))
	line("attempts", fmt.Sprintf("%d of %d", t.Attempts, t.MaxAttempts))
	line("timeout", (time.Duration(t.TimeoutMs) * time.Millisecond).String())
	line("last_error", t.LastError)
	line("died_at", t.DiedAt)
	return tw.Flush()
}

// cliRemove is `rtimewheel remove KEY`.
func cliRemove(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	return cliKeyAction(ctx, args, stdout, getenv, "remove", http.MethodDelete,
		func(key string) string { return "/v1/tasks/" + url.PathEscape(key) }, "removed %s\n")
}

// cliDLQRetry is `rtimewheel dlq retry KEY`.
func cliDLQRetry(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	return cliKeyAction(ctx, args, stdout, getenv, "dlq retry", http.MethodPost,
		func(key string) string { return "/v1/dead-letters/" + url.PathEscape(key) + "/retry" }, "scheduled dead letter %s again, now\n")
}

// cliDLQDelete is `rtimewheel dlq delete KEY`.
func cliDLQDelete(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	return cliKeyAction(ctx, args, stdout, getenv, "dlq delete", http.MethodDelete,
		func(key string) string { return "/v1/dead-letters/" + url.PathEscape(key) }, "deleted dead letter %s\n")
}

// cliKeyAction runs a subcommand that sends method to the path of one KEY
// and prints done (with the key) or, with --json, the server's answer.
func cliKeyAction(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string,
	name, method string, path func(key string) string, done string) error {
	var common cliCommon
	fs := newCLIFlags(name, &common)
	keys, err := parseCLIArgs(fs, args, 1, "rtimewheel "+name+" KEY [--server URL] [--token T] [--json]", stdout)
	if err != nil {
		return err
	}
	client, err := common.client(getenv)
	if err != nil {
		return err
	}
	answer, err := client.call(ctx, method, path(keys[0]), nil)
	if err != nil {
		return err
	}
	if common.json {
		_, err = stdout.Write(answer)
		return err
	}
	_, err = fmt.Fprintf(stdout, done, keys[0])
	return err
}

// cliDLQList is `rtimewheel dlq list`.
func cliDLQList(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var common cliCommon
	fs := newCLIFlags("dlq list", &common)
	limit := fs.Int("limit", defaultDeadLetters, fmt.Sprintf("most dead letters to list, 1-%d", maxDeadLetters))
	if _, err := parseCLIArgs(fs, args, 0, "rtimewheel dlq list [--limit N] [--server URL] [--token T] [--json]", stdout); err != nil {
		return err
	}
	client, err := common.client(getenv)
	if err != nil {
		return err
	}
	answer, err := client.call(ctx, http.MethodGet, "/v1/dead-letters?limit="+strconv.Itoa(*limit), nil)
	if err != nil {
		return err
	}
	if common.json {
		_, err = stdout.Write(answer)
		return err
	}
	var list deadLettersResponse
	if err := json.Unmarshal(answer, &list); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tDIED_AT\tATTEMPTS\tCALLBACK\tLAST_ERROR")
	for _, t := range list.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s %s\t%s\n", t.Key, t.DiedAt, t.Attempts, t.Method, t.CallbackURL, t.LastError)
	}
	return tw.Flush()
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
