package rtimewheel

import (
	"context"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/util"
)

// nearPollEvery is how often a worker looks whether another process added
// a task due within the horizon it already pulled.
const nearPollEvery = 20 * time.Millisecond

// signalNear tells every worker of the namespace that a task due at dueMs
// was added, when dueMs falls within two ticks (the horizon a worker may
// already have pulled): it bumps a counter the workers poll, so the task
// is pulled at once wherever it was added, also through a handle without a
// worker. A failure is only logged: the task is stored and the next
// regular pull takes it, up to a tick late.
func (w *RTimeWheel) signalNear(ctx context.Context, dueMs int64) {
	if dueMs > util.Millis(w.now())+2*w.cfg.tick.Milliseconds() {
		return
	}
	if w.worker != nil {
		w.worker.added(dueMs)
	}
	n, err := w.redis.Do(ctx, "INCR", w.keys.Near())
	if err != nil {
		w.log.Warn("rtimewheel: could not signal a task due soon to the other workers; it may fire up to a tick late", "error", err)
		return
	}
	if w.worker != nil {
		w.worker.nearOwn.Store(cast.ToInt64(n))
	}
}

// nearLoop polls the counter signalNear bumps and pulls at once when it
// changed, until the worker stops pulling.
func (wk *worker) nearLoop() {
	defer wk.loops.Done()
	if wk.w.cfg.tick <= nearPollEvery {
		return // the regular pulls come as often
	}
	ticker := time.NewTicker(nearPollEvery)
	defer ticker.Stop()
	last := int64(-1) // not read yet
	for {
		ctx, cancel := context.WithTimeout(wk.loopCtx, time.Second)
		reply, err := wk.w.redis.Do(ctx, "GET", wk.w.keys.Near())
		cancel()
		if err == nil { // failures show in the pull loop
			seen := cast.ToInt64(cast.ToString(reply)) // 0 while the key does not exist
			// Pull for a change (on the first look, for any bump: one may
			// have come between this worker's first pull and now), unless
			// it is only this handle's own bump, which added() pulled for.
			own := seen == last+1 && seen == wk.nearOwn.Load()
			if seen != last && (last >= 0 || seen > 0) && !own {
				wk.pullNow()
			}
			last = seen
		}
		select {
		case <-wk.loopCtx.Done():
			return
		case <-ticker.C:
		}
	}
}
