package rtimewheel_test

import (
	"github.com/rtimewheel/rtimewheel/lua"
	"github.com/rtimewheel/rtimewheel/redisclient"
)

func scriptsForTest() []*redisclient.Script { return lua.New().All() }
