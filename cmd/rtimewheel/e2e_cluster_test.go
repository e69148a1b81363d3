package main

// Process-level tests on a real Redis Cluster: the one named by
// RTW_TEST_REDIS_CLUSTER (comma-separated seeds; .ci/run starts 3 masters
// with a replica each). They are skipped without it.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

// requireCluster returns the seeds of the test cluster and an admin client
// of it, or skips the test.
func requireCluster(t *testing.T) (string, *redisclient.ClusterClient) {
	t.Helper()
	requireE2E(t)
	seeds := os.Getenv("RTW_TEST_REDIS_CLUSTER")
	if seeds == "" {
		t.Skip("process-level cluster test skipped: set RTW_TEST_REDIS_CLUSTER=host:port,... (.ci/run does)")
	}
	admin, err := redisclient.NewClusterClientFromURL(seeds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	return seeds, admin
}

// dueByMaster counts the tasks waiting in the slices of namespace ns on each
// master of the cluster.
func dueByMaster(t *testing.T, admin *redisclient.ClusterClient, ns string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := admin.DoEachMaster(ctx, "KEYS", "{"+ns+":*}:due")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	for master, reply := range keys {
		out[master] = 0
		for _, key := range cast.ToSlice(reply) {
			n, err := redis.Int(admin.Do(ctx, "ZCARD", cast.ToString(key)))
			if err != nil {
				t.Fatal(err)
			}
			out[master] += n
		}
	}
	return out
}

// TestE2EClusterThreeServesSpreadOverMasters: three serve processes on a
// Redis Cluster; 3000 tasks due over 70 s each fire once, never early, with
// p99 lateness ≤ 25 ms, and the waiting tasks sit on every master.
func TestE2EClusterThreeServesSpreadOverMasters(t *testing.T) {
	seeds, admin := requireCluster(t)
	ns := fmt.Sprintf("e2e-cluster-%x", rand.Uint32())
	receiver := newCallbackLog(t)
	common := []string{"--redis-cluster", seeds, "--namespace", ns}
	servers := []*serveProcess{
		startServe(t, "serve-1", common...),
		startServe(t, "serve-2", common...),
		startServe(t, "serve-3", common...),
	}
	tasks := planTasks("spread", 3000, time.Now().Add(3*time.Second), 70*time.Second)
	var r deliveryReport
	var spread map[string]int
	stolen := stolenDuring(func() {
		submit(t, servers, receiver.server.URL+"/hook", tasks)
		spread = dueByMaster(t, admin, ns)
		waitAllReceived(t, receiver, tasks, time.Until(tasks[len(tasks)-1].Due)+15*time.Second)
		watchForStragglers(1500 * time.Millisecond)
		r = checkDeliveries(receiver, tasks)
	})
	total, _ := receiver.counts()
	p99 := percentile(r.Lateness, 99)
	t.Logf("cluster, 3 serve processes, %d tasks over 70s: %d callbacks; lost %d, duplicated %d, early %d; lateness p50 %v p99 %v max %v (host stole %.1f%% of the CPU); waiting tasks by master after submit: %v",
		len(tasks), total, r.Lost, r.Duplicated, r.Early,
		percentile(r.Lateness, 50), p99, percentile(r.Lateness, 100), 100*stolen, spread)
	if r.Lost != 0 || r.Duplicated != 0 || r.Early != 0 || total != len(tasks) {
		t.Errorf("lost %d, duplicated %d, early %d, callbacks %d; want 0, 0, 0, %d", r.Lost, r.Duplicated, r.Early, total, len(tasks))
	}
	if p99 > 25*time.Millisecond {
		t.Errorf("lateness p99 = %v, want <= 25ms", p99)
	}
	if len(spread) < 3 {
		t.Errorf("waiting tasks on %d masters (%v), want 3", len(spread), spread)
	}
	for master, n := range spread {
		if n == 0 {
			t.Errorf("no waiting task on master %s: %v", master, spread)
		}
	}
}

// TestE2EClusterFailoverLosesNothing: while three serve processes fire a
// burst and the API takes new tasks, CLUSTER FAILOVER promotes the replica
// of a master holding tasks. Every task fires, none early, and every POST
// made during the switch is stored (the switch is retried, not surfaced).
func TestE2EClusterFailoverLosesNothing(t *testing.T) {
	seeds, admin := requireCluster(t)
	ns := fmt.Sprintf("e2e-failover-%x", rand.Uint32())
	receiver := newCallbackLog(t)
	common := []string{"--redis-cluster", seeds, "--namespace", ns, "--lease", "5s"}
	servers := []*serveProcess{
		startServe(t, "serve-1", common...),
		startServe(t, "serve-2", common...),
		startServe(t, "serve-3", common...),
	}
	tasks := planTasks("burst", 1500, time.Now().Add(3*time.Second), 8*time.Second)
	submit(t, servers, receiver.server.URL+"/hook", tasks)

	// The master holding the most waiting tasks hands over to its replica.
	spread := dueByMaster(t, admin, ns)
	var master string
	for m, n := range spread {
		if master == "" || n > spread[master] {
			master = m
		}
	}
	replica := replicaOf(t, master)
	waitReplicaInSync(t, replica)

	// Single tasks posted during the switch, round-robin over the servers.
	var (
		mu      sync.Mutex
		posted  []plannedTask
		refused []string
	)
	stopPosting := make(chan struct{})
	var posting sync.WaitGroup
	posting.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stopPosting:
				return
			case <-time.After(10 * time.Millisecond):
			}
			task := plannedTask{Key: fmt.Sprintf("during-%04d", i), Due: ceilMillisecond(time.Now().Add(2 * time.Second))}
			server := servers[i%len(servers)]
			a, err := tryRequest("POST", server.base+"/v1/tasks", "", map[string]any{
				"key": task.Key, "callback_url": receiver.server.URL + "/hook", "execute_at": formatTime(task.Due),
			})
			mu.Lock()
			switch {
			case err != nil:
				refused = append(refused, fmt.Sprintf("%s: %v", task.Key, err))
			case a.Status == http.StatusCreated:
				posted = append(posted, task)
			default:
				refused = append(refused, fmt.Sprintf("%s: %d %s", task.Key, a.Status, strings.TrimSpace(string(a.Body))))
			}
			mu.Unlock()
		}
	})

	time.Sleep(time.Until(tasks[0].Due.Add(2 * time.Second))) // mid-burst: a test step, not a synchronisation
	switchStart := time.Now()
	replicaClient := redisclient.NewClient("tcp", replica, "")
	defer replicaClient.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := replicaClient.Do(ctx, "CLUSTER", "FAILOVER"); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", replica, err)
	}
	eventually(t, 10*time.Second, replica+" to become master", func() bool {
		role, err := redis.Values(replicaClient.Do(ctx, "ROLE"))
		return err == nil && len(role) > 0 && cast.ToString(role[0]) == "master"
	})
	switched := time.Since(switchStart)
	time.Sleep(time.Second) // keep posting on the new topology for a while
	close(stopPosting)
	posting.Wait()

	all := append(copyTasks(tasks), posted...)
	waitAllReceived(t, receiver, all, time.Until(tasks[len(tasks)-1].Due)+15*time.Second)
	watchForStragglers(1500 * time.Millisecond)
	r := checkDeliveries(receiver, all)
	total, _ := receiver.counts()
	t.Logf("CLUSTER FAILOVER %s -> %s mid-burst (switched in %v); %d burst tasks + %d posted during the switch: %d callbacks; lost %d, duplicated %d, early %d; POSTs refused %d; lateness p50 %v p99 %v max %v",
		master, replica, switched.Round(time.Millisecond), len(tasks), len(posted), total, r.Lost, r.Duplicated, r.Early, len(refused),
		percentile(r.Lateness, 50), percentile(r.Lateness, 99), percentile(r.Lateness, 100))
	if r.Lost != 0 || r.Early != 0 {
		t.Errorf("lost %d, early %d; want 0, 0", r.Lost, r.Early)
	}
	if len(refused) != 0 {
		t.Errorf("%d POSTs refused during the switch, want 0: %v", len(refused), refused[:min(5, len(refused))])
	}
	if len(posted) == 0 {
		t.Error("no POST was made during the switch")
	}
}

// copyTasks copies tasks, so appending to the copy leaves tasks alone.
func copyTasks(tasks []plannedTask) []plannedTask { return append([]plannedTask(nil), tasks...) }

// replicaOf returns the address of a replica of the master at addr,
// waiting up to 20 s for one to attach (a cluster just created has none yet).
func replicaOf(t *testing.T, addr string) string {
	t.Helper()
	c := redisclient.NewClient("tcp", addr, "")
	defer c.Close()
	var replica string
	eventually(t, 20*time.Second, "a replica of "+addr, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		role, err := redis.Values(c.Do(ctx, "ROLE"))
		if err != nil || len(role) < 3 {
			return false
		}
		replicas, _ := redis.Values(role[2], nil)
		if len(replicas) == 0 {
			return false
		}
		r, _ := redis.Strings(replicas[0], nil)
		replica = r[0] + ":" + r[1]
		return true
	})
	return replica
}

// waitReplicaInSync waits until the replica at addr has its link to its
// master up and no sync running: one still loading a full sync (a master
// demoted by an earlier failover test) refuses CLUSTER FAILOVER.
func waitReplicaInSync(t *testing.T, addr string) {
	t.Helper()
	c := redisclient.NewClient("tcp", addr, "")
	defer c.Close()
	eventually(t, 20*time.Second, addr+" in sync with its master", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := redis.String(c.Do(ctx, "INFO", "replication"))
		return err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0")
	})
}
