// Package rtimewheel is a Redis-backed, distributed scheduler of HTTP
// callbacks: "call this URL, with this method, headers and JSON body, at this
// time".
//
// Tasks live in per-minute slices of sorted sets in Redis. Any number of
// stateless workers (an RTimeWheel started by NewRTimeWheel) pull the tasks
// that fall due before their next tick under a lease, fire each callback at
// its exact millisecond from a local timer, and acknowledge, retry with
// backoff, or dead-letter it. A task never fires before its time, fires
// within milliseconds after it while a worker runs, and is not lost while
// Redis keeps its data: a worker that dies mid-callback has its tasks taken
// over when the lease ends, and tasks that fell due while no worker ran fire
// as soon as one starts.
//
// docs/design.md in the repository describes the key layout and the delivery
// protocol step by step.
package rtimewheel
