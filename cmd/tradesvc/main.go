// Command tradesvc runs the trading service and its admin commands. Every admin command acts
// on the running service (same configuration and run directory), prints JSON on stdout, and
// reports errors on stderr with a non-zero exit status.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"tradesvc/infra/config"
	"tradesvc/infra/mt5/remote"
)

const usage = `usage: tradesvc <command> [flags]

commands:
  serve [--roles gateway,executor,relay,projector,sim]  run the service (all roles by default)
  migrate                                          apply Postgres and ClickHouse migrations, create Kafka topics
  keys create --logins 1001,1002 [--read-only] [--allow-ip CIDR,...]
  keys list | keys revoke --api-key K | keys scope --api-key K --logins ...
  admin trading --on | --off                       the trading switch (-1017 while off)
  sim quote|feed|deposit|account|fault|logins ...  drive the trade-server simulator
  replay --projection NAME                         rebuild one read model from the Kafka log
  replay --verify                                  rebuild the trading read models into a scratch database and
                                                   compare them with the live ones row for row (exit 1 on a difference)
  audit --login L --client-order-id ID [--json]    an operation's story from the Kafka log (also --order T,
                                                   --position T, or --from T [--to T] [--login L])
  dlq list [--all] | dlq replay [--projection NAME] events parked in dead-letter topics; re-apply them
  call METHOD PATH [name=value ...]                one REST request with the key of .run/env, signed when needed
  bench result|ack|sustain|overload [flags]        load generator: latency, acceptance to FILLED, the floor

Every command also takes the configuration flags (see 'tradesvc serve --help') or their
TRADESVC_* environment variables.
`

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// subcommand is one command of tradesvc: its arguments after its name, and where it writes.
type subcommand[R any] func(ctx context.Context, args []string, stdout, stderr io.Writer) R

// commands report a failure as an error (printed, exit status 1; --help exits 0).
var commands = map[string]subcommand[error]{
	"serve":   func(ctx context.Context, args []string, _, stderr io.Writer) error { return serve(ctx, args, stderr) },
	"migrate": migrate,
	"keys":    keysCommand,
	"admin":   adminCommand,
	"replay":  replay,
	"audit":   auditCommand,
	"dlq":     dlqCommand,
}

// exitCommands choose their own exit status.
var exitCommands = map[string]subcommand[int]{
	"sim":   simCommand,
	"call":  callCommand,
	"bench": benchCommand,
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, rest := args[0], args[1:]
	if c, ok := exitCommands[cmd]; ok {
		return c(ctx, rest, stdout, stderr)
	}
	c, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "tradesvc: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	err := c(ctx, rest, stdout, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintf(stderr, "tradesvc %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// loadConfig parses the configuration flags together with a command's own flags.
func loadConfig(name string, args []string, stderr io.Writer, own func(*flag.FlagSet)) (config.Config, error) {
	fs := flag.NewFlagSet("tradesvc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if own != nil {
		own(fs)
	}
	return config.Load(fs, args, os.Getenv)
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

// simCommand drives the running simulator through its admin API; the address and token come
// from the same configuration (TRADESVC_SIM_ADDR or TRADESVC_SIM_LISTEN, RUN_DIR/sim.token).
func simCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := config.FromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "tradesvc sim: %v\n", err)
		return 1
	}
	addr := cfg.SimAddr
	if addr == "" {
		addr = cfg.SimListen
	}
	return remote.RunSimCommand(ctx, addr, filepath.Join(cfg.RunDir, "sim.token"), args, stdout, stderr)
}
