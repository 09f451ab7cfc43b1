package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/cmd/tradesvc/bench"
	"tradesvc/infra/config"
	"tradesvc/infra/kafka"
	"tradesvc/infra/keys"
	"tradesvc/infra/mt5/remote"
)

const benchUsage = `usage: tradesvc bench <scenario> [flags]

Offers load to the running service from this process, over HTTPS like a client, and reports
what a client sees. Load is open loop: orders go out on a fixed schedule whatever the earlier
answers, so a slow service shows as latency. It is spread over as many API keys as their rate
limits need (--keys FILE, --create-keys N|auto).

scenarios:
  result    POST /v1/order MARKET with newOrderRespType=RESULT at --rate (200/s) for --duration
            (60s): answers by status and code, latency p50/p90/p99/max from when each was due
  ack       the same with ACK at 1000/s, plus acceptance-to-FILLED: each order's DEAL on its key's
            user data stream
  sustain   the highest ACK rate whose acceptance-to-FILLED p99 stays under --bound (1s), by
            --step (10s) loads from --from up
  overload  ACK at --multiple (3) times the sustained rate (--sustained, or found first as sustain
            does) for --duration (30s): every answer counted by code (-1008, -1021, 429, 5xx...)

Every run first measures the floor with the service's own settings (one HTTPS round trip, two
chained Kafka hops, one Postgres commit; --floor=false skips it) and prints the answer's p50
over it. Afterwards every acknowledged order is read through GET /v1/order until FILLED; the
exit status is 1 when one is not (a lost order) or the run could not be done, 2 on bad usage.

examples:
  tradesvc bench result --create-keys auto --fund 100000000
  tradesvc bench ack --rate 500 --duration 30s --keys k.jsonl --create-keys auto --keys-out k.jsonl --json
  tradesvc bench overload --sustained 400 --keys k.jsonl --create-keys auto

flags:
`

const benchConfigNote = `
The service's configuration flags (or TRADESVC_* variables) locate its Kafka, Postgres, run
directory (master key, simulator token, TLS CA) and simulator, as for every other command:
see 'tradesvc serve --help'.
`

// benchCommand runs `tradesvc bench` and returns the exit status.
func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprint(stderr, benchUsage)
		own := flag.NewFlagSet("bench", flag.ContinueOnError)
		own.SetOutput(stderr)
		new(bench.Options).Register(own)
		own.PrintDefaults()
		fmt.Fprint(stderr, benchConfigNote)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	o := bench.Options{Scenario: args[0]}
	cfg, err := loadConfig("bench "+args[0], args[1:], stderr, func(fs *flag.FlagSet) {
		o.Register(fs)
		fs.Usage = usage
	})
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = o.Normalize()
	}
	if err != nil {
		fmt.Fprintf(stderr, "tradesvc bench: %v\n", err)
		return 2
	}
	env, closeEnv, err := benchEnv(cfg, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tradesvc bench: %v\n", err)
		return 1
	}
	defer closeEnv()
	rep, err := bench.Run(ctx, env, o)
	if err != nil {
		fmt.Fprintf(stderr, "tradesvc bench: %v\n", err)
		return 1
	}
	if o.Out != "" {
		var buf bytes.Buffer
		if err := rep.WriteJSON(&buf); err == nil {
			err = os.WriteFile(o.Out, buf.Bytes(), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "tradesvc bench: --out: %v\n", err)
			return 1
		}
	}
	if o.JSON {
		_ = rep.WriteJSON(stdout)
	} else {
		rep.WriteText(stdout)
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// benchEnv wires the run to the service's configuration: its address and CA, its Kafka and
// Postgres for the floor, its key store for --create-keys and its simulator for --fund. The
// stores are opened only when used.
func benchEnv(cfg config.Config, o bench.Options, logw io.Writer) (bench.Env, func(), error) {
	baseURL, caPath, err := benchTarget(cfg, o)
	if err != nil {
		return bench.Env{}, nil, err
	}
	var caPEM []byte
	if caPath != "" {
		if caPEM, err = os.ReadFile(caPath); err != nil {
			return bench.Env{}, nil, fmt.Errorf("CA certificate: %w", err)
		}
	}
	var mu sync.Mutex
	var store *keys.Store
	var admin *remote.Client
	var closers []func()
	env := bench.Env{BaseURL: baseURL, CAPEM: caPEM, PGURL: cfg.PGURL, Log: logw,
		Kafka: kafka.Config{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix}}
	env.CreateKey = func(ctx context.Context, logins []int64) (bench.Key, error) {
		mu.Lock()
		defer mu.Unlock()
		if store == nil {
			s, closeStore, err := openKeyStore(ctx, cfg)
			if err != nil {
				return bench.Key{}, err
			}
			store, closers = s, append(closers, closeStore)
		}
		c, err := store.Create(ctx, keys.CreateParams{Logins: logins})
		if err != nil {
			return bench.Key{}, err
		}
		return bench.Key{APIKey: c.APIKey, APISecret: c.APISecret, Logins: c.Logins}, nil
	}
	env.Deposit = func(ctx context.Context, login int64, amount apd.Decimal) error {
		mu.Lock()
		defer mu.Unlock()
		if admin == nil {
			c, err := simAdmin(cfg)
			if err != nil {
				return err
			}
			admin, closers = c, append(closers, func() { _ = c.Close() })
		}
		_, err := admin.Admin().Deposit(ctx, login, amount)
		return err
	}
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range closers {
			c()
		}
	}
	return env, closeAll, nil
}

// benchTarget is the service's base URL and CA: the flags, else TRADESVC_BASE_URL and
// TRADESVC_CA_CERT, else RUN_DIR/env (make run), else the configured listen address and the
// CA the service generated under its run directory.
func benchTarget(cfg config.Config, o bench.Options) (baseURL, caPath string, err error) {
	baseURL, caPath = o.BaseURL, o.CACert
	if baseURL == "" {
		baseURL = os.Getenv("TRADESVC_BASE_URL")
	}
	if caPath == "" {
		caPath = os.Getenv("TRADESVC_CA_CERT")
	}
	if baseURL == "" || caPath == "" {
		vars, err := readEnvFile(filepath.Join(cfg.RunDir, "env"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", "", err
		}
		if baseURL == "" {
			baseURL = vars["TRADESVC_BASE_URL"]
		}
		if caPath == "" {
			caPath = vars["TRADESVC_CA_CERT"]
		}
	}
	if baseURL == "" {
		baseURL = "https://" + cfg.Listen
	}
	if caPath == "" {
		if p := filepath.Join(cfg.RunDir, "tls", "ca.pem"); fileExists(p) {
			caPath = p
		}
	}
	return strings.TrimRight(baseURL, "/"), caPath, nil
}

// simAdmin connects to the simulator's admin API the way `tradesvc sim` does.
func simAdmin(cfg config.Config) (*remote.Client, error) {
	addr := cfg.SimAddr
	if addr == "" {
		addr = cfg.SimListen
	}
	tok, err := remote.ReadToken(filepath.Join(cfg.RunDir, "sim.token"))
	if err != nil {
		return nil, fmt.Errorf("simulator token: %w (is the sim role running?)", err)
	}
	return remote.NewClient(remote.ClientConfig{Addr: addr, Token: tok})
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
