package redisclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
)

// clusterAttempts bounds how often one call is sent again after a
// redirection (MOVED, ASK), a "try again" answer (TRYAGAIN, CLUSTERDOWN,
// LOADING, READONLY from a demoted master) or a failure to connect. Each
// of those means the call did not run, so sending it again is safe.
const clusterAttempts = 16

// minRefreshInterval spaces out topology refreshes triggered by errors, so a
// node that is down does not cause a CLUSTER SLOTS per call.
const minRefreshInterval = 100 * time.Millisecond

// errNoTopology is the cause when no node of the cluster told its slots.
// IsUnavailable reports true for it.
var errNoTopology = errors.New("no node of the cluster answered CLUSTER SLOTS")

// slotMasters maps every hash slot to the address of its master ("" when no
// master is known for it): slot holds an index into addrs, whose first
// entry is "". Small indexes rather than strings keep a copy (one per
// MOVED learned) at 32 KB with nothing for the GC to scan.
type slotMasters struct {
	addrs []string // shared between copies: never changed in place
	slot  [redisc.HashSlots]uint16
}

// master returns the address of the master of slot, "" if unknown.
func (m *slotMasters) master(slot int) string { return m.addrs[m.slot[slot]] }

// newSlotMasters builds the map of a layout reported by redisc.
func newSlotMasters(layout *[redisc.HashSlots][]string) *slotMasters {
	m := &slotMasters{addrs: []string{""}}
	index := map[string]uint16{"": 0}
	for slot, nodes := range layout {
		if len(nodes) == 0 {
			continue
		}
		i, ok := index[nodes[0]]
		if !ok {
			i = uint16(len(m.addrs))
			index[nodes[0]] = i
			m.addrs = append(m.addrs, nodes[0])
		}
		m.slot[slot] = i
	}
	return m
}

// withMaster returns a copy of m with slot's master set to addr.
func (m *slotMasters) withMaster(slot int, addr string) *slotMasters {
	c := *m
	i := slices.Index(c.addrs, addr)
	if i < 0 {
		c.addrs = append(slices.Clip(c.addrs), addr) // a new array: m's stays as it is
		i = len(c.addrs) - 1
	}
	c.slot[slot] = uint16(i)
	return &c
}

// ClusterClient is a pooled client of a Redis Cluster built on
// github.com/mna/redisc. It routes every command by the slot of its first
// key, follows MOVED and ASK redirections, keeps the slot map up to date and
// holds one connection pool per node, each with the limits and timeouts of
// the ClientOption values (see NewClient). It is safe for concurrent use.
//
// It offers what Client offers to the wheel, with these differences:
//
//   - Eval requires keys, all of one slot: the call runs on that slot's
//     master. A call answered with a redirection or a "try again" error
//     (TRYAGAIN, CLUSTERDOWN, LOADING, READONLY), or that could not get a
//     connection, is sent again (at most 16 times, backing off, within
//     ctx), since it did not run; a call that fails after it was sent is
//     not, since it may have run.
//   - EvalBatch pipelines the calls of each master on one connection, the
//     masters in parallel: calls on one master run in call order, calls on
//     different masters in any order relative to each other.
//   - Do routes by its first argument, the key of single-key commands;
//     PING, TIME and other commands without a key go to any master.
//   - A context bounds waiting for a reply through its deadline only
//     (redisc connections do not watch cancellation); the read timeout
//     bounds it otherwise.
type ClusterClient struct {
	cluster     *redisc.Cluster
	seeds       []string
	readTimeout time.Duration

	masters       atomic.Pointer[slotMasters]
	mastersMu     sync.Mutex     // serializes stores to masters
	refreshMu     sync.Mutex     // guards inflight
	inflight      *refreshResult // the slot-map fetch under way, nil if none
	lastRefreshNs atomic.Int64
	closed        atomic.Bool
}

// NewClusterClient returns a client of the Redis Cluster that the seed nodes
// ("host:port") belong to; one reachable seed is enough. An empty password
// means no AUTH. Options are those of NewClient, applied to every node's
// pool; WithDB is refused, since a cluster has only database 0.
//
// Like NewClient it does not connect: the slot map is fetched by the first
// call (or by Refresh), so an unreachable cluster shows up as errors of the
// calls.
func NewClusterClient(seeds []string, password string, opts ...ClientOption) (*ClusterClient, error) {
	o := newOptions(opts)
	if len(seeds) == 0 {
		return nil, errors.New("redisclient: cluster: no seed node")
	}
	for _, s := range seeds {
		if _, port, err := net.SplitHostPort(s); err != nil || !validPort(port) {
			return nil, fmt.Errorf("redisclient: cluster: seed %q is not host:port", s)
		}
	}
	if o.db != 0 {
		return nil, fmt.Errorf("redisclient: cluster: database %d requested, but a Redis Cluster has only database 0", o.db)
	}
	c := &ClusterClient{seeds: slices.Clone(seeds), readTimeout: o.readTimeout}
	dialTimeout := o.dialTimeout
	c.cluster = &redisc.Cluster{
		StartupNodes: c.seeds,
		DialOptions:  o.dialOptions(password),
		CreatePool: func(address string, dialOpts ...redis.DialOption) (*redis.Pool, error) {
			return o.newPool(func(ctx context.Context) (redis.Conn, error) {
				ctx, cancel := context.WithTimeout(ctx, dialTimeout)
				defer cancel()
				return redis.DialContext(ctx, "tcp", address, dialOpts...)
			}), nil
		},
		PoolWaitTime: o.readTimeout,
		LayoutRefresh: func(_, layout [redisc.HashSlots][]string) {
			m := newSlotMasters(&layout)
			c.mastersMu.Lock()
			c.masters.Store(m)
			c.mastersMu.Unlock()
		},
	}
	return c, nil
}

// NewClusterClientFromURL returns a cluster client (see NewClusterClient) of
// the comma-separated seed nodes in raw, each "host:port" or a URL of the
// forms NewClientFromURL accepts. Credentials and TLS are taken from the
// first seed that names them; a database other than 0 is refused. Errors
// never contain a password.
func NewClusterClientFromURL(raw string, opts ...ClientOption) (*ClusterClient, error) {
	var seeds []string
	var creds endpoint
	for part := range strings.SplitSeq(raw, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		ep, err := parseEndpoint(part)
		if err != nil {
			return nil, err
		}
		if ep.db != 0 {
			return nil, fmt.Errorf("redisclient: cluster: seed %s names database %d, but a Redis Cluster has only database 0", ep.address, ep.db)
		}
		if creds.password == "" && ep.password != "" {
			creds.username, creds.password = ep.username, ep.password
		}
		creds.tls = creds.tls || ep.tls
		seeds = append(seeds, ep.address)
	}
	all := []ClientOption{WithUsername(creds.username)}
	if creds.tls {
		all = append(all, WithTLSConfig(nil))
	}
	return NewClusterClient(seeds, creds.password, append(all, opts...)...)
}

// String describes the client by its seed nodes. It never includes the
// password.
func (c *ClusterClient) String() string {
	return "redisclient.ClusterClient(" + strings.Join(c.seeds, ",") + ")"
}

// Refresh fetches the slot map from the cluster now. Calls do it by
// themselves when needed; Refresh is for start-up checks and tests.
func (c *ClusterClient) Refresh(ctx context.Context) error {
	if err := c.usable(ctx); err != nil {
		return fmt.Errorf("redisclient: cluster refresh: %w", err)
	}
	return c.refresh(ctx, false)
}

// refreshResult is the outcome of one slot-map fetch, known once done is
// closed.
type refreshResult struct {
	done chan struct{}
	err  error
}

// refresh fetches the slot map, or joins the fetch already under way, and
// waits for it within ctx; onlyIfNone returns at once when a map is known.
// One fetch at a time: callers that arrive while a seed does not answer
// share its wait instead of queueing their own behind it.
func (c *ClusterClient) refresh(ctx context.Context, onlyIfNone bool) error {
	c.refreshMu.Lock()
	if onlyIfNone && c.masters.Load() != nil {
		c.refreshMu.Unlock()
		return nil
	}
	r := c.inflight
	if r == nil {
		r = &refreshResult{done: make(chan struct{})}
		c.inflight = r
		c.lastRefreshNs.Store(time.Now().UnixNano())
		go func() {
			r.err = c.fetchSlots()
			c.refreshMu.Lock()
			c.inflight = nil
			c.refreshMu.Unlock()
			close(r.done)
		}()
	}
	c.refreshMu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fetchSlots asks the cluster for its slot map (redisc's LayoutRefresh
// hook stores it).
func (c *ClusterClient) fetchSlots() error {
	if err := c.cluster.Refresh(); err != nil {
		if c.closed.Load() {
			return ErrClosed
		}
		return fmt.Errorf("redisclient: cluster refresh: %w: %v", errNoTopology, err)
	}
	return nil
}

// refreshSoon starts a slot-map fetch in the background, at most once per
// minRefreshInterval. Errors that may mean a node went away call it.
func (c *ClusterClient) refreshSoon() {
	if time.Since(time.Unix(0, c.lastRefreshNs.Load())) < minRefreshInterval {
		return
	}
	go func() { _ = c.refresh(context.Background(), false) }() // the next call that fails tries again
}

// usable checks the context and the client, and fetches the slot map if
// none is known yet.
func (c *ClusterClient) usable(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.masters.Load() == nil {
		return c.refresh(ctx, true)
	}
	return nil
}

// learnFrom updates the slot map after an answer meaning the call did not
// run: a MOVED names the slot's new master; TRYAGAIN (a slot migrating)
// says nothing new; anything else may mean the topology changed.
func (c *ClusterClient) learnFrom(err error) {
	switch msg := err.Error(); {
	case strings.HasPrefix(msg, "MOVED"):
		c.learnMoved(err)
	case strings.HasPrefix(msg, "TRYAGAIN"):
	default:
		c.refreshSoon()
	}
}

// learnMoved points the slot named by a MOVED answer at the master it
// names, at once. redisc refreshes the whole map in the background after a
// MOVED, but until that lands (and when the node it asks has not heard of
// the change yet) batches would go on being grouped by the old map.
func (c *ClusterClient) learnMoved(err error) {
	re := redisc.ParseRedir(err)
	if re == nil || re.Type != "MOVED" {
		return
	}
	c.mastersMu.Lock()
	defer c.mastersMu.Unlock()
	old := c.masters.Load()
	if old == nil {
		old = newSlotMasters(&[redisc.HashSlots][]string{})
	}
	if old.master(re.NewSlot) == re.Addr {
		return
	}
	c.masters.Store(old.withMaster(re.NewSlot, re.Addr))
}

// masterOf returns the address of the master of key's slot, "" if unknown.
func (c *ClusterClient) masterOf(key string) string {
	if m := c.masters.Load(); m != nil {
		return m.master(redisc.Slot(key))
	}
	return ""
}

// Masters returns the addresses of the masters in the current slot map,
// sorted. It fetches the map if none is known yet.
func (c *ClusterClient) Masters(ctx context.Context) ([]string, error) {
	if err := c.usable(ctx); err != nil {
		return nil, fmt.Errorf("redisclient: cluster masters: %w", err)
	}
	m := c.masters.Load()
	set := make(map[string]bool)
	for _, i := range m.slot {
		if i != 0 {
			set[m.addrs[i]] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// timeout is how long the next reply may take: the read timeout, or less
// when ctx's deadline comes first.
func (c *ClusterClient) timeout(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	d := c.readTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return 0, context.DeadlineExceeded
		}
		d = min(d, left)
	}
	return d, nil
}

// doTimeout runs one command on conn, its reply awaited at most timeout
// when conn supports it (redisc's retrying connection does not; its own
// read timeout bounds it).
func doTimeout(conn redis.Conn, timeout time.Duration, cmd string, args ...any) (any, error) {
	if cwt, ok := conn.(redis.ConnWithTimeout); ok {
		return cwt.DoWithTimeout(timeout, cmd, args...)
	}
	return conn.Do(cmd, args...)
}

// notRun reports whether err is a reply meaning the command did not run and
// may succeed when sent again, maybe elsewhere.
func notRun(err error) bool {
	if redisc.ParseRedir(err) != nil {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	code, _, _ := strings.Cut(string(re), " ")
	switch code {
	case "TRYAGAIN", "CLUSTERDOWN", "LOADING", "READONLY", "MASTERDOWN":
		return true
	}
	return false
}

// onSlot runs run on a connection to the master of key's slot, sending it
// again (see clusterAttempts) while the answer says it did not run.
func (c *ClusterClient) onSlot(ctx context.Context, key string, run func(conn redis.Conn, timeout time.Duration) (any, error)) (any, error) {
	var lastErr error
	for attempt := range clusterAttempts {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, fmt.Errorf("%w (last: %w)", err, lastErr)
			}
		}
		if err := c.usable(ctx); err != nil {
			return nil, err
		}
		timeout, err := c.timeout(ctx)
		if err != nil {
			return nil, err
		}
		conn := c.cluster.Get()
		if err := redisc.BindConn(conn, key); err != nil {
			conn.Close()
			lastErr = fmt.Errorf("connect: %w", err)
			c.refreshSoon()
			continue
		}
		v, err := run(conn, timeout)
		if re := redisc.ParseRedir(err); re != nil && re.Type == "ASK" {
			// The slot is migrating: redisc's retrying connection sends
			// ASKING to the node named and the command after it.
			if rc, rerr := redisc.RetryConn(conn, 3, 10*time.Millisecond); rerr == nil {
				v, err = run(rc, timeout)
			}
		}
		conn.Close()
		switch {
		case err == nil:
			return v, nil
		case notRun(err):
			lastErr = err
			c.learnFrom(err)
			continue
		default:
			if IsUnavailable(err) {
				c.refreshSoon()
			}
			return nil, withContext(ctx, err)
		}
	}
	return nil, lastErr
}

// backoff waits before attempt (1, 2, ...): nothing after a redirection's
// first retry, then 10 ms doubling up to 320 ms, within ctx.
func backoff(ctx context.Context, attempt int) error {
	if attempt == 1 {
		return ctx.Err()
	}
	d := min(10*time.Millisecond<<(attempt-2), 320*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// keyless reports whether cmd takes no key, so any node may serve it.
func keyless(cmd string, args []any) bool {
	if len(args) == 0 {
		return true
	}
	switch strings.ToUpper(cmd) {
	case "PING", "ECHO", "TIME", "INFO", "DBSIZE", "SCRIPT", "CLUSTER", "CONFIG", "MEMORY", "COMMAND":
		return true
	}
	return false
}

// Do runs one command and returns its raw reply (see the package
// documentation). A command with a key must have it as its first argument;
// it runs on the master of that key's slot, following redirections. Commands
// without a key (PING, TIME, INFO, ...) run on any master. Commands that
// change the state of the connection are refused, as by Client.Do.
func (c *ClusterClient) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	if err := checkCommand(cmd); err != nil {
		return nil, err
	}
	if keyless(cmd, args) {
		if err := c.usable(ctx); err != nil {
			return nil, fmt.Errorf("redisclient: do %s: %w", cmd, err)
		}
		timeout, err := c.timeout(ctx)
		if err != nil {
			return nil, fmt.Errorf("redisclient: do %s: %w", cmd, err)
		}
		conn := c.cluster.Get()
		defer conn.Close()
		if err := redisc.BindConn(conn); err != nil {
			return nil, fmt.Errorf("redisclient: do %s: connect: %w", cmd, withContext(ctx, err))
		}
		v, err := doTimeout(conn, timeout, cmd, args...)
		if err != nil {
			return nil, fmt.Errorf("redisclient: do %s: %w", cmd, withContext(ctx, err))
		}
		return v, nil
	}
	key := fmt.Sprint(args[0])
	if b, ok := args[0].([]byte); ok {
		key = string(b)
	}
	v, err := c.onSlot(ctx, key, func(conn redis.Conn, timeout time.Duration) (any, error) {
		return doTimeout(conn, timeout, cmd, args...)
	})
	if err != nil {
		return nil, fmt.Errorf("redisclient: do %s: %w", cmd, err)
	}
	return v, nil
}

// Ping checks that every master of the slot map answers PING.
func (c *ClusterClient) Ping(ctx context.Context) error {
	_, err := c.DoEachMaster(ctx, "PING")
	return err
}

// DoEachMaster runs cmd on every master of the current slot map and returns
// the replies by master address. It fails if any master fails; the replies
// of the others are returned with the error. It is meant for operations and
// tests (DBSIZE, INFO memory), not for the wheel.
func (c *ClusterClient) DoEachMaster(ctx context.Context, cmd string, args ...any) (map[string]any, error) {
	if err := c.usable(ctx); err != nil {
		return nil, fmt.Errorf("redisclient: do %s on each master: %w", cmd, err)
	}
	out := make(map[string]any)
	var errs []error
	err := c.cluster.EachNode(false, func(addr string, conn redis.Conn) error {
		timeout, err := c.timeout(ctx)
		if err != nil {
			return err
		}
		v, err := doTimeout(conn, timeout, cmd, args...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, withContext(ctx, err)))
			return nil
		}
		out[addr] = v
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		c.refreshSoon()
		return out, fmt.Errorf("redisclient: do %s on each master: %w", cmd, errors.Join(errs...))
	}
	return out, nil
}

// evalOn runs script on conn by EVALSHA, falling back to EVAL on NOSCRIPT.
func evalOn(conn redis.Conn, timeout time.Duration, script *Script, keys []string, args []any) (any, error) {
	ka := keysAndArgs(keys, args)
	v, err := doTimeout(conn, timeout, "EVALSHA", append([]any{script.Hash()}, ka...)...)
	if e, ok := err.(redis.Error); ok && isNoScript(e) {
		v, err = doTimeout(conn, timeout, "EVAL", append([]any{script.src}, ka...)...)
	}
	return v, err
}

// sameSlot checks that keys is not empty and names one slot.
func sameSlot(keys []string) error {
	if len(keys) == 0 {
		return errors.New("no keys: a script on a cluster needs its keys to be routed")
	}
	slot := redisc.Slot(keys[0])
	for _, k := range keys[1:] {
		if redisc.Slot(k) != slot {
			return fmt.Errorf("keys %q and %q are in different slots", keys[0], k)
		}
	}
	return nil
}

// Eval runs script with keys and args on the master of the keys' slot and
// returns its raw reply, as Client.Eval does. The keys must share one slot
// (use a hash tag); the call is refused otherwise, without touching Redis.
func (c *ClusterClient) Eval(ctx context.Context, script *Script, keys []string, args ...any) (any, error) {
	if err := script.check(); err != nil {
		return nil, fmt.Errorf("redisclient: eval %s: %w", script.label(), err)
	}
	if err := sameSlot(keys); err != nil {
		return nil, fmt.Errorf("redisclient: eval %s: %w", script.name, err)
	}
	v, err := c.onSlot(ctx, keys[0], func(conn redis.Conn, timeout time.Duration) (any, error) {
		return evalOn(conn, timeout, script, keys, args)
	})
	if err != nil {
		return nil, fmt.Errorf("redisclient: eval %s: %w", script.name, err)
	}
	return v, nil
}

// EvalBatch runs calls and returns one Reply per call, in call order, with
// the contract of Client.EvalBatch: a call's own failure goes into its
// Reply.Err; a non-nil error means the batch failed as a whole and any of
// its calls may or may not have run.
//
// The calls of each master are pipelined on one connection, the masters in
// parallel. Calls that did not run (answered NOSCRIPT, with a redirection
// or a "try again" error, or whose master could not be reached) are sent
// again in a later round, grouped by the refreshed slot map, backing off as
// Eval does; NOSCRIPT calls then go as EVAL with the source. Each call's
// keys must share one slot.
func (c *ClusterClient) EvalBatch(ctx context.Context, calls []ScriptCall) ([]Reply, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	if err := c.usable(ctx); err != nil {
		return nil, fmt.Errorf("redisclient: eval batch of %d calls: %w", len(calls), err)
	}
	replies := make([]Reply, len(calls))
	var pending []int
	for i, call := range calls {
		if err := call.Script.check(); err != nil {
			replies[i].Err = fmt.Errorf("redisclient: eval %s: %w", call.Script.label(), err)
			continue
		}
		if err := sameSlot(call.Keys); err != nil {
			replies[i].Err = fmt.Errorf("redisclient: eval %s: %w", call.Script.name, err)
			continue
		}
		pending = append(pending, i)
	}
	withSource := make(map[int]bool) // calls answered NOSCRIPT: send EVAL next
	var lastErr error
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == clusterAttempts {
			return nil, fmt.Errorf("redisclient: eval batch of %d calls: %d did not run after %d rounds: %w", len(calls), len(pending), attempt, lastErr)
		}
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return nil, fmt.Errorf("redisclient: eval batch of %d calls: %w (last: %w)", len(calls), err, lastErr)
			}
		}
		groups := make(map[string][]int) // master address -> call indexes
		for _, i := range pending {
			addr := c.masterOf(calls[i].Keys[0])
			groups[addr] = append(groups[addr], i)
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			errs     []error
			again    []int
			noScript []int
		)
		for _, idx := range groups {
			wg.Go(func() {
				notRunYet, noScriptHere, asked, err := c.pipeline(ctx, calls, idx, withSource, replies)
				if err == nil {
					err = c.evalAsked(ctx, calls, asked, replies)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				again = append(again, notRunYet...)
				noScript = append(noScript, noScriptHere...)
			})
		}
		wg.Wait()
		for _, i := range noScript {
			withSource[i] = true
		}
		again = append(again, noScript...)
		if len(errs) > 0 {
			return nil, fmt.Errorf("redisclient: eval batch of %d calls: %w", len(calls), errors.Join(errs...))
		}
		slices.Sort(again)
		pending = again
		if len(pending) > 0 {
			lastErr = replies[pending[0]].Err
			for _, i := range pending {
				replies[i] = Reply{}
			}
		}
	}
	return replies, nil
}

// evalAsked runs, one by one, the calls at idx that their slot's master
// answered with ASK (the slot is migrating and their keys have left): Eval
// follows ASK to the importing node. A call's own failure goes into its
// Reply; a call that could not be run fails the batch.
func (c *ClusterClient) evalAsked(ctx context.Context, calls []ScriptCall, idx []int, replies []Reply) error {
	for _, i := range idx {
		call := calls[i]
		v, err := c.Eval(ctx, call.Script, call.Keys, call.Args...)
		var re redis.Error
		switch {
		case err == nil:
			replies[i] = Reply{Value: v}
		case errors.As(err, &re) && !notRun(re):
			replies[i] = Reply{Err: err} // the script's own error, wrapped as Eval wraps it
		default:
			return fmt.Errorf("on a migrating slot: %w", err)
		}
	}
	return nil
}

// pipeline sends the calls at idx on one connection, bound to the slot of
// the first, and stores their replies. It returns the calls that did not
// run: answered with a redirection other than ASK or "try again" (their
// Reply.Err holds the answer meanwhile), NOSCRIPT, or ASK. When no
// connection can be had, nothing was sent and every call is returned as
// not run.
func (c *ClusterClient) pipeline(ctx context.Context, calls []ScriptCall, idx []int, withSource map[int]bool, replies []Reply) (notRunYet, noScript, asked []int, err error) {
	timeout, err := c.timeout(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	conn := c.cluster.Get()
	defer conn.Close()
	if err := redisc.BindConn(conn, calls[idx[0]].Keys[0]); err != nil {
		c.refreshSoon()
		for _, i := range idx {
			replies[i].Err = fmt.Errorf("connect: %w", err)
		}
		return idx, nil, nil, nil
	}
	for _, i := range idx {
		call := calls[i]
		cmd, first := "EVALSHA", call.Script.Hash()
		if withSource[i] {
			cmd, first = "EVAL", call.Script.src
		}
		if err := conn.Send(cmd, append([]any{first}, keysAndArgs(call.Keys, call.Args)...)...); err != nil {
			return nil, nil, nil, fmt.Errorf("send: %w", withContext(ctx, err))
		}
	}
	if err := conn.Flush(); err != nil {
		c.refreshSoon()
		return nil, nil, nil, fmt.Errorf("send: %w", withContext(ctx, err))
	}
	for _, i := range idx {
		v, err := conn.(redis.ConnWithTimeout).ReceiveWithTimeout(timeout)
		var re redis.Error
		switch {
		case err == nil:
			replies[i] = Reply{Value: v}
		case errors.As(err, &re) && isNoScript(re):
			noScript = append(noScript, i)
		case errors.As(err, &re) && strings.HasPrefix(string(re), "ASK "):
			asked = append(asked, i)
		case errors.As(err, &re) && notRun(re):
			replies[i].Err = re
			notRunYet = append(notRunYet, i)
			c.learnFrom(re)
		case errors.As(err, &re):
			replies[i] = reply(calls[i].Script, re)
		default:
			c.refreshSoon()
			return nil, nil, nil, withContext(ctx, err)
		}
	}
	return notRunYet, noScript, asked, nil
}

// LoadScripts loads scripts into the script cache of every master, as
// Client.LoadScripts does for one server.
func (c *ClusterClient) LoadScripts(ctx context.Context, scripts ...*Script) error {
	var errs []error
	for _, s := range scripts {
		if err := s.check(); err != nil {
			errs = append(errs, fmt.Errorf("redisclient: load script %s: %w", s.label(), err))
			continue
		}
		replies, err := c.DoEachMaster(ctx, "SCRIPT", "LOAD", s.src)
		if err != nil {
			errs = append(errs, fmt.Errorf("redisclient: load script %s: %w", s.name, err))
			continue
		}
		for _, v := range replies {
			if err := loaded(s, v); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errors.Join(errs...)
}

// Stats returns a snapshot of each node's pool, by node address.
func (c *ClusterClient) Stats() map[string]PoolStats {
	out := make(map[string]PoolStats)
	for addr, s := range c.cluster.Stats() {
		out[addr] = PoolStats{
			ActiveCount:  s.ActiveCount,
			IdleCount:    s.IdleCount,
			WaitCount:    s.WaitCount,
			WaitDuration: s.WaitDuration,
		}
	}
	return out
}

// Close closes every node's pool and makes every later call fail with
// ErrClosed. It is safe to call more than once.
func (c *ClusterClient) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.cluster.Close()
}
