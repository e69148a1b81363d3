package redisclient_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

func ExampleNewClusterClientFromURL() {
	// miniredis answers CLUSTER SLOTS as a one-node cluster; give the seed
	// nodes of a real cluster instead, e.g. "10.0.0.1:7000,10.0.0.2:7000".
	m, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	c, err := redisclient.NewClusterClientFromURL(m.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// Keys of one script call share a hash tag, so they share a slot.
	move := redisclient.NewScript("move", `
		redis.call('ZREM', KEYS[1], ARGV[1])
		return redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])`)
	ctx := context.Background()
	calls := []redisclient.ScriptCall{
		{Script: move, Keys: []string{"{orders:1}:due", "{orders:1}:lease"}, Args: []any{"order-42", 1000}},
		{Script: move, Keys: []string{"{orders:2}:due", "{orders:2}:lease"}, Args: []any{"order-43", 2000}},
	}
	replies, err := c.EvalBatch(ctx, calls)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range replies {
		fmt.Println(cast.ToInt(r.Value), r.Err)
	}
	masters, _ := c.Masters(ctx)
	fmt.Println(len(masters), "master")
	// Output:
	// 1 <nil>
	// 1 <nil>
	// 1 master
}
