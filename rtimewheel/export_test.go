package rtimewheel

// Halt stops the wheel dead, as a crashed process would: no more pulls, no
// hand-back, callbacks in flight are cut off and their outcomes never
// recorded. Tests use it to prove that a dead worker loses nothing.
func (w *RTimeWheel) Halt() {
	w.stopOnce.Do(func() {
		w.stopped.Store(true)
		if w.worker != nil {
			w.worker.stop(false)
		}
	})
}
