// Package browsertest drives the dashboard of rtimewheel serve in headless
// Chromium. It is a module of its own, so that `go test ./...` of the main
// module needs no browser and no chromedp; .ci/run runs it with
// `go test` in this directory. It skips when no Chromium is installed.
package browsertest
