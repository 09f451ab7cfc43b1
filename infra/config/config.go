// Package config is the service's one configuration: every setting has a flag, a TRADESVC_*
// environment variable and a documented default. Flags win over the environment.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
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

type setting struct {
	flag, env, def, usage string
	dst                   *string
}

func (c *Config) settings(raw map[string]*string) []setting {
	s := func(flagName, def, usage string) setting {
		v := new(string)
		raw[flagName] = v
		return setting{flag: flagName, env: "TRADESVC_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_")), def: def, usage: usage, dst: v}
	}
	return []setting{
		s("listen", "127.0.0.1:8443", "HTTPS listen address of the gateway"),
		s("run-dir", ".run", "directory for generated state (tls, master key, simulator data)"),
		s("kafka-brokers", "127.0.0.1:19092", "comma-separated Kafka bootstrap brokers"),
		s("topic-prefix", "", "prefix of every Kafka topic and consumer group"),
		s("pg-url", "postgres://tradesvc@127.0.0.1:15432/tradesvc?sslmode=disable", "Postgres connection URL"),
		s("ch-addr", "127.0.0.1:19000", "ClickHouse native protocol address"),
		s("ch-database", "tradesvc", "ClickHouse database"),
		s("tls-cert", "", "server certificate PEM (default: generated under run-dir/tls)"),
		s("tls-key", "", "server key PEM (default: generated under run-dir/tls)"),
		s("master-key", "", "master key encrypting API secrets: 64 hex digits or base64 (default: the master key file)"),
		s("master-key-file", "", "file with the key that encrypts API secrets (default run-dir/master.key)"),
		s("roles", strings.Join(AllRoles(), ","), "roles to run: "+strings.Join(AllRoles(), ",")),
		s("rate-limit-store", RateLimitMemory, "where a gateway keeps the keys' rate-limit counters: memory (this gateway) or postgres (shared by every gateway)"),
		s("metrics-listen", "127.0.0.1:9464", "address of the Prometheus metrics endpoint /metrics (empty: off)"),
		s("sim-listen", "127.0.0.1:8444", "address of the simulator's network port and admin API"),
		s("sim-addr", "", "remote simulator address for the executor (empty: embedded)"),
		s("sim-seed", "", "simulator seed file (empty: embedded default seed)"),
		s("sim-data-dir", "", "simulator journal directory (default run-dir/sim)"),
		s("sim-fsync", "false", "the simulator fsyncs its journal before it answers (survives a machine crash; one disk flush per send)"),
		s("log-level", "info", "log level: debug, info, warn, error"),
		s("shutdown-timeout", "15s", "bound on a graceful stop: roles still running after it are abandoned and the process exits non-zero"),
		s("dispatch-window", "60s", "how long a queued operation may wait to be sent before it is rejected (-1000)"),
		s("send-timeout", "10s", "bound on one send to the trade server; also how long an unanswered attempt may still execute"),
		s("quote-max-age", "30s", "oldest quote the gateway's price checks use"),
	}
}

// Load reads flags from args (after the subcommand) over TRADESVC_* variables over defaults.
func Load(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	var c Config
	raw := map[string]*string{}
	set := append(append(append(c.settings(raw), streamSettings(raw)...), healthSettings(raw)...),
		admissionSettings(raw)...)
	for _, st := range set {
		def := st.def
		if v := getenv(st.env); v != "" {
			def = v
		}
		fs.StringVar(st.dst, st.flag, def, st.usage+" (env "+st.env+")")
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	get := func(name string) string { return strings.TrimSpace(*raw[name]) }
	c.Listen = get("listen")
	c.RunDir = get("run-dir")
	c.KafkaBrokers = SplitList(get("kafka-brokers"))
	c.TopicPrefix = get("topic-prefix")
	c.PGURL = get("pg-url")
	c.CHAddr = get("ch-addr")
	c.CHDatabase = get("ch-database")
	c.TLSCert = get("tls-cert")
	c.TLSKey = get("tls-key")
	c.MasterKey = get("master-key")
	c.MasterKeyFile = get("master-key-file")
	if c.MasterKeyFile == "" {
		c.MasterKeyFile = filepath.Join(c.RunDir, "master.key")
	}
	c.Roles = SplitList(get("roles"))
	c.RateLimitStore = get("rate-limit-store")
	c.MetricsListen = get("metrics-listen")
	c.SimListen = get("sim-listen")
	c.SimAddr = get("sim-addr")
	c.SimSeed = get("sim-seed")
	c.SimDataDir = get("sim-data-dir")
	switch v := get("sim-fsync"); v {
	case "true", "false":
		c.SimFsync = v == "true"
	default:
		return c, fmt.Errorf("sim-fsync %q: want true or false", v)
	}
	if c.SimDataDir == "" {
		c.SimDataDir = filepath.Join(c.RunDir, "sim")
	}
	c.LogLevel = get("log-level")
	d, err := time.ParseDuration(get("shutdown-timeout"))
	if err != nil {
		return c, fmt.Errorf("shutdown-timeout: %w", err)
	}
	c.ShutdownTimeout = d
	if c.DispatchWindow, err = time.ParseDuration(get("dispatch-window")); err != nil {
		return c, fmt.Errorf("dispatch-window: %w", err)
	}
	if c.SendTimeout, err = time.ParseDuration(get("send-timeout")); err != nil {
		return c, fmt.Errorf("send-timeout: %w", err)
	}
	if c.QuoteMaxAge, err = time.ParseDuration(get("quote-max-age")); err != nil {
		return c, fmt.Errorf("quote-max-age: %w", err)
	}
	if c.Streams, err = loadStreams(get); err != nil {
		return c, err
	}
	if c.Health, err = loadHealth(get); err != nil {
		return c, err
	}
	if c.Admission, err = loadAdmission(get); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// FromEnv loads the configuration with no flags (for admin subcommands and tests).
func FromEnv() (Config, error) {
	return Load(flag.NewFlagSet("config", flag.ContinueOnError), nil, os.Getenv)
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: %w", c.Listen, err))
	}
	if c.RunDir == "" {
		errs = append(errs, errors.New("run-dir is empty"))
	}
	if len(c.KafkaBrokers) == 0 {
		errs = append(errs, errors.New("kafka-brokers is empty"))
	}
	if c.PGURL == "" {
		errs = append(errs, errors.New("pg-url is empty"))
	}
	if c.CHAddr == "" || c.CHDatabase == "" {
		errs = append(errs, errors.New("ch-addr and ch-database are required"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key go together"))
	}
	if len(c.Roles) == 0 {
		errs = append(errs, errors.New("roles is empty"))
	}
	for _, r := range c.Roles {
		if !slices.Contains(AllRoles(), r) {
			errs = append(errs, fmt.Errorf("unknown role %q (want %s)", r, strings.Join(AllRoles(), ",")))
		}
	}
	if c.RateLimitStore != RateLimitMemory && c.RateLimitStore != RateLimitPostgres {
		errs = append(errs, fmt.Errorf("rate-limit-store %q: want %s or %s", c.RateLimitStore, RateLimitMemory, RateLimitPostgres))
	}
	if c.DispatchWindow <= 0 {
		errs = append(errs, errors.New("dispatch-window must be positive"))
	}
	if c.SendTimeout <= 0 {
		errs = append(errs, errors.New("send-timeout must be positive"))
	}
	if c.QuoteMaxAge <= 0 {
		errs = append(errs, errors.New("quote-max-age must be positive"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
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
