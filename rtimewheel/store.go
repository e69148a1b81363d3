package rtimewheel

import (
	"context"

	"github.com/rtimewheel/rtimewheel/httpclient"
	"github.com/rtimewheel/rtimewheel/redisclient"
)

// RedisClient is what the wheel needs from Redis. Every script call names
// keys of one hash slot; Do is used only for single-key commands, TIME and
// PING. *redisclient.Client implements it; a cluster client can too.
type RedisClient interface {
	Eval(ctx context.Context, script *redisclient.Script, keys []string, args ...any) (any, error)
	EvalBatch(ctx context.Context, calls []redisclient.ScriptCall) ([]redisclient.Reply, error)
	Do(ctx context.Context, cmd string, args ...any) (any, error)
}

// CallbackClient performs one callback attempt. *httpclient.Client
// implements it.
type CallbackClient interface {
	Call(ctx context.Context, cb httpclient.Callback) httpclient.Result
}

var (
	_ RedisClient    = (*redisclient.Client)(nil)
	_ CallbackClient = (*httpclient.Client)(nil)
)
