package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"tradesvc/infra/leakcheck"
)

// childArgs, set in the environment, makes the test binary run as the tradesvc command with
// these arguments (space-separated), so a test can watch the real process exit.
const childArgs = "TRADESVC_TEST_AS_MAIN"

// TestMain runs the binary as tradesvc when asked (childArgs), and otherwise runs the
// tests and fails them when they leave a goroutine running.
func TestMain(m *testing.M) {
	if args := os.Getenv(childArgs); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, strings.Fields(args), os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	leakcheck.Main(m)
}
