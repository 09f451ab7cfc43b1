// Package app is the composition root: it builds the service's parts from one Config and runs
// the roles a process was given (gateway, executor, relay, projector, sim). main only parses the
// configuration and calls it; end-to-end tests build the same application in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"tradesvc/command"
	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/infra/clickhouse"
	"tradesvc/infra/config"
	"tradesvc/infra/health"
	"tradesvc/infra/kafka"
	"tradesvc/infra/metrics"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/remote"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/postgres"
	"tradesvc/projections"
)

// Pool sizes: the command side and reads (gateway, executor), the projections' writes (one
// transaction at a time per consumed partition), and the trading projection's (its
// partitions' batches merge into one transaction at a time).
const (
	commandPoolConns   = 24
	readModelPoolConns = 16
	tradingPoolConns   = 8
)

// App holds the open resources of one process.
type App struct {
	cfg config.Config
	log *slog.Logger
	now func() time.Time

	kcfg   kafka.Config
	pool   *pgxpool.Pool // command side and reads: synchronous commit
	rmPool *pgxpool.Pool // read-model writes: synchronous commit, keyed plans
	// tradingPool: the trading projection's writes, asynchronous commit (on the path of
	// every RESULT; projections.Positions says why a crash loses nothing), keyed plans.
	tradingPool *pgxpool.Pool
	ch          driver.Conn
	pub         *kafka.Publisher
	switches    *command.Switches
	// early is shared by the gateway and the executor when this process runs both: the
	// records then carry the executor's claims (command/executor/early.go).
	early *executor.EarlyClaims

	sim     *sim.Sim        // set when this process runs the simulator
	port    mt5.TradeServer // the trade server the executor talks to
	simAddr chan string     // where the simulator's network port listens, once it does

	gatewayAddr chan string
	metrics     *metrics.Metrics
	metricsAddr chan string
	refReader   atomic.Pointer[projections.ReferenceReader] // set when this process runs the gateway
	changeFeed  atomic.Pointer[projections.ChangeFeed]      // set when this process runs the gateway
	trading     atomic.Pointer[projections.Trading]         // set when this process runs the projector

	// What readiness and the dead-letter topics need (health.go).
	health      *health.Monitor
	consumers   *health.Consumers
	deadLetters *kafka.DeadLetters // set when this process runs consumers (executor, projector)
	probe       *kafkaProbe
	gw          gatewayHealth
	exec        executorHealth
	relay       relayHealth
	relayIntake intakeState // where this process's relay of the trade server's facts stands (intake.go)
}

// New opens every resource the configured roles need, applies migrations and creates the
// Kafka topics (all idempotent), so a fresh deployment starts with one command.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, log: log, now: time.Now, simAddr: make(chan string, 1), gatewayAddr: make(chan string, 1),
		metrics: metrics.New(), metricsAddr: make(chan string, 1)}
	ok := false
	defer func() {
		if !ok {
			if err := a.Close(); err != nil {
				log.Error("closing what a failed start opened", "err", err)
			}
		}
	}()
	if err := os.MkdirAll(cfg.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	a.kcfg = kafka.Config{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix, ClientID: "tradesvc"}
	var err error
	// A simulator-only process (the trade server in its own process) needs none of the
	// stores: it keeps its own journal.
	if cfg.Has(config.RoleGateway) || cfg.Has(config.RoleExecutor) || cfg.Has(config.RoleRelay) || cfg.Has(config.RoleProjector) {
		// Every order crosses this pool several times (its idempotency record, the executor's
		// "sent" record, the reads of a RESULT wait): pgx's default of max(4, CPUs)
		// connections would queue them behind each other.
		if a.pool, err = postgres.Open(ctx, postgres.Config{URL: cfg.PGURL, MaxConns: commandPoolConns}); err != nil {
			return nil, err
		}
		if a.ch, err = clickhouse.Open(ctx, clickhouse.Config{Addr: cfg.CHAddr, Database: cfg.CHDatabase}); err != nil {
			return nil, err
		}
		if err := migrate(ctx, a.pool, a.ch, a.kcfg, log); err != nil {
			return nil, err
		}
		if a.switches, err = command.NewSwitches(a.pool, a.now); err != nil {
			return nil, err
		}
	}
	if cfg.Has(config.RoleProjector) {
		// Synchronous commit: the other projections commit the log positions they applied
		// with their writes, and a commit Postgres acknowledged is one a crash cannot take
		// back (some of them write ClickHouse too, which a lost position would write again).
		// Keyed plans: their statements look rows up by key (postgres.Config.KeyedPlans).
		if a.rmPool, err = postgres.Open(ctx, postgres.Config{URL: cfg.PGURL, MaxConns: readModelPoolConns,
			KeyedPlans: true}); err != nil {
			return nil, err
		}
		// The trading projection alone commits asynchronously: it stores its log positions
		// with its writes and checks them in every transaction, and it goes back to the
		// stored ones when Postgres restarts (projections.Positions), so the commits a crash
		// takes back are applied again from the log.
		if a.tradingPool, err = postgres.Open(ctx, postgres.Config{URL: cfg.PGURL, MaxConns: tradingPoolConns,
			KeyedPlans: true, AsyncCommit: true}); err != nil {
			return nil, err
		}
	}
	if cfg.Has(config.RoleExecutor) && cfg.Has(config.RoleGateway) {
		a.early = executor.NewEarlyClaims(a.now)
	}
	if cfg.Has(config.RoleExecutor) || cfg.Has(config.RoleGateway) {
		// The executor appends outcomes and relays facts; the gateway's command handlers
		// append commands.
		if a.pub, err = kafka.NewPublisher(a.kcfg, log); err != nil {
			return nil, err
		}
	}
	if cfg.Has(config.RoleSim) {
		var seed []byte // nil: the embedded default seed
		if cfg.SimSeed != "" {
			if seed, err = os.ReadFile(cfg.SimSeed); err != nil {
				return nil, fmt.Errorf("simulator seed: %w", err)
			}
		}
		syncMode := sim.SyncNone
		if cfg.SimFsync {
			syncMode = sim.SyncBatch
		}
		a.sim, err = sim.Open(sim.Config{DataDir: cfg.SimDataDir, Seed: seed, TickInterval: 250 * time.Millisecond,
			HousekeepInterval: time.Second, Sync: syncMode, Logger: log.With("role", "sim")})
		if err != nil {
			return nil, fmt.Errorf("open simulator: %w", err)
		}
	}
	if cfg.Has(config.RoleExecutor) || cfg.Has(config.RoleRelay) {
		if a.port, err = a.tradeServer(); err != nil {
			return nil, err
		}
	}
	if cfg.Has(config.RoleExecutor) && !cfg.Has(config.RoleRelay) {
		log.Warn("executor without the relay role: the trade server's deals, quotes and reference data reach the log " +
			"only through a relay process (tradesvc serve --roles relay)")
	}
	if cfg.Has(config.RoleExecutor) || cfg.Has(config.RoleProjector) {
		if a.deadLetters, err = kafka.NewDeadLetters(a.kcfg, a.now); err != nil {
			return nil, err
		}
	}
	if err := a.newHealth(); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

// Migrate applies Postgres and ClickHouse migrations and creates the Kafka topics (the
// `tradesvc migrate` command; a serving process does the same through its own connections).
func Migrate(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	pool, err := postgres.Open(ctx, postgres.Config{URL: cfg.PGURL, MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	ch, err := clickhouse.Open(ctx, clickhouse.Config{Addr: cfg.CHAddr, Database: cfg.CHDatabase})
	if err != nil {
		return err
	}
	defer ch.Close()
	return migrate(ctx, pool, ch, kafka.Config{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix}, log)
}

func migrate(ctx context.Context, pool *pgxpool.Pool, ch driver.Conn, kcfg kafka.Config, log *slog.Logger) error {
	if err := postgres.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("postgres migrations: %w", err)
	}
	if err := clickhouse.Migrate(ctx, ch); err != nil {
		return fmt.Errorf("clickhouse migrations: %w", err)
	}
	if err := kafka.EnsureTopics(ctx, kcfg, events.AllTopics()); err != nil {
		return fmt.Errorf("kafka topics: %w", err)
	}
	log.Info("migrations applied and topics ready")
	return nil
}

// tradeServer is the embedded simulator when this process runs it and no remote one is
// configured, else a network client of the configured simulator.
func (a *App) tradeServer() (mt5.TradeServer, error) {
	if a.cfg.SimAddr == "" && a.sim != nil {
		return a.sim, nil
	}
	addr := a.cfg.SimAddr
	if addr == "" {
		addr = a.cfg.SimListen
	}
	token, err := remote.ReadToken(filepath.Join(a.cfg.RunDir, "sim.token"))
	if err != nil {
		return nil, fmt.Errorf("executor: simulator token: %w", err)
	}
	return remote.NewClient(remote.ClientConfig{Addr: addr, Token: token})
}

// Run runs the configured roles under one supervisor until ctx ends, then stops them
// within the shutdown timeout. A role that returns, with an error or without one while ctx
// is alive, cannot continue: it is logged, every other role is stopped, and Run returns its
// error, so that the process exits non-zero and its supervisor restarts it.
func (a *App) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	var running sync.Map // role name → struct{}, while it runs
	start := func(name string, fn func(context.Context) error) {
		running.Store(name, struct{}{})
		g.Go(func() error {
			defer running.Delete(name)
			err := fn(gctx)
			if err == nil && gctx.Err() == nil {
				err = errors.New("stopped on its own")
			}
			if err == nil || gctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil
			}
			a.log.Error("role cannot continue: stopping the process", "role", name, "err", err)
			return fmt.Errorf("%s: %w", name, err)
		})
	}
	if a.cfg.MetricsListen != "" {
		start("metrics", a.runMetrics)
	}
	start("health", a.health.Run)
	if a.sim != nil {
		start("sim", a.runSimServer)
	}
	if a.cfg.Has(config.RoleExecutor) {
		start("executor", a.runExecutor)
	}
	if a.cfg.Has(config.RoleRelay) {
		start("relay", a.runRelay)
	}
	if a.cfg.Has(config.RoleProjector) {
		start("projector", a.runProjector)
	}
	if a.cfg.Has(config.RoleGateway) {
		start("gateway", a.runGateway)
	}
	a.log.Info("tradesvc running", "roles", a.cfg.Roles)
	<-gctx.Done() // a signal, or a role that failed
	a.log.Info("tradesvc stopping", "cause", context.Cause(gctx))
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	timer := time.NewTimer(a.cfg.ShutdownTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		var names []string
		running.Range(func(k, _ any) bool {
			names = append(names, k.(string))
			return true
		})
		sort.Strings(names)
		err := fmt.Errorf("roles %s still running %s after the stop began (--shutdown-timeout): abandoned",
			strings.Join(names, ","), a.cfg.ShutdownTimeout)
		a.log.Error("shutdown timed out", "roles", names, "timeout", a.cfg.ShutdownTimeout)
		if cause := context.Cause(gctx); !errors.Is(cause, context.Canceled) {
			err = errors.Join(cause, err)
		}
		return err
	}
}

// runSimServer exposes the simulator's port and admin API on SimListen (loopback HTTP,
// bearer token in RunDir/sim.token) for remote executors and `tradesvc sim ...`.
func (a *App) runSimServer(ctx context.Context) error {
	token, err := remote.LoadOrCreateToken(filepath.Join(a.cfg.RunDir, "sim.token"))
	if err != nil {
		return err
	}
	handler := remote.NewServer(remote.ServerConfig{Port: a.sim, Admin: a.sim, Token: token,
		Logger: a.log.With("role", "sim"), Context: ctx})
	return a.serveHTTP(ctx, "simulator", a.cfg.SimListen, handler, a.simAddr)
}

// runMetrics serves the Prometheus metrics on MetricsListen (plain HTTP; keep it on loopback
// or a private network: it is not the public API).
func (a *App) runMetrics(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.metrics.Handler())
	mux.Handle("/livez", a.health.Handler())
	mux.Handle("/readyz", a.health.Handler())
	// Profiles for operators (the metrics listener is loopback or a private network).
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return a.serveHTTP(ctx, "metrics", a.cfg.MetricsListen, mux, a.metricsAddr)
}

// serveHTTP serves handler over plain HTTP on addr until ctx ends, then shuts down within the
// shutdown timeout; the bound address is published on bound (port 0 picks a free one).
func (a *App) serveHTTP(ctx context.Context, name, addr string, handler http.Handler, bound chan<- string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s listen %s: %w", name, addr, err)
	}
	bound <- ln.Addr().String()
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	shutdown := make(chan error, 1)
	stop := context.AfterFunc(ctx, func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
		defer cancel()
		shutdown <- srv.Shutdown(shutdownCtx)
	})
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		stop()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := <-shutdown; err != nil {
		return fmt.Errorf("%s shutdown: %w", name, err)
	}
	return nil
}

// MetricsAddr returns the metrics endpoint's address once it listens (for tests).
func (a *App) MetricsAddr(ctx context.Context) (string, error) { return waitAddr(ctx, a.metricsAddr) }

// waitAddr returns the address a listener published on ch, leaving it there for others.
func waitAddr(ctx context.Context, ch chan string) (string, error) {
	select {
	case addr := <-ch:
		ch <- addr
		return addr, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// GatewayAddr returns the gateway's listening address once it listens (for tests).
func (a *App) GatewayAddr(ctx context.Context) (string, error) { return waitAddr(ctx, a.gatewayAddr) }

// SimAddr returns the simulator's network address once it listens (for tests).
func (a *App) SimAddr(ctx context.Context) (string, error) { return waitAddr(ctx, a.simAddr) }

// Sim returns the embedded simulator, nil when this process does not run it.
func (a *App) Sim() *sim.Sim { return a.sim }

// Close releases every resource and returns what failed to close (the simulator's journal
// not flushed, a producer that could not deliver what it held).
func (a *App) Close() error {
	var errs []error
	closeWith := func(what string, c func() error) {
		if err := c(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", what, err))
		}
	}
	if a.probe != nil {
		closeWith("kafka probe", a.probe.Close)
	}
	if a.deadLetters != nil {
		closeWith("dead-letter producer", a.deadLetters.Close)
	}
	if a.pub != nil {
		closeWith("kafka publisher", a.pub.Close)
	}
	if a.sim != nil {
		closeWith("simulator", a.sim.Close)
	}
	if a.ch != nil {
		closeWith("clickhouse", a.ch.Close)
	}
	if a.tradingPool != nil {
		a.tradingPool.Close()
	}
	if a.rmPool != nil {
		a.rmPool.Close()
	}
	if a.pool != nil {
		a.pool.Close()
	}
	return errors.Join(errs...)
}
