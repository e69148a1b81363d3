package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rtimewheel/rtimewheel/httpclient"
)

// firePrefix starts the key of every task of the firing phase; the rest of
// the key is the task's index.
const firePrefix = "fire-"

// receiver is the HTTP server the callbacks (path /hook) and the raw HTTP
// limit (path /raw) go to. For tasks of the firing phase it records, per
// task, how often it arrived and how late.
type receiver struct {
	url  string
	srv  *http.Server
	ln   net.Listener
	hits []atomic.Int32
	late []atomic.Int64 // arrival - Rtw-Scheduled-At, ns, of the first arrival
	// delivered counts first arrivals; last is the latest of them (unix ns).
	delivered atomic.Int64
	last      atomic.Int64
	bad       atomic.Int64 // callbacks the receiver could not attribute
}

func startReceiver(n int) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start receiver: %w", err)
	}
	r := &receiver{url: "http://" + ln.Addr().String(), ln: ln,
		hits: make([]atomic.Int32, n), late: make([]atomic.Int64, n)}
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", r.hook)
	mux.HandleFunc("/raw", func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) hook(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	io.Copy(io.Discard, req.Body)
	w.WriteHeader(http.StatusNoContent)
	key := req.Header.Get(httpclient.HeaderTaskKey)
	idx, ok := strings.CutPrefix(key, firePrefix)
	if !ok {
		return // a task of another phase (they are not due during the run)
	}
	i, err := strconv.Atoi(idx)
	scheduled, perr := time.Parse(time.RFC3339Nano, req.Header.Get(httpclient.HeaderScheduledAt))
	if err != nil || perr != nil || i < 0 || i >= len(r.hits) {
		r.bad.Add(1)
		return
	}
	if r.hits[i].Add(1) == 1 {
		r.late[i].Store(int64(now.Sub(scheduled)))
		r.delivered.Add(1)
		for {
			last := r.last.Load()
			if now.UnixNano() <= last || r.last.CompareAndSwap(last, now.UnixNano()) {
				break
			}
		}
	}
}

func (r *receiver) close() { r.srv.Close() }
