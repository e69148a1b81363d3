package rtimewheel_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// TestOneMinuteSpreadsOverMasters adds 100k tasks due within one minute on
// the cluster at RTW_TEST_REDIS_CLUSTER and checks that the masters hold
// them evenly: largest share / smallest share ≤ 1.5.
func TestOneMinuteSpreadsOverMasters(t *testing.T) {
	e := newEnv(t)
	if e.cluster == nil {
		t.Skip("needs a Redis Cluster: set RTW_TEST_REDIS_CLUSTER=host:port,... (.ci/run does)")
	}
	w := e.wheel(nil, rtimewheel.WithoutWorker())
	ctx := context.Background()
	minute := time.Now().Add(time.Hour).Truncate(time.Minute)
	const total, size = 100_000, 1000
	for start := 0; start < total; start += size {
		batch := make([]rtimewheel.TaskAt, size)
		for i := range batch {
			n := start + i
			batch[i] = rtimewheel.TaskAt{Key: fmt.Sprint("spread-", n), Task: benchTask(),
				ExecuteAt: minute.Add(time.Duration(n) * time.Minute / total)}
		}
		if err := w.AddTasks(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := e.cluster.DoEachMaster(ctx, "KEYS", "{"+e.ns+":*}:due")
	if err != nil {
		t.Fatal(err)
	}
	byMaster := make(map[string]int)
	sum := 0
	for master, reply := range keys {
		for _, key := range cast.ToSlice(reply) {
			byMaster[master] += e.count(cast.ToString(key))
		}
		sum += byMaster[master]
	}
	counts := slices.Collect(func(yield func(int) bool) {
		for _, n := range byMaster {
			if !yield(n) {
				return
			}
		}
	})
	largest, smallest := slices.Max(counts), slices.Min(counts)
	ratio := float64(largest) / float64(max(smallest, 1))
	t.Logf("100000 tasks due in one minute over %d masters: %v; largest/smallest = %.3f", len(byMaster), byMaster, ratio)
	if sum != total {
		t.Errorf("%d tasks waiting, want %d", sum, total)
	}
	if len(byMaster) < 3 || smallest == 0 || ratio > 1.5 {
		t.Errorf("spread %v: largest/smallest = %.2f, want every master used and ≤ 1.5", byMaster, ratio)
	}
}

// BenchmarkAddTaskStandaloneVsCluster runs AddTask with 32 goroutines on
// the standalone Redis at RTW_TEST_REDIS and on the cluster at
// RTW_TEST_REDIS_CLUSTER in the same run, each beside the raw EVALSHA of a
// one-ZADD script on the same servers; a side without its variable is
// skipped.
func BenchmarkAddTaskStandaloneVsCluster(b *testing.B) {
	sides := []struct{ name, env string }{{"standalone", "RTW_TEST_REDIS"}, {"cluster", "RTW_TEST_REDIS_CLUSTER"}}
	for _, side := range sides {
		b.Run(side.name, func(b *testing.B) {
			addr := os.Getenv(side.env)
			if addr == "" {
				b.Skipf("set %s", side.env)
			}
			var client interface {
				rtimewheel.RedisClient
				Close() error
			}
			if side.env == "RTW_TEST_REDIS" {
				client = redisclient.NewClient("tcp", addr, "")
			} else {
				c, err := redisclient.NewClusterClientFromURL(addr)
				if err != nil {
					b.Fatal(err)
				}
				client = c
			}
			defer client.Close()
			ns := fmt.Sprintf("bench%x", time.Now().UnixNano())
			w := rtimewheel.NewRTimeWheel(client, nil, rtimewheel.WithNamespace(ns), rtimewheel.WithoutWorker(), rtimewheel.WithLogger(testLogger(b)))
			defer w.Stop()
			ctx := context.Background()
			at := time.Now().Add(time.Hour)
			b.Run("raw-evalsha-parallel32", func(b *testing.B) {
				parallel32(b, func(i int64) error {
					key := fmt.Sprintf("{%s:raw:%d}:z", ns, i%64) // spread over slots, as the wheel's keys are
					_, err := client.Eval(ctx, rawZadd, []string{key}, i, fmt.Sprint("p", i))
					return err
				})
			})
			b.Run("addtask-parallel32", func(b *testing.B) {
				parallel32(b, func(i int64) error { return w.AddTask(ctx, fmt.Sprint("p", i), benchTask(), at) })
			})
			b.StopTimer()
			cleanNamespace(b, client, ns)
		})
	}
}

// cleanNamespace deletes the keys of namespace ns through client.
func cleanNamespace(b *testing.B, client rtimewheel.RedisClient, ns string) {
	ctx := context.Background()
	var keys []string
	if c, ok := client.(*redisclient.ClusterClient); ok {
		for _, pattern := range []string{ns + ":*", "{" + ns + ":*"} {
			replies, err := c.DoEachMaster(ctx, "KEYS", pattern)
			if err != nil {
				b.Fatal(err)
			}
			for _, reply := range replies {
				keys = append(keys, cast.ToStringSlice(cast.ToSlice(reply))...)
			}
		}
	} else {
		for _, pattern := range []string{ns + ":*", "{" + ns + ":*"} {
			reply, err := client.Do(ctx, "KEYS", pattern)
			if err != nil {
				b.Fatal(err)
			}
			keys = append(keys, cast.ToStringSlice(cast.ToSlice(reply))...)
		}
	}
	for _, k := range keys {
		if _, err := client.Do(ctx, "DEL", k); err != nil {
			b.Fatal(err)
		}
	}
}
