// Package config is the service's one configuration: every setting has a flag, a TRADESVC_*
// environment variable and a documented default. Flags win over the environment.
package config

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"tradesvc/infra/check"
)

// Roles a process can run.
const (
	RoleGateway   = "gateway"
	RoleExecutor  = "executor"
	RoleRelay     = "relay"
	RoleProjector = "projector"
	RoleSim       = "sim"
)

// AllRoles is the default: everything in one process (a new slice on every call).
func AllRoles() []string {
	return []string{RoleGateway, RoleExecutor, RoleRelay, RoleProjector, RoleSim}
}

// Rate-limit stores a gateway can keep its keys' counters in.
const (
	// RateLimitMemory keeps them in the gateway's memory: one gateway per key.
	RateLimitMemory = "memory"
	// RateLimitPostgres keeps them in Postgres, shared by every gateway of the deployment.
	RateLimitPostgres = "postgres"
)

// Config holds every setting of tradesvc.
type Config struct {
	// Listen is the HTTPS address of the gateway (REST and WebSocket).
	Listen string
	// RunDir holds generated state: TLS files, the master key, the simulator's data.
	RunDir string
	// KafkaBrokers are the bootstrap brokers.
	KafkaBrokers []string
	// TopicPrefix is prepended to every topic and consumer-group name (isolates deployments).
	TopicPrefix string
	// PGURL is the Postgres connection string.
	PGURL string
	// CHAddr and CHDatabase locate ClickHouse (native protocol).
	CHAddr     string
	CHDatabase string
	// TLSCert and TLSKey are operator-supplied certificate files; empty means a local CA and
	// certificate are generated under RunDir/tls on first run.
	TLSCert string
	TLSKey  string
	// MasterKey is the key that encrypts API secrets at rest (64 hex digits or base64 of 32
	// bytes, e.g. from a secret manager); empty means MasterKeyFile.
	MasterKey string
	// MasterKeyFile holds the master key when MasterKey is empty; created on first use.
	MasterKeyFile string
	// Roles this process runs.
	Roles []string
	// RateLimitStore is where the gateway keeps the keys' rate-limit state: RateLimitMemory
	// (this gateway alone) or RateLimitPostgres (shared, so a key's limits hold across gateways).
	RateLimitStore string
	// MetricsListen is the loopback address of the Prometheus metrics endpoint (/metrics);
	// empty disables it.
	MetricsListen string
	// SimListen is where the simulator serves its network port and admin API.
	SimListen string
	// SimAddr is a remote simulator's address for the executor; empty means embedded.
	SimAddr string
	// SimSeed is a seed file for the simulator; empty means the embedded default seed.
	SimSeed string
	// SimDataDir holds the simulator's journal.
	SimDataDir string
	// SimFsync makes the simulator fsync its journal before answering. Without it the
	// journal is written (to the page cache) before every answer, which a killed process
	// cannot take back; only a machine crash can.
	SimFsync bool
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// ShutdownTimeout bounds a graceful stop.
	ShutdownTimeout time.Duration
	// DispatchWindow is how long after it was queued an operation may still be sent to the
	// trade server; an older one is stored REJECTED -1000 instead (the spec's "about a minute").
	DispatchWindow time.Duration
	// SendTimeout bounds one send to the trade server: running out is -5008 IN_DOUBT. With a
	// second's grace it is the send deadline after which an attempt the trade server holds
	// nowhere is settled as not executed (REJECTED -1000).
	SendTimeout time.Duration
	// QuoteMaxAge is how old a quote may be and still be used by the gateway's price checks
	// (-2021, -4009); without a fresh quote the trade server checks and answers.
	QuoteMaxAge time.Duration
	// Streams configures the WebSocket streams (streams.go).
	Streams Streams
	// Health configures readiness and dead-lettering (health.go).
	Health Health
	// Admission bounds what a gateway lets into the order path (admission.go).
	Admission Admission
}

// setting is one flag with its TRADESVC_* variable and default, and how its text is read
// into the Config field it sets.
type setting struct {
	flag, def, usage string
	parse            func(name, raw string) error
}

// env is the environment variable of a flag: TRADESVC_ and the flag in upper case.
func (s setting) env() string {
	return "TRADESVC_" + strings.ToUpper(strings.ReplaceAll(s.flag, "-", "_"))
}

// settings is every setting of the service, in one table: the field it sets, its flag, its
// default and its usage. Adding a setting is a field of Config (or of Streams, Health,
// Admission) and one line here.
func (c *Config) settings() []setting {
	st, h, a := &c.Streams, &c.Health, &c.Admission
	return []setting{
		text(&c.Listen, "listen", "127.0.0.1:8443", "HTTPS listen address of the gateway"),
		text(&c.RunDir, "run-dir", ".run", "directory for generated state (tls, master key, simulator data)"),
		list(&c.KafkaBrokers, "kafka-brokers", "127.0.0.1:19092", "comma-separated Kafka bootstrap brokers"),
		text(&c.TopicPrefix, "topic-prefix", "", "prefix of every Kafka topic and consumer group"),
		text(&c.PGURL, "pg-url", "postgres://tradesvc@127.0.0.1:15432/tradesvc?sslmode=disable", "Postgres connection URL"),
		text(&c.CHAddr, "ch-addr", "127.0.0.1:19000", "ClickHouse native protocol address"),
		text(&c.CHDatabase, "ch-database", "tradesvc", "ClickHouse database"),
		text(&c.TLSCert, "tls-cert", "", "server certificate PEM (default: generated under run-dir/tls)"),
		text(&c.TLSKey, "tls-key", "", "server key PEM (default: generated under run-dir/tls)"),
		text(&c.MasterKey, "master-key", "", "master key encrypting API secrets: 64 hex digits or base64 (default: the master key file)"),
		text(&c.MasterKeyFile, "master-key-file", "", "file with the key that encrypts API secrets (default run-dir/master.key)"),
		list(&c.Roles, "roles", strings.Join(AllRoles(), ","), "roles to run: "+strings.Join(AllRoles(), ",")),
		text(&c.RateLimitStore, "rate-limit-store", RateLimitMemory, "where a gateway keeps the keys' rate-limit counters: memory (this gateway) or postgres (shared by every gateway)"),
		text(&c.MetricsListen, "metrics-listen", "127.0.0.1:9464", "address of the Prometheus metrics endpoint /metrics (empty: off)"),
		text(&c.SimListen, "sim-listen", "127.0.0.1:8444", "address of the simulator's network port and admin API"),
		text(&c.SimAddr, "sim-addr", "", "remote simulator address for the executor (empty: embedded)"),
		text(&c.SimSeed, "sim-seed", "", "simulator seed file (empty: embedded default seed)"),
		text(&c.SimDataDir, "sim-data-dir", "", "simulator journal directory (default run-dir/sim)"),
		boolean(&c.SimFsync, "sim-fsync", "false", "the simulator fsyncs its journal before it answers (survives a machine crash; one disk flush per send)"),
		text(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error"),
		duration(&c.ShutdownTimeout, "shutdown-timeout", "15s", "bound on a graceful stop: roles still running after it are abandoned and the process exits non-zero"),
		duration(&c.DispatchWindow, "dispatch-window", "60s", "how long a queued operation may wait to be sent before it is rejected (-1000)"),
		duration(&c.SendTimeout, "send-timeout", "10s", "bound on one send to the trade server; also how long an unanswered attempt may still execute"),
		duration(&c.QuoteMaxAge, "quote-max-age", "30s", "oldest quote the gateway's price checks use"),

		positive(&st.PingInterval, "ws-ping-interval", "3m", "WebSocket streams: server ping interval"),
		positive(&st.PongTimeout, "ws-pong-timeout", "10m", "WebSocket streams: close a connection that answered no ping for this long"),
		positive(&st.Lifetime, "ws-lifetime", "24h", "WebSocket streams: connection lifetime (close 1000)"),
		count(&st.MaxConns, "ws-max-conns", "10000", "WebSocket streams: overall capacity of a gateway (beyond: HTTP 503, -1008)"),
		count(&st.MaxConnsPerAddr, "ws-max-conns-per-addr", "20", "WebSocket streams: market-stream connections per client address"),
		count(&st.SendQueue, "ws-send-queue", "1024", "WebSocket streams: frames queued per connection before it is closed with 1011"),
		positive(&st.WriteTimeout, "ws-write-timeout", "10s", "WebSocket streams: drop a client that accepts nothing for this long"),
		list(&st.DepthSymbols, "ws-depth-symbols", "", "WebSocket streams: comma-separated symbols whose @depth stream delivers"),
		positive(&st.ListenKeyLifetime, "listen-key-lifetime", "60m", "user data stream: listen key lifetime from creation or keepalive"),
		positive(&st.UserRecheck, "user-stream-recheck", "5s", "user data stream: how often a stream re-reads its listen key, scope and the trading switch"),
		positive(&st.UserMaxLag, "user-stream-max-lag", "5s", "user data stream: close with 1011 once the service's intake for a login of the stream lags this long"),
		positive(&st.ChangeRetention, "change-retention", "1h", "user data stream: how long the change feed's rows are kept (the projector prunes older ones)"),

		positive(&h.Interval, "health-interval", "2s", "readiness: how often Kafka, Postgres, ClickHouse and the trade server are probed"),
		nonNegative(&h.QuoteMaxAge, "ready-quote-max-age", "30s", "readiness: a gateway whose newest quote is older is not ready (0: no check)"),
		positive(&h.ProjectionStall, "ready-projection-stall", "30s", "readiness: a projection behind the log that applied nothing for this long is stuck"),
		count(&h.PoisonAttempts, "poison-attempts", "5", "times a message may fail the same way (its store reachable) before it is dead-lettered"),

		count(&a.MaxInFlight, "admit-max-in-flight", "4000", "admission: operations awaiting their outcome past which new orders get -1008"),
		count(&a.MinInFlight, "admit-min-in-flight", "60", "admission: the least the in-flight bound falls to while the path lags (it adapts between this and --admit-max-in-flight)"),
		positive(&a.MaxAge, "admit-max-age", "750ms", "admission: an operation awaiting its outcome longer is late (the bound adapts every fifth of this)"),
		count(&a.StaleLimit, "admit-stale-limit", "100", "admission: late operations past which new orders get -1008"),
		positive(&a.QueueTarget, "admit-queue-target", "150ms", "admission: when even the fastest operation decided in two windows in a row waited this much longer than the path's base, the path holds a standing queue and the in-flight bound falls"),
		count(&a.RiskFactor, "admit-risk-factor", "4", "admission: how many times larger the bounds are for cancels, closes and sweeps"),
		nonNegative(&a.MaxSchedDelay, "admit-max-sched-delay", "35ms", "admission: past this p99 of the time the process's goroutines wait for a CPU (two windows of a fifth of --admit-max-age in a row), the in-flight bound falls and new orders are let in at a bounded rate (0: off)"),
	}
}

// Load reads flags from args (after the subcommand) over TRADESVC_* variables over defaults,
// and reports every value that cannot be read at once.
func Load(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	var c Config
	set := c.settings()
	raw := make([]string, len(set))
	for i, st := range set {
		def := st.def
		if v := getenv(st.env()); v != "" {
			def = v
		}
		fs.StringVar(&raw[i], st.flag, def, st.usage+" (env "+st.env()+")")
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var errs check.Problems
	for i, st := range set {
		errs.Add(st.parse(st.flag, strings.TrimSpace(raw[i])))
	}
	if err := errs.Err(); err != nil {
		return c, err
	}
	if c.MasterKeyFile == "" {
		c.MasterKeyFile = filepath.Join(c.RunDir, "master.key")
	}
	if c.SimDataDir == "" {
		c.SimDataDir = filepath.Join(c.RunDir, "sim")
	}
	return c, c.Validate()
}

// FromEnv loads the configuration with no flags (for admin subcommands and tests).
func FromEnv() (Config, error) {
	return Load(flag.NewFlagSet("config", flag.ContinueOnError), nil, os.Getenv)
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs check.Problems
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs.Add(fmt.Errorf("listen %q: %w", c.Listen, err))
	}
	errs.If(c.RunDir == "", "run-dir is empty")
	errs.If(len(c.KafkaBrokers) == 0, "kafka-brokers is empty")
	errs.If(c.PGURL == "", "pg-url is empty")
	errs.If(c.CHAddr == "" || c.CHDatabase == "", "ch-addr and ch-database are required")
	errs.If((c.TLSCert == "") != (c.TLSKey == ""), "tls-cert and tls-key go together")
	errs.If(len(c.Roles) == 0, "roles is empty")
	for _, r := range c.Roles {
		if !slices.Contains(AllRoles(), r) {
			errs.Add(fmt.Errorf("unknown role %q (want %s)", r, strings.Join(AllRoles(), ",")))
		}
	}
	if c.RateLimitStore != RateLimitMemory && c.RateLimitStore != RateLimitPostgres {
		errs.Add(fmt.Errorf("rate-limit-store %q: want %s or %s", c.RateLimitStore, RateLimitMemory, RateLimitPostgres))
	}
	errs.If(c.DispatchWindow <= 0, "dispatch-window must be positive")
	errs.If(c.SendTimeout <= 0, "send-timeout must be positive")
	errs.If(c.QuoteMaxAge <= 0, "quote-max-age must be positive")
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs.Add(fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel))
	}
	return errs.Err()
}

// Has reports whether the process runs role.
func (c Config) Has(role string) bool { return slices.Contains(c.Roles, role) }

// SplitList splits a comma-separated setting or flag into its trimmed, non-empty items (nil
// for none).
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
