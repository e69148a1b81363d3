// Command rtimewheel runs the rtimewheel service and talks to it.
//
//	rtimewheel serve [flags]          run the HTTP API and/or a worker
//	rtimewheel add|get|remove|dlq ... talk to a running server's HTTP API
//
// API.md (the external contract) and README.md describe
// every flag, environment variable and endpoint.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes of every subcommand.
const (
	exitOK       = 0 // success
	exitFailure  = 1 // a server error, an unreachable Redis or server, any other failure
	exitUsage    = 2 // bad flags, arguments or values
	exitNotFound = 3 // the server answered 404 not_found (CLI subcommands)
)

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

const topUsage = `usage:
  rtimewheel serve [flags]                run the HTTP API and/or a worker
  rtimewheel add --key K --url U [flags]  schedule a callback
  rtimewheel get KEY                      show a task
  rtimewheel remove KEY                   cancel a task
  rtimewheel dlq list|retry KEY|delete KEY  manage dead letters

Run "rtimewheel <command> -h" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, stop, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the subcommand in args and returns the process exit code.
// ctx ends on SIGINT or SIGTERM; stopSignals restores the default signal
// handling, so a second signal during a graceful shutdown kills the process.
func run(ctx context.Context, stopSignals func(), args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		err = runServe(ctx, stopSignals, rest, stdout, stderr)
	case "add", "get", "remove", "dlq":
		err = runCLI(ctx, cmd, rest, stdout, os.Getenv)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, topUsage)
		return exitOK
	default:
		err = usagef("unknown command %q (want serve, add, get, remove or dlq)", cmd)
	}
	return report(err, stderr)
}

// report prints err as one line on stderr and maps it to an exit code.
func report(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, errHelpShown) {
		return exitOK
	}
	fmt.Fprintf(stderr, "rtimewheel: %v\n", err)
	var usage usageError
	var apiErr *apiError
	switch {
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &apiErr) && apiErr.Status == 404:
		return exitNotFound
	default:
		return exitFailure
	}
}

// errHelpShown means -h printed the usage: exit 0 without a message.
var errHelpShown = errors.New("help shown")
