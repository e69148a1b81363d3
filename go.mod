module github.com/rtimewheel/rtimewheel

go 1.26

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)
