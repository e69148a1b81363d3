package redisclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/mna/redisc"
)

// testCluster returns a cluster client of the cluster named by
// RTW_TEST_REDIS_CLUSTER (comma-separated seeds) when set, with m nil;
// otherwise of a fresh miniredis m, which answers CLUSTER SLOTS as a
// one-node cluster owning every slot.
func testCluster(t *testing.T) (*ClusterClient, *miniredis.Miniredis) {
	t.Helper()
	seeds := os.Getenv("RTW_TEST_REDIS_CLUSTER")
	var m *miniredis.Miniredis
	if seeds == "" {
		m = miniredis.RunT(t)
		seeds = m.Addr()
	}
	c, err := NewClusterClientFromURL(seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, m
}

// requireRealCluster skips a test that needs several masters.
func requireRealCluster(t *testing.T) {
	t.Helper()
	if os.Getenv("RTW_TEST_REDIS_CLUSTER") == "" {
		t.Skip("needs a real Redis Cluster: set RTW_TEST_REDIS_CLUSTER=host:port,... (.ci/run does)")
	}
}

// clusterKeys returns n keys with distinct hash tags under a prefix unique
// to the test, deleted at the end of the test.
func clusterKeys(t *testing.T, c *ClusterClient, n int) []string {
	t.Helper()
	prefix := "rtw-test:" + randHex(t)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("{%s:%d}:k", prefix, i)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, k := range keys {
			_, _ = c.Do(ctx, "DEL", k)
		}
	})
	return keys
}

var setAndEcho = NewScript("set_and_echo", `
-- KEYS[1..n]: keys to set; ARGV[1]: value. Reply: the value.
for _, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1]) end
return ARGV[1]`)

func TestClusterEvalBatchRoutesEveryCallToItsSlot(t *testing.T) {
	c, _ := testCluster(t)
	ctx := testCtx(t)
	keys := clusterKeys(t, c, 200)

	calls := make([]ScriptCall, len(keys))
	for i, k := range keys {
		calls[i] = ScriptCall{Script: setAndEcho, Keys: []string{k, k + ":twin"}, Args: []any{fmt.Sprint("v", i)}}
	}
	t.Cleanup(func() {
		for _, k := range keys {
			_, _ = c.Do(context.Background(), "DEL", k+":twin")
		}
	})
	replies, err := c.EvalBatch(ctx, calls)
	if err != nil {
		t.Fatalf("EvalBatch: %v", err)
	}
	for i, r := range replies {
		want := fmt.Sprint("v", i)
		if got, err := redis.String(r.Value, r.Err); err != nil || got != want {
			t.Fatalf("reply %d = %q, %v; want %q", i, got, err, want)
		}
		if got, err := redis.String(c.Do(ctx, "GET", keys[i]+":twin")); err != nil || got != want {
			t.Fatalf("GET %s = %q, %v; want %q", keys[i], got, err, want)
		}
	}
}

func TestClusterEvalRefusesCrossSlotKeys(t *testing.T) {
	c, m := testCluster(t)
	ctx := testCtx(t)
	keys := clusterKeys(t, c, 2)
	if redisc.Slot(keys[0]) == redisc.Slot(keys[1]) {
		t.Skip("the random tags fell in one slot")
	}
	_, err := c.Eval(ctx, setAndEcho, keys, "x")
	if err == nil || !strings.Contains(err.Error(), "different slots") {
		t.Fatalf("Eval across slots: err = %v, want a 'different slots' error", err)
	}
	replies, err := c.EvalBatch(ctx, []ScriptCall{{Script: setAndEcho, Keys: keys, Args: []any{"x"}}, {Script: setAndEcho, Args: []any{"y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if replies[0].Err == nil || replies[1].Err == nil || !strings.Contains(replies[1].Err.Error(), "no keys") {
		t.Fatalf("batch replies = %+v, want per-call errors", replies)
	}
	if m != nil && len(m.Keys()) != 0 {
		t.Fatalf("refused calls wrote %v", m.Keys())
	}
	if n, err := redis.Int(c.Do(ctx, "EXISTS", keys[0])); err != nil || n != 0 {
		t.Fatalf("EXISTS %s = %d, %v: a refused call wrote", keys[0], n, err)
	}
}

func TestClusterScriptErrorsStayPerCall(t *testing.T) {
	c, _ := testCluster(t)
	ctx := testCtx(t)
	keys := clusterKeys(t, c, 3)
	boom := NewScript("boom", "return redis.error_reply('BOOM ' .. KEYS[1])")
	replies, err := c.EvalBatch(ctx, []ScriptCall{
		{Script: setAndEcho, Keys: keys[:1], Args: []any{"a"}},
		{Script: boom, Keys: keys[1:2]},
		{Script: setAndEcho, Keys: keys[2:], Args: []any{"c"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var re redis.Error
	if !errors.As(replies[1].Err, &re) || !strings.HasPrefix(string(re), "BOOM") || IsUnavailable(replies[1].Err) {
		t.Fatalf("reply 1 err = %v, want the script's BOOM error", replies[1].Err)
	}
	if replies[0].Err != nil || replies[2].Err != nil {
		t.Fatalf("other calls failed: %+v", replies)
	}
}

func TestClusterReloadsFlushedScripts(t *testing.T) {
	c, _ := testCluster(t)
	ctx := testCtx(t)
	keys := clusterKeys(t, c, 30)
	script := NewScript("fresh", "return 'fresh-"+randHex(t)+"'")
	if _, err := c.DoEachMaster(ctx, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Eval(ctx, script, keys[:1]); err != nil {
		t.Fatalf("Eval after SCRIPT FLUSH: %v", err)
	}
	if _, err := c.DoEachMaster(ctx, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	calls := make([]ScriptCall, len(keys))
	for i, k := range keys {
		calls[i] = ScriptCall{Script: script, Keys: []string{k}}
	}
	replies, err := c.EvalBatch(ctx, calls)
	if err != nil {
		t.Fatalf("EvalBatch after SCRIPT FLUSH: %v", err)
	}
	for i, r := range replies {
		if r.Err != nil {
			t.Fatalf("call %d: %v", i, r.Err)
		}
	}
	if err := c.LoadScripts(ctx, script); err != nil {
		t.Fatal(err)
	}
	exists, err := c.DoEachMaster(ctx, "SCRIPT", "EXISTS", script.Hash())
	if err != nil {
		t.Fatal(err)
	}
	for addr, v := range exists {
		if flags, _ := redis.Ints(v, nil); len(flags) != 1 || flags[0] != 1 {
			t.Fatalf("after LoadScripts, master %s says SCRIPT EXISTS %v", addr, v)
		}
	}
}

func TestClusterKeylessCommands(t *testing.T) {
	c, _ := testCluster(t)
	ctx := testCtx(t)
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	v, err := redis.Values(c.Do(ctx, "TIME"))
	if err != nil || len(v) != 2 {
		t.Fatalf("TIME = %v, %v", v, err)
	}
	if _, err := c.Do(ctx, "MULTI"); err == nil {
		t.Fatal("MULTI accepted on a pooled cluster client")
	}
}

func TestClusterSpreadsKeysOverMasters(t *testing.T) {
	requireRealCluster(t)
	c, _ := testCluster(t)
	ctx := testCtx(t)
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(masters) < 3 {
		t.Fatalf("masters = %v, want at least 3", masters)
	}
	keys := clusterKeys(t, c, 300)
	for _, k := range keys {
		if _, err := c.Do(ctx, "SET", k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	counts := make(map[string]int)
	for _, k := range keys {
		counts[c.masterOf(k)]++
	}
	for _, m := range masters {
		if counts[m] == 0 {
			t.Fatalf("no key on master %s: %v", m, counts)
		}
	}
	t.Logf("300 tagged keys over masters: %v", counts)
}

func TestClusterUnreachable(t *testing.T) {
	c, err := NewClusterClient([]string{"127.0.0.1:1"}, "", WithDialTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testCtx(t)
	start := time.Now()
	_, err = c.Eval(ctx, setAndEcho, []string{"k"}, "v")
	if !IsUnavailable(err) {
		t.Fatalf("Eval on no cluster: err = %v, want unavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Eval on no cluster took %v", d)
	}
	if _, err := NewClusterClient(nil, ""); err == nil {
		t.Fatal("no seeds accepted")
	}
	if _, err := NewClusterClient([]string{"nohost"}, ""); err == nil {
		t.Fatal("seed without port accepted")
	}
	if _, err := NewClusterClientFromURL("redis://:pw@127.0.0.1:7000/3"); err == nil || strings.Contains(err.Error(), "pw") {
		t.Fatalf("database 3 on a cluster: err = %v, want refusal without the password", err)
	}
	c.Close()
	if _, err := c.Do(ctx, "GET", "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: err = %v, want ErrClosed", err)
	}
}

// TestClusterFailoverLosesNoWrite runs CLUSTER FAILOVER on the replica of
// the master that holds a counter while writers increment it (by Eval and
// by EvalBatch; the new master has no script cached), and checks
// that every increment the client acknowledged is in the counter and that
// none failed: the switch is retried, not surfaced.
func TestClusterFailoverLosesNoWrite(t *testing.T) {
	requireRealCluster(t)
	c, _ := testCluster(t)
	ctx := testCtx(t)
	keys := clusterKeys(t, c, 2)
	key, other := keys[0], keys[1]
	incr := NewScript("incr", "return redis.call('INCR', KEYS[1])")
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	master := c.masterOf(key)

	replica := replicaOf(t, master)
	admin := NewClient("tcp", replica, "")
	defer admin.Close()
	waitReplicaInSync(t, admin, replica)

	var acked, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopWriters := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer stopWriters() // on every way out, so no writer logs after the test
	for writer := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				callCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				var err error
				if writer%2 == 0 {
					_, err = c.Eval(callCtx, incr, []string{key})
				} else { // a batch over two slots, one of them switching
					var replies []Reply
					replies, err = c.EvalBatch(callCtx, []ScriptCall{{Script: incr, Keys: []string{other}}, {Script: incr, Keys: []string{key}}})
					for _, r := range replies {
						err = errors.Join(err, r.Err)
					}
				}
				cancel()
				if err != nil {
					failed.Add(1)
					t.Logf("increment failed: %v", err)
					continue
				}
				acked.Add(1)
			}
		})
	}

	// A failover of the same master shortly after another (a test run with
	// -count) waits out the masters' vote lock (2 × node timeout): the
	// request is sent again every 5 s.
	deadline := time.Now().Add(20 * time.Second)
	var sent time.Time
	for ; ; time.Sleep(50 * time.Millisecond) {
		role, _ := redis.Values(admin.Do(ctx, "ROLE"))
		if len(role) > 0 && fmt.Sprint(string(role[0].([]byte))) == "master" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s did not become master", replica)
		}
		if time.Since(sent) > 5*time.Second {
			if _, err := admin.Do(ctx, "CLUSTER", "FAILOVER"); err != nil {
				t.Fatalf("CLUSTER FAILOVER on %s: %v", replica, err)
			}
			sent = time.Now()
		}
	}
	before := acked.Load()
	for acked.Load() < before+200 && time.Now().Before(deadline.Add(5*time.Second)) {
		time.Sleep(20 * time.Millisecond)
	}
	stopWriters()

	got, err := redis.Int64(c.Do(ctx, "GET", key))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover %s -> %s: %d increments acknowledged, %d failed, counter %d", master, replica, acked.Load(), failed.Load(), got)
	if failed.Load() != 0 {
		t.Errorf("%d increments failed during the failover; want them retried", failed.Load())
	}
	if got < acked.Load() {
		t.Errorf("counter %d < %d acknowledged increments: writes lost", got, acked.Load())
	}
	// The map converges on the new master: a call that meets the old one
	// learns the MOVED at once, and a background refresh that read a node
	// not yet told of the switch is mended by the next call.
	for deadline := time.Now().Add(5 * time.Second); c.masterOf(key) != replica; {
		if time.Now().After(deadline) {
			t.Fatalf("client still routes the slot to %s, want the new master %s", c.masterOf(key), replica)
		}
		if _, err := c.Eval(ctx, incr, []string{key}); err != nil {
			t.Fatalf("increment after the failover: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReplicaInSync waits until the replica at addr has its link to its
// master up and no sync running: a replica still loading a full sync (one
// demoted by an earlier failover) refuses CLUSTER FAILOVER.
func waitReplicaInSync(t *testing.T, admin *Client, addr string) {
	t.Helper()
	ctx := testCtx(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := redis.String(admin.Do(ctx, "INFO", "replication"))
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not in sync with its master: %v\n%s", addr, err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicaOf returns the address of a replica of the master at addr,
// waiting up to 20 s for one to attach (a cluster just created has none yet).
func replicaOf(t *testing.T, addr string) string {
	t.Helper()
	admin := NewClient("tcp", addr, "")
	defer admin.Close()
	ctx := testCtx(t)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		// ROLE of a master: "master", offset, [[ip, port, offset], ...]
		role, err := redis.Values(admin.Do(ctx, "ROLE"))
		if err == nil && len(role) >= 3 {
			if replicas, _ := redis.Values(role[2], nil); len(replicas) > 0 {
				r, _ := redis.Strings(replicas[0], nil)
				return r[0] + ":" + r[1]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("master %s has no replica: ROLE %v, %v", addr, role, err)
		}
	}
}

// A MOVED answer re-points its slot at once, before any refresh, and
// leaves every other slot alone; ASK (a one-off) changes nothing.
func TestMovedAnswerUpdatesTheSlotMap(t *testing.T) {
	c, _ := testCluster(t)
	if err := c.Refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	key, other := "{moved-a}:k", "{moved-b}:k"
	slot := redisc.Slot(key)
	if redisc.Slot(other) == slot {
		t.Fatal("test keys share a slot")
	}
	before := c.masterOf(other)

	c.learnMoved(redis.Error("ASK " + strconv.Itoa(slot) + " 127.0.0.1:1"))
	if got := c.masterOf(key); got == "127.0.0.1:1" {
		t.Errorf("ASK re-pointed the slot to %s", got)
	}
	c.learnMoved(redis.Error("MOVED " + strconv.Itoa(slot) + " 127.0.0.1:1"))
	if got := c.masterOf(key); got != "127.0.0.1:1" {
		t.Errorf("after MOVED the slot's master is %q, want 127.0.0.1:1", got)
	}
	if got := c.masterOf(other); got != before {
		t.Errorf("MOVED of slot %d changed slot %d: %q, was %q", slot, redisc.Slot(other), got, before)
	}
}

// TestEvalBatchFollowsAskDuringMigration migrates a slot by hand (MIGRATING
// on its master, IMPORTING on another) and runs batches on a key of it
// that has left: the master answers ASK, and the call must run on the
// importing node, not fail after retrying the old one.
func TestEvalBatchFollowsAskDuringMigration(t *testing.T) {
	requireRealCluster(t)
	c, _ := testCluster(t)
	ctx := testCtx(t)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	key := clusterKeys(t, c, 1)[0]
	slot := redisc.Slot(key)
	source := c.masterOf(key)
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	target := masters[0]
	if target == source {
		target = masters[1]
	}
	sourceAdmin, targetAdmin := NewClient("tcp", source, ""), NewClient("tcp", target, "")
	t.Cleanup(func() { sourceAdmin.Close(); targetAdmin.Close() }) // after the undo below
	sourceID, err1 := redis.String(sourceAdmin.Do(ctx, "CLUSTER", "MYID"))
	targetID, err2 := redis.String(targetAdmin.Do(ctx, "CLUSTER", "MYID"))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Undo: the key written on the importing node goes, the slot
		// stays with its master.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := targetAdmin.pool.GetContext(ctx)
		if err == nil {
			_, _ = conn.Do("ASKING")
			_, _ = conn.Do("DEL", key)
			conn.Close()
		}
		_, err1 := targetAdmin.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE")
		_, err2 := sourceAdmin.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE")
		if err := errors.Join(err1, err2); err != nil {
			t.Errorf("slot %d left migrating, the cluster needs redis-cli --cluster fix: %v", slot, err)
		}
	})
	if _, err := targetAdmin.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", sourceID); err != nil {
		t.Fatal(err)
	}
	if _, err := sourceAdmin.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", targetID); err != nil {
		t.Fatal(err)
	}

	setGet := NewScript("set_get", "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])")
	replies, err := c.EvalBatch(ctx, []ScriptCall{{Script: setGet, Keys: []string{key}, Args: []any{"moved"}}})
	if err != nil {
		t.Fatalf("batch on a migrating slot: %v", err)
	}
	if got, err := redis.String(replies[0].Value, replies[0].Err); err != nil || got != "moved" {
		t.Fatalf("batch on a migrating slot: %q, %v; want \"moved\"", got, err)
	}
	// The key was written on the importing node, not the master (which
	// answers ASK for a key it does not hold).
	if n, err := redis.Int(sourceAdmin.Do(ctx, "EXISTS", key)); n != 0 || (err != nil && !strings.Contains(err.Error(), "ASK ")) {
		t.Errorf("key on the migrating master: EXISTS = %d, %v; want 0 or ASK", n, err)
	}
	conn, err := targetAdmin.pool.GetContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("ASKING"); err != nil {
		t.Fatal(err)
	}
	if got, err := redis.String(conn.Do("GET", key)); err != nil || got != "moved" {
		t.Errorf("key on the importing node: %q, %v; want \"moved\"", got, err)
	}
}

// Before the client knows a slot map, every call waits for the first fetch
// of it. A seed that never answers must not hold callers beyond their
// context, nor make them queue one read timeout after another.
func TestClusterFirstRefreshHonoursContext(t *testing.T) {
	const readTimeout = time.Minute
	c, err := NewClusterClient([]string{hungServer(t)}, "", WithReadTimeout(readTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := NewScript("one", "return 1")
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Eval(ctx, s, []string{"k"})
			if elapsed := time.Since(start); elapsed > readTimeout/2 {
				t.Errorf("returned after %v", elapsed)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want context.DeadlineExceeded", err)
			}
		})
	}
	wg.Wait()
}
