package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// firePhase measures the raw HTTP rate against the receiver, then has
// cfg.fireWorkers workers fire cfg.fireTasks tasks due within one second and
// reports how fast and how precisely they arrived.
func (e *env) firePhase(ctx context.Context) error {
	cfg := e.cfg
	// The plain client with as many requests in flight as the workers
	// allow, and with few (where Go's HTTP on loopback does best); the
	// better of the two is the machine's HTTP limit.
	conc := cfg.fireWorkers * cfg.fireConc
	rawSame := fmt.Sprintf("raw HTTP, %d in flight (as the workers)", conc)
	rawFew := fmt.Sprintf("raw HTTP, %d in flight", rawFewInFlight)
	// The limit is measured in rounds before the burst and again after it,
	// and read as the median of all of them: the machine's HTTP rate drifts
	// by more than the figure's margin over a minute.
	rawBefore, err := e.rawHTTP(ctx, conc, rawFewInFlight)
	if err != nil {
		return err
	}
	raw := max(median(rawBefore[0]), median(rawBefore[1])) // sizes the wait below

	ns := e.namespace("fire")
	var engineEarly atomic.Int64
	var workers []*rtimewheel.RTimeWheel
	var clients []io.Closer
	stopAll := func() { // Stop hands back what was pulled, so close Redis after
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(w.Stop)
		}
		wg.Wait()
		for _, c := range clients {
			c.Close()
		}
		workers, clients = nil, nil
	}
	defer stopAll()
	for range cfg.fireWorkers {
		rc := e.client()
		clients = append(clients, rc)
		workers = append(workers, rtimewheel.NewRTimeWheel(rc, httpclient.NewClient(), e.options(ns, rtimewheel.WithConcurrency(cfg.fireConc),
			rtimewheel.WithCallbackHook(func(ev rtimewheel.CallbackEvent) {
				if ev.FiredAt.Before(ev.DueAt) {
					engineEarly.Add(1)
				}
			}))...))
	}
	rc := e.client()
	defer rc.Close()
	client := rtimewheel.NewRTimeWheel(rc, nil, e.options(ns, rtimewheel.WithoutWorker())...)
	defer client.Stop()

	// Due from first on, spread evenly over one second; first leaves time
	// to add them all at the rate AddTasks showed (or a guess of 20k/s).
	n := cfg.fireTasks
	addRate := max(e.res.value(fmt.Sprintf(rowAddTasks, cfg.batchConc, cfg.batchSize)), 20_000)
	lead := 3*time.Second + time.Duration(1.5*float64(n)/addRate*float64(time.Second))
	first := time.Now().Add(lead).Truncate(time.Millisecond)
	err = e.addSpread(ctx, client, n, "firing: adding tasks", func(i int) rtimewheel.TaskAt {
		at := first.Add(time.Duration(i) * time.Second / time.Duration(n)).Truncate(time.Millisecond)
		return rtimewheel.TaskAt{Key: firePrefix + strconv.Itoa(i), ExecuteAt: at}
	})
	if err != nil {
		return err
	}
	if time.Now().After(first) {
		e.res.note("firing: adding took longer than the %s planned; the first tasks were overdue when added", lead.Round(time.Millisecond))
	}

	// Wait for all, for at most a minute after they are due plus four times
	// what the raw HTTP rate needs for them.
	limit := first.Add(time.Second + time.Minute + time.Duration(4*float64(n)/raw*float64(time.Second)))
	stop := e.p.watch(func() string {
		if d := time.Until(first); d > 0 {
			return fmt.Sprintf("firing: %d tasks added, due in %.1f s", n, d.Seconds())
		}
		return fmt.Sprintf("firing: %d/%d delivered", e.recv.delivered.Load(), n)
	})
	for e.recv.delivered.Load() < int64(n) && time.Now().Before(limit) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond) // polling the receiver's counter
	}
	stop()
	if err := ctx.Err(); err != nil {
		return err
	}
	stopAll()

	rawAfter, err := e.rawHTTP(ctx, conc, rawFewInFlight)
	if err != nil {
		return err
	}
	raws := []float64{median(append(rawBefore[0], rawAfter[0]...)), median(append(rawBefore[1], rawAfter[1]...))}
	e.res.add(row{Name: rawFew, Value: raws[1], Unit: "requests/s"})
	e.res.add(row{Name: rawSame, Value: raws[0], Unit: "requests/s"})
	rawName := rawFew
	if raws[0] > raws[1] {
		rawName = rawSame
	}
	e.res.note("firing: raw HTTP is the median of %d rounds before the burst and %d after; %d in flight: %s before, %s after",
		len(rawBefore[1]), len(rawAfter[1]), rawFewInFlight, format(median(rawBefore[1]), "requests/s"), format(median(rawAfter[1]), "requests/s"))

	delivered := e.recv.delivered.Load()
	var late []time.Duration
	early, dups := 0, 0
	for i := range n {
		h := e.recv.hits[i].Load()
		if h == 0 {
			continue
		}
		dups += int(h - 1)
		l := time.Duration(e.recv.late[i].Load())
		if l < 0 {
			early++
		}
		late = append(late, l)
	}
	slices.Sort(late)
	span := time.Duration(e.recv.last.Load() - first.UnixNano())
	fired := 0.0
	if delivered > 0 && span > 0 {
		fired = float64(delivered) / span.Seconds()
	}

	r := e.res
	prefix := fmt.Sprintf("fire %d due in 1 s, %d workers: ", n, cfg.fireWorkers)
	allOK := delivered == int64(n) && early == 0
	r.add(row{Name: prefix + "delivered", Value: float64(delivered), Unit: "tasks", Target: "all, none early", Met: &allOK})
	r.add(row{Name: prefix + "early (receiver's clock)", Value: float64(early), Unit: "tasks"})
	r.add(row{Name: prefix + "early (worker's clock)", Value: float64(engineEarly.Load()), Unit: "tasks"})
	r.add(row{Name: prefix + "duplicates", Value: float64(dups), Unit: "tasks"})
	r.add(row{Name: prefix + "first due to last delivered", Value: span.Seconds(), Unit: "s"})
	r.against(prefix+"callbacks/s", fired, "callbacks/s", rawName, 0.5)
	r.against(prefix+"callbacks/s (vs raw, same in-flight)", fired, "callbacks/s", rawSame, 0)
	r.add(row{Name: prefix + "lateness p50", Value: ms(percentile(late, 50)), Unit: "ms"})
	r.add(row{Name: prefix + "lateness p99", Value: ms(percentile(late, 99)), Unit: "ms"})
	if len(late) > 0 {
		r.add(row{Name: prefix + "lateness max", Value: ms(late[len(late)-1]), Unit: "ms"})
	}
	if b := e.recv.bad.Load(); b > 0 {
		r.note("firing: %d callbacks had a key or Rtw-Scheduled-At the receiver could not read", b)
	}
	if fired > 0.9*float64(n) {
		r.note("firing: the callbacks kept up with the schedule (%d due per second), so callbacks/s is bounded by the schedule, not by the machine", n)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rawFewInFlight is the second concurrency the raw HTTP rate is measured at.
const rawFewInFlight = 64

// rawHTTP measures what a plain Go HTTP client achieves against the
// receiver with each of concs requests in flight, interleaved round by
// round: the same method, body size and number of headers as a callback.
// It returns each concurrency's value of every round.
func (e *env) rawHTTP(ctx context.Context, concs ...int) ([][]float64, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: slices.Max(concs)}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	url := e.recv.url + "/raw"
	body := []byte(e.body)
	op := func(ctx context.Context, _ int) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(httpclient.HeaderTaskKey, "raw")
		req.Header.Set(httpclient.HeaderAttempt, "1")
		req.Header.Set(httpclient.HeaderScheduledAt, "2026-11-22T08:00:00.250Z")
		resp, err := c.Do(req)
		if err != nil {
			return 0, fmt.Errorf("raw http: %w", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return 1, nil
	}
	var trials []trial
	for _, conc := range concs {
		trials = append(trials, trial{fmt.Sprintf("raw HTTP, %d in flight", conc),
			func(ctx context.Context) (float64, error) { return rate(ctx, conc, e.cfg.duration, op) }})
	}
	return interleaveRounds(ctx, e.p, e.cfg.rounds, trials...)
}
