package rtimewheel

import (
	"context"
	"errors"
	"time"
)

// RTimeWheel schedules tasks in Redis and, unless made WithoutWorker, runs a
// worker that fires them. Its methods are safe for concurrent use.
type RTimeWheel struct {
	cfg   config
	redis RedisClient
	http  CallbackClient
}

// NewRTimeWheel returns a wheel on redisClient and, unless WithoutWorker is
// given, starts its worker, which runs until Stop.
func NewRTimeWheel(redisClient RedisClient, httpClient CallbackClient, opts ...Option) *RTimeWheel {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return &RTimeWheel{cfg: cfg, redis: redisClient, http: httpClient}
}

// AddTask schedules task under key for executeAt (a time in the past means
// now). A task already scheduled under key is replaced.
func (w *RTimeWheel) AddTask(ctx context.Context, key string, task *RTaskElement, executeAt time.Time) error {
	return errors.New("stub")
}

// AddTasks schedules a batch.
func (w *RTimeWheel) AddTasks(ctx context.Context, items []TaskAt) error { return errors.New("stub") }

// RemoveTask cancels the task under key.
func (w *RTimeWheel) RemoveTask(ctx context.Context, key string, executeAt time.Time) error {
	return errors.New("stub")
}

// GetTask returns the task under key.
func (w *RTimeWheel) GetTask(ctx context.Context, key string) (*TaskInfo, error) {
	return nil, errors.New("stub")
}

// DeadLetters lists dead letters, newest first.
func (w *RTimeWheel) DeadLetters(ctx context.Context, limit int) ([]TaskInfo, error) {
	return nil, errors.New("stub")
}

// RetryDeadLetter schedules a dead letter again now with its attempts reset.
func (w *RTimeWheel) RetryDeadLetter(ctx context.Context, key string) error {
	return errors.New("stub")
}

// DeleteDeadLetter deletes a dead letter.
func (w *RTimeWheel) DeleteDeadLetter(ctx context.Context, key string) error {
	return errors.New("stub")
}

// InFlight returns the callbacks in flight now.
func (w *RTimeWheel) InFlight() int { return 0 }

// Stop stops the worker.
func (w *RTimeWheel) Stop() {}
