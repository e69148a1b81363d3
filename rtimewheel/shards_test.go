package rtimewheel_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/rtimewheel/rtimewheel/rtimewheel"
)

// Without WithShards a wheel asks Redis: 12 shards on a cluster, 1 on a
// standalone server. A later wheel of the namespace configured otherwise
// adopts the stored count, so both find each other's tasks.
func TestShardCountFollowsTheRedisModeAndIsPinned(t *testing.T) {
	e := newEnv(t)
	want := rtimewheel.DefaultShards
	if e.cluster != nil {
		want = rtimewheel.DefaultClusterShards
	}
	first := e.wheel(nil, rtimewheel.WithoutWorker())
	if got := first.Shards(); got != want {
		t.Fatalf("first wheel: %d shards, want %d", got, want)
	}
	other := e.wheel(nil, rtimewheel.WithoutWorker(), rtimewheel.WithShards(want+4))
	if got := other.Shards(); got != want {
		t.Fatalf("wheel configured with %d shards uses %d, want the stored %d", want+4, got, want)
	}
	ctx := context.Background()
	at := time.Now().Add(time.Hour)
	if err := first.AddTask(ctx, "pinned", task("http://127.0.0.1:9/hook", nil), at); err != nil {
		t.Fatal(err)
	}
	if _, err := other.GetTask(ctx, "pinned"); err != nil {
		t.Fatalf("the other wheel does not find the task: %v", err)
	}
}

// A wheel made while Redis is down does not guess a shard count: its
// operations fail as unavailable, and work once Redis is back.
func TestShardCountIsReadOnceRedisIsBack(t *testing.T) {
	e := newEnv(t)
	e.requireMini()
	e.mini.Close()
	w := e.wheel(nil, rtimewheel.WithoutWorker())
	if got := w.Shards(); got != 0 {
		t.Fatalf("with Redis down the wheel claims %d shards", got)
	}
	ctx := context.Background()
	at := time.Now().Add(time.Hour)
	if err := w.AddTask(ctx, "k", task("http://127.0.0.1:9/hook", nil), at); !errors.Is(err, rtimewheel.ErrUnavailable) {
		t.Fatalf("AddTask with Redis down: %v, want ErrUnavailable", err)
	}
	if err := w.AddTask(ctx, "k", &rtimewheel.RTaskElement{}, at); !errors.Is(err, rtimewheel.ErrInvalidTask) {
		t.Fatalf("invalid AddTask with Redis down: %v, want ErrInvalidTask first", err)
	}
	if err := e.mini.Restart(); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, 10*time.Second, "AddTask to work again", func() bool {
		return w.AddTask(ctx, "k", task("http://127.0.0.1:9/hook", nil), at) == nil
	})
	if got := w.Shards(); got != rtimewheel.DefaultShards {
		t.Fatalf("after Redis came back: %d shards, want %d", got, rtimewheel.DefaultShards)
	}
}

// infoFails is a RedisClient whose INFO fails as if Redis were out of
// reach, while every other command works.
type infoFails struct{ rtimewheel.RedisClient }

func (c infoFails) Do(ctx context.Context, cmd string, args ...any) (any, error) {
	if cmd == "INFO" {
		return nil, syscall.ECONNRESET
	}
	return c.RedisClient.Do(ctx, cmd, args...)
}

// A failed INFO is not taken for "standalone": that guess would pin 1 shard
// for every wheel of a namespace on a cluster. The count stays unset until
// INFO answers.
func TestShardCountIsNotGuessedWhenInfoFails(t *testing.T) {
	e := newEnv(t)
	w := rtimewheel.NewRTimeWheel(infoFails{e.redis}, nil, rtimewheel.WithNamespace(e.ns), rtimewheel.WithoutWorker(),
		rtimewheel.WithLogger(testLogger(t)))
	t.Cleanup(w.Stop)
	if got := w.Shards(); got != 0 {
		t.Fatalf("with INFO failing the wheel pinned %d shards", got)
	}
	if n, err := e.redis.Do(context.Background(), "EXISTS", e.ns+":shards"); err != nil || n != int64(0) {
		t.Fatalf("the shard count key was written: EXISTS = %v, %v", n, err)
	}
}
