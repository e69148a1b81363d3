package rtimewheel

import (
	"context"
	"sync"
)

// maxQueuedBatch bounds how many queued adds go out in one batch.
const maxQueuedBatch = 1000

// maxAddWriters bounds the batches in flight at once. Two keep Redis busy
// with one batch while the client encodes the next and reads the replies
// of the last.
const maxAddWriters = 2

// addQueue coalesces concurrent AddTask calls into batches (group commit).
// A call that finds fewer than maxAddWriters batches being written starts
// a writer at once, so a lone call waits for nothing but its own round
// trip; calls that arrive while the writers are busy are written together
// as the next batch. Each
// call still gets its own result. Tasks are validated and encoded by their
// callers, in parallel; only the Redis write is shared.
type addQueue struct {
	mu      sync.Mutex
	pending []queuedAdd
	writers int // writer goroutines running
}

type queuedAdd struct {
	ctx  context.Context // the caller's: an add whose caller gave up before it was sent is dropped
	add  pendingAdd
	done chan error // buffered: the writer never blocks on a caller gone
}

// write queues p and waits until it is stored, fails, or ctx ends (the task
// may then still be stored, if its batch was already on its way; one still
// queued is dropped).
func (q *addQueue) write(ctx context.Context, w *RTimeWheel, p pendingAdd) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	q.mu.Lock()
	q.pending = append(q.pending, queuedAdd{ctx: ctx, add: p, done: done})
	start := q.writers < maxAddWriters
	if start {
		q.writers++
	}
	q.mu.Unlock()
	if start {
		go q.run(w)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run writes queued batches until the queue is empty. The batch is not tied
// to any one caller's context: each caller stops waiting when its own ends,
// and the write itself is bounded by the Redis client's timeouts.
func (q *addQueue) run(w *RTimeWheel) {
	for {
		q.mu.Lock()
		n := min(len(q.pending), maxQueuedBatch)
		if n == 0 {
			q.writers--
			q.pending = nil
			q.mu.Unlock()
			return
		}
		batch := make([]queuedAdd, 0, n)
		for _, b := range q.pending[:n] {
			if b.ctx.Err() == nil { // its caller has stopped waiting: not sent, so not stored
				batch = append(batch, b)
			}
		}
		q.pending = q.pending[n:]
		q.mu.Unlock()
		if len(batch) == 0 {
			continue
		}

		adds := make([]pendingAdd, len(batch))
		for i, b := range batch {
			adds[i] = b.add
			adds[i].item = i
		}
		errs := make([]error, len(batch))
		for _, f := range w.storeAdds(context.Background(), adds) {
			errs[f.item] = f.err
		}
		for i, b := range batch {
			b.done <- errs[i]
		}
	}
}
