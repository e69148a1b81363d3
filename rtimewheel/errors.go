package rtimewheel

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrInvalidTask wraps every validation failure; nothing was written.
	ErrInvalidTask = errors.New("invalid task")
	// ErrNotFound means no task (or dead letter) with that key exists.
	ErrNotFound = errors.New("task not found")
	// ErrUnavailable means Redis could not be reached or cannot serve now;
	// the call may be retried.
	ErrUnavailable = errors.New("redis unavailable")
	// ErrStopped means the wheel was stopped.
	ErrStopped = errors.New("wheel stopped")
)

// FieldError is a validation failure of one field of a task. It matches
// ErrInvalidTask with errors.Is.
type FieldError struct {
	// Field is the task field at fault, named as in the HTTP API
	// (key, callback_url, method, header, req, execute_at, max_attempts,
	// timeout_ms).
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("invalid task: %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidTask) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidTask }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// BatchError reports the failures of AddTasks: Errs has one entry per
// item, nil for the items that were stored.
type BatchError struct {
	Errs []error
}

func (e *BatchError) Error() string {
	failed, first := 0, -1
	for i, err := range e.Errs {
		if err != nil {
			failed++
			if first < 0 {
				first = i
			}
		}
	}
	if failed == 0 {
		return "add tasks: no item failed"
	}
	return fmt.Sprintf("add tasks: %d of %d failed; item %d: %v", failed, len(e.Errs), first, e.Errs[first])
}

// Unwrap returns the item errors, so errors.Is looks through them.
func (e *BatchError) Unwrap() []error {
	var errs []error
	for _, err := range e.Errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
