package redisclient_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cast"

	"github.com/rtimewheel/rtimewheel/redisclient"
)

func ExampleClient_Eval() {
	m, err := miniredis.Run() // stands in for a real Redis server
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	c := redisclient.NewClient("tcp", m.Addr(), "")
	defer c.Close()

	incr := redisclient.NewScript("incr-by", `return redis.call('INCRBY', KEYS[1], ARGV[1])`)
	ctx := context.Background()
	for _, by := range []int{2, 3} {
		v, err := c.Eval(ctx, incr, []string{"counter"}, by)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(cast.ToInt64(v))
	}
	// Output:
	// 2
	// 5
}

func ExampleClient_EvalBatch() {
	m, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	c := redisclient.NewClient("tcp", m.Addr(), "")
	defer c.Close()

	get := redisclient.NewScript("get-or-fail", `
local v = redis.call('GET', KEYS[1])
if not v then return redis.error_reply('NOTFOUND ' .. KEYS[1]) end
return v`)
	ctx := context.Background()
	if _, err := c.Do(ctx, "SET", "a", "1"); err != nil {
		fmt.Println(err)
		return
	}
	replies, err := c.EvalBatch(ctx, []redisclient.ScriptCall{
		{Script: get, Keys: []string{"a"}},
		{Script: get, Keys: []string{"b"}},
	})
	if err != nil { // the batch as a whole failed
		fmt.Println(err)
		return
	}
	for _, r := range replies {
		if r.Err != nil {
			fmt.Println("error:", r.Err)
			continue
		}
		fmt.Println("value:", cast.ToString(r.Value))
	}
	// Output:
	// value: 1
	// error: redisclient: eval get-or-fail: NOTFOUND b
}
