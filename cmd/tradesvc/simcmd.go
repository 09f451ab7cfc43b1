package main

import (
	"context"
	"io"

	"tradesvc/infra/mt5/remote"
)

// runSimCommand runs `tradesvc sim <command> ...` (args are the words after "sim") against
// the running simulator's admin endpoint at simAddr (empty: 127.0.0.1:8444), authenticated
// with the token in tokenPath (RUN_DIR/sim.token, written by the sim role). It prints JSON
// on stdout, errors on stderr, and returns the exit status (0 ok, 1 failed, 2 bad usage).
// The logic and its tests live in infra/mt5/remote (RunSimCommand / RunAdminCLI).
func runSimCommand(ctx context.Context, simAddr, tokenPath string, args []string, stdout, stderr io.Writer) int {
	return remote.RunSimCommand(ctx, simAddr, tokenPath, args, stdout, stderr)
}
