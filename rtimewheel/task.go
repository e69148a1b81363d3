package rtimewheel

import (
	"encoding/json"
	"time"
)

// Defaults and limits of a task.
const (
	DefaultMaxAttempts = 5
	MaxMaxAttempts     = 100
	DefaultTimeout     = 10 * time.Second
	MaxTimeout         = 30 * time.Second
	MaxKeyBytes        = 256
)

// RTaskElement is a callback to perform: the request a worker sends when the
// task falls due.
type RTaskElement struct {
	// Key identifies the task within the namespace. Adding a task with a key
	// already scheduled replaces it. AddTask fills it from its key argument
	// when empty.
	Key string `json:"key"`
	// CallbackURL is the absolute http or https URL to call.
	CallbackURL string `json:"callback_url"`
	// Method is GET, POST, PUT, PATCH or DELETE; empty means POST.
	Method string `json:"method,omitempty"`
	// Req is sent as the JSON body. A json.RawMessage is sent as it is;
	// anything else is marshalled with encoding/json. Not allowed with GET.
	Req any `json:"req,omitempty"`
	// Header is sent with the callback.
	Header map[string]string `json:"header,omitempty"`
	// MaxAttempts bounds the attempts before the task becomes a dead letter:
	// 1 to 100; 0 means DefaultMaxAttempts.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Timeout bounds each attempt: 1ms to 30s; 0 means DefaultTimeout.
	Timeout time.Duration `json:"-"`
}

// TaskState says where a task stands.
type TaskState string

// The states of a task.
const (
	StateScheduled TaskState = "scheduled" // waiting for its first attempt
	StateRetrying  TaskState = "retrying"  // failed at least once, waiting for the next attempt
	StateDead      TaskState = "dead"      // out of attempts, kept until retried or deleted
)

// TaskInfo is a task as stored, with its state.
type TaskInfo struct {
	Key         string
	CallbackURL string
	Method      string
	Header      map[string]string
	// Req is the JSON body exactly as it will be sent; nil for none.
	Req         json.RawMessage
	MaxAttempts int
	Timeout     time.Duration
	// ExecuteAt is when the task was scheduled for, in UTC.
	ExecuteAt time.Time
	// NextAttemptAt is when the next attempt is due; for a task that has not
	// failed yet it equals ExecuteAt. Zero for a dead letter.
	NextAttemptAt time.Time
	State         TaskState
	// Attempts counts the callbacks tried so far.
	Attempts int
	// LastError describes the last failed attempt, if any.
	LastError string
	// DiedAt is when a dead letter ran out of attempts.
	DiedAt time.Time
}

// TaskAt is one element of a batch for AddTasks.
type TaskAt struct {
	Key       string
	Task      *RTaskElement
	ExecuteAt time.Time
}
