// Package clickhouse opens the ClickHouse connection of the market-data history (deals,
// ticks, bars) over the native protocol and applies its embedded migrations.
//
// Compatibility: the build machines run ClickHouse 18.16, users of docker-compose a current
// release; everything here runs on both. On 18.16 the HTTP protocol of clickhouse-go v2 does
// not work (unknown setting client_protocol_version), so only the native protocol is used;
// there is no DateTime64 (store Unix milliseconds as Int64); LowCardinality needs an
// experimental setting (do not use it); a batch INSERT must name its columns; and an
// INSERT ... VALUES sent through conn.Exec never completes (with or without bound
// arguments: the server waits for a data block that Exec does not send) — write every row,
// even a single one, with PrepareBatch("INSERT INTO t (a, b)") ... Append ... Send.
// Decimal columns: see decimal.go.
package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"time"
	"tradesvc/infra/check"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Config describes the connection.
type Config struct {
	// Addr is the native-protocol address, host:port (default port 9000; 19000 under make run).
	Addr string
	// Database is created if missing and used for every query; "tradesvc" normally.
	Database string
	// Username is "default" when empty; Password may be empty (loopback servers).
	Username string
	Password string
	// MaxOpenConns caps the pool; 0 keeps the driver's default.
	MaxOpenConns int
	// DialTimeout bounds connecting; 10 s when zero.
	DialTimeout time.Duration
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs check.Problems
	errs.If(c.Addr == "", "clickhouse: Addr is empty")
	// The name is spliced into CREATE DATABASE, so it must be a plain identifier.
	if !identifier.MatchString(c.Database) {
		errs.Add(fmt.Errorf("clickhouse: database %q is not a plain identifier", c.Database))
	}
	errs.If(c.MaxOpenConns < 0, "clickhouse: MaxOpenConns is negative")
	return errs.Err()
}

func (c Config) options(database string) *clickhouse.Options {
	user := c.Username
	user = cmp.Or(user, "default")
	dial := c.DialTimeout
	dial = cmp.Or(dial, 10*time.Second)
	opts := &clickhouse.Options{
		Addr:        []string{c.Addr},
		Protocol:    clickhouse.Native,
		Auth:        clickhouse.Auth{Database: database, Username: user, Password: c.Password},
		DialTimeout: dial,
	}
	if c.MaxOpenConns > 0 {
		opts.MaxOpenConns = c.MaxOpenConns
		opts.MaxIdleConns = min(c.MaxOpenConns, 5)
	}
	return opts
}

// Open connects to the server, creates cfg.Database if it does not exist, and returns a
// connection pool bound to that database.
func Open(ctx context.Context, cfg Config) (driver.Conn, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := createDatabase(ctx, cfg); err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(cfg.options(cfg.Database))
	if err != nil {
		return nil, fmt.Errorf("clickhouse: open %s/%s: %w", cfg.Addr, cfg.Database, err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("clickhouse: ping %s/%s: %w", cfg.Addr, cfg.Database, err)
	}
	return conn, nil
}

// createDatabase runs through a connection to `default`, because a connection naming a
// database that does not exist yet is refused.
func createDatabase(ctx context.Context, cfg Config) error {
	boot, err := clickhouse.Open(cfg.options("default"))
	if err != nil {
		return fmt.Errorf("clickhouse: open %s: %w", cfg.Addr, err)
	}
	defer boot.Close()
	if err := boot.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+cfg.Database); err != nil {
		return fmt.Errorf("clickhouse: create database %s: %w", cfg.Database, err)
	}
	return nil
}
