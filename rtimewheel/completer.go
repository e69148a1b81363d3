package rtimewheel

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

// completeBatch bounds the acks written in one round trip.
const completeBatch = 512

// ackRequest asks the completer to forget a delivered task; the result
// arrives on done.
type ackRequest struct {
	it   *leased
	done chan error
}

// completer writes acks in batches: one script call per slice and one per
// index bucket for all the acks of a batch, pipelined in one round trip.
// It is a group commit, as AddTask's queue is: an ack that finds the
// completer idle is written at once, and the acks that arrive while a batch
// is being written go out together as the next one. So a lone ack costs
// one round trip and no wait, and under load thousands of acks a second
// become a few calls. (A callback slot is held until its ack is written:
// a timed linger here would cap a worker at its concurrency per linger.)
//
// An add writes the slice entry before the index entry, so a task due at
// once can be fired and acked before its index entry exists; the ack then
// finds no entry to delete, and the add writes one afterwards that points
// at nothing. The completer keeps such acks and deletes their entries (by
// version) again indexWriteWait later.
type completer struct {
	w        *RTimeWheel
	requests chan ackRequest
	finished chan struct{}
	tidyWait time.Duration // how long after an ack an unwritten index entry is looked for again
}

// indexEntry names the index entry of one version of a task.
type indexEntry struct {
	key, version string
}

// lateEntry is an acked task whose index entry was not written yet.
type lateEntry struct {
	indexEntry
	at time.Time // when to delete it
}

// maxLateEntries bounds the acks kept for a later look at their index.
const maxLateEntries = 100_000

func newCompleter(w *RTimeWheel) *completer {
	c := &completer{w: w, requests: make(chan ackRequest, completeBatch), finished: make(chan struct{}), tidyWait: indexWriteWait}
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
	var late []lateEntry
	tidy := time.NewTimer(time.Hour)
	tidy.Stop()
	defer tidy.Stop()
	for {
		select {
		case first, ok := <-c.requests:
			if !ok {
				c.tidy(late) // last look, early rather than never
				return
			}
			wasEmpty := len(late) == 0
			for _, e := range c.write(c.collect(first)) {
				late = append(late, lateEntry{e, time.Now().Add(c.tidyWait)})
			}
			if over := len(late) - maxLateEntries; over > 0 {
				late = late[over:] // those entries stay behind: memory, not a lost task
			}
			if wasEmpty && len(late) > 0 {
				tidy.Reset(c.tidyWait)
			}
		case <-tidy.C:
			n := 0
			for n < len(late) && !late[n].at.After(time.Now()) {
				n++
			}
			c.tidy(late[:n])
			late = slices.Delete(late, 0, n)
			if len(late) > 0 {
				tidy.Reset(time.Until(late[0].at))
			}
		}
	}
}

// collect returns first and the requests already waiting, up to
// completeBatch, without waiting for more.
func (c *completer) collect(first ackRequest) []ackRequest {
	batch := []ackRequest{first}
	for len(batch) < completeBatch {
		select {
		case req, ok := <-c.requests:
			if !ok {
				return batch
			}
			batch = append(batch, req)
		default:
			return batch
		}
	}
	return batch
}

// write acks a batch: the slice entries first, then the index entries,
// each only for the version delivered, in one pipeline. It returns the
// acked tasks that had no index entry yet.
func (c *completer) write(batch []ackRequest) []indexEntry {
	w := c.w
	var calls []redisclient.ScriptCall
	sliceCalls := make(map[sliceRef]int) // slice -> position in calls
	owner := make([][]int, 0, 8)         // position in calls -> requests it serves
	for i, req := range batch {
		it := req.it
		ref := sliceRef{it.minute, it.shard}
		pos, ok := sliceCalls[ref]
		if !ok {
			pos = len(calls)
			sliceCalls[ref] = pos
			calls = append(calls, redisclient.ScriptCall{Script: w.scripts.Ack, Keys: w.slice(it.minute, it.shard)})
			owner = append(owner, nil)
		}
		calls[pos].Args = append(calls[pos].Args, it.key, it.version)
		owner[pos] = append(owner[pos], i)
	}
	entries := make([]indexEntry, len(batch))
	for i, req := range batch {
		entries[i] = indexEntry{req.it.key, req.it.version}
	}
	indexCalls, indexOwner := c.indexDeletes(entries)
	first := len(calls)
	calls = append(calls, indexCalls...)
	owner = append(owner, indexOwner...)

	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	errs := make([]error, len(batch))
	var missing []indexEntry
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
			continue
		}
		if pos >= first {
			results := cast.ToSlice(replies[pos].Value)
			for j, i := range owner[pos] {
				if j < len(results) && cast.ToInt(results[j]) == casMissing {
					missing = append(missing, entries[i])
				}
			}
		}
	}
	for i, req := range batch {
		req.done <- errs[i]
	}
	return missing
}

// indexDeletes returns the index_cas calls that delete entries, one per
// index bucket, and for each call the positions in entries it serves, in
// the order of its replies.
func (c *completer) indexDeletes(entries []indexEntry) ([]redisclient.ScriptCall, [][]int) {
	w := c.w
	var calls []redisclient.ScriptCall
	var owner [][]int
	buckets := make(map[string]int) // index key -> position in calls
	for i, e := range entries {
		bucket := w.keys.Index(e.key)
		pos, ok := buckets[bucket]
		if !ok {
			pos = len(calls)
			buckets[bucket] = pos
			calls = append(calls, redisclient.ScriptCall{Script: w.scripts.IndexCAS, Keys: []string{bucket}})
			owner = append(owner, nil)
		}
		calls[pos].Args = append(calls[pos].Args, e.key, e.version, "")
		owner[pos] = append(owner[pos], i)
	}
	return calls, owner
}

// tidy deletes the index entries of acked tasks that their adds wrote after
// the ack, each only if it still names the acked version. It is one more
// try: an entry still missing (the add failed, or is slower yet) is left.
func (c *completer) tidy(late []lateEntry) {
	if len(late) == 0 {
		return
	}
	entries := make([]indexEntry, len(late))
	for i, e := range late {
		entries[i] = e.indexEntry
	}
	calls, _ := c.indexDeletes(entries)
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if _, err := c.w.redis.EvalBatch(ctx, calls); err != nil {
		c.w.log.Debug("rtimewheel: could not delete the index entries of acked tasks; they stay behind, pointing at nothing",
			"tasks", len(entries), "error", err)
	}
}

// Answers of index_cas.lua for one entry.
const (
	casMoved   = 1  // the entry named the version and was moved or deleted
	casOther   = 0  // the entry names another version
	casMissing = -1 // there is no entry
)

// indexCAS moves key's index entry to loc (or deletes it when loc is
// empty) if the entry still names version, and says which of casMoved,
// casOther and casMissing happened.
func (w *RTimeWheel) indexCAS(ctx context.Context, key, version, loc string) (int, error) {
	reply, err := w.redis.Eval(ctx, w.scripts.IndexCAS, []string{w.keys.Index(key)}, key, version, loc)
	if err != nil {
		return 0, err
	}
	results := cast.ToSlice(reply)
	if len(results) != 1 {
		return 0, fmt.Errorf("index_cas: malformed reply %v", reply)
	}
	return cast.ToInt(results[0]), nil
}
