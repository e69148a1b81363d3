package rtimewheel

import (
	"context"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

const (
	// completeBatch bounds the acks written in one round trip.
	completeBatch = 512
	// completeLinger is how long the completer waits for more acks to join
	// a batch that is not full.
	completeLinger = 10 * time.Millisecond
)

// ackRequest asks the completer to forget a delivered task; the result
// arrives on done.
type ackRequest struct {
	it   *leased
	done chan error
}

// completer writes acks in batches: one script call per slice and one per
// index bucket for all the acks of a batch, pipelined in one round trip.
// Under load this turns thousands of acks a second into a few calls.
type completer struct {
	w        *RTimeWheel
	requests chan ackRequest
	finished chan struct{}
}

func newCompleter(w *RTimeWheel) *completer {
	c := &completer{w: w, requests: make(chan ackRequest, completeBatch), finished: make(chan struct{})}
	go c.run()
	return c
}

// ack forgets a delivered task, waiting until it is written.
func (c *completer) ack(ctx context.Context, it *leased) error {
	req := ackRequest{it: it, done: make(chan error, 1)}
	select {
	case c.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops the completer once the requests sent are written. No ack may
// be sent after close.
func (c *completer) close() {
	close(c.requests)
	<-c.finished
}

func (c *completer) run() {
	defer close(c.finished)
	for first := range c.requests {
		batch := []ackRequest{first}
		linger := time.NewTimer(completeLinger)
	collect:
		for len(batch) < completeBatch {
			select {
			case req, ok := <-c.requests:
				if !ok {
					break collect
				}
				batch = append(batch, req)
			case <-linger.C:
				break collect
			}
		}
		linger.Stop()
		c.write(batch)
	}
}

// write acks a batch: the slice entries first, then the index entries,
// each only for the version delivered, in one pipeline.
func (c *completer) write(batch []ackRequest) {
	w := c.w
	var calls []redisclient.ScriptCall
	slices := make(map[sliceRef]int) // slice -> position in calls
	buckets := make(map[string]int)  // index key -> position in calls
	owner := make([][]int, 0, 8)     // position in calls -> requests it serves
	add := func(pos int, i int) {
		owner[pos] = append(owner[pos], i)
	}
	for i, req := range batch {
		it := req.it
		ref := sliceRef{it.minute, it.shard}
		pos, ok := slices[ref]
		if !ok {
			pos = len(calls)
			slices[ref] = pos
			calls = append(calls, redisclient.ScriptCall{Script: w.scripts.Ack, Keys: w.slice(it.minute, it.shard)})
			owner = append(owner, nil)
		}
		calls[pos].Args = append(calls[pos].Args, it.key, it.version)
		add(pos, i)
	}
	for i, req := range batch {
		it := req.it
		bucket := w.keys.Index(it.key)
		pos, ok := buckets[bucket]
		if !ok {
			pos = len(calls)
			buckets[bucket] = pos
			calls = append(calls, redisclient.ScriptCall{Script: w.scripts.IndexCAS, Keys: []string{bucket}})
			owner = append(owner, nil)
		}
		calls[pos].Args = append(calls[pos].Args, it.key, it.version, "")
		add(pos, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	errs := make([]error, len(batch))
	replies, err := w.redis.EvalBatch(ctx, calls)
	for pos := range calls {
		callErr := err
		if callErr == nil {
			callErr = replies[pos].Err
		}
		if callErr != nil {
			for _, i := range owner[pos] {
				if errs[i] == nil {
					errs[i] = storeErr("ack", callErr)
				}
			}
		}
	}
	for i, req := range batch {
		req.done <- errs[i]
	}
}

// indexCAS moves key's index entry to loc (or deletes it when loc is
// empty) if the entry still names version. It reports whether it did.
func (w *RTimeWheel) indexCAS(ctx context.Context, key, version, loc string) (bool, error) {
	reply, err := w.redis.Eval(ctx, w.scripts.IndexCAS, []string{w.keys.Index(key)}, key, version, loc)
	if err != nil {
		return false, err
	}
	results := cast.ToSlice(reply)
	return len(results) == 1 && cast.ToInt(results[0]) == 1, nil
}
