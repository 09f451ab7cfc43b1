// Package postgres opens the service's Postgres pool (pgx) and applies the embedded,
// numbered SQL migrations of both sides: schema `cmd` (command side: API keys, idempotency
// records, switches; always synchronous commit) and schema `rm` (read models, rebuildable
// from Kafka).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"tradesvc/infra/check"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config describes one connection pool.
type Config struct {
	// URL is a libpq-style URL, e.g. postgres://tradesvc@127.0.0.1:15432/tradesvc?sslmode=disable.
	URL string
	// MaxConns caps the pool; 0 keeps pgx's default (max(4, number of CPUs)).
	MaxConns int32
	// AsyncCommit turns synchronous commit off for the pool's sessions: a commit returns
	// before its write-ahead log reaches the disk, and a crash of Postgres may take back the
	// commits of its last moments (at most about three wal_writer_delay, 600 ms by default),
	// always a suffix of them: the log is written in order. Only for writers that store with
	// their writes where they stand in a log that keeps what they applied, check that
	// position in every transaction, and go back to the stored one after a restart of
	// Postgres (the trading projection: projections.Positions). Every other pool commits
	// synchronously, unless a statement turns it off for its own transaction (AsyncCommitItem).
	AsyncCommit bool
	// KeyedPlans is for pools whose statements only look rows up by key (the projections'
	// writes): every prepared statement uses its generic plan, made once per connection
	// (plan_cache_mode = force_generic_plan; Postgres would otherwise plan some of them afresh
	// on every execution, which costs more than running them), and plans avoid sequential
	// scans (enable_seqscan = off) and hash and merge joins (enable_hashjoin,
	// enable_mergejoin = off), so that a plan made while a table was small (a new deployment)
	// never reads it whole once it has grown. A hash join reads its inner side whole, by
	// index when sequential scans are off: the generic plan of the derived columns' update,
	// made while rm.operations held 34 rows, hashed every operation on each execution until
	// an ANALYZE replaced it; a keyed nested loop reads only the rows of the batch.
	KeyedPlans bool
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs check.Problems
	if c.URL == "" {
		errs.Add(errors.New("postgres: URL is empty"))
	} else if _, err := pgxpool.ParseConfig(c.URL); err != nil {
		errs.Add(fmt.Errorf("postgres: URL: %w", err))
	}
	errs.If(c.MaxConns < 0, "postgres: MaxConns is negative")
	return errs.Err()
}

// Open creates the pool and checks that the server answers.
func Open(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse URL: %w", err)
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pc.ConnConfig.RuntimeParams["synchronous_commit"] = "on" // whatever the server's default
	if cfg.AsyncCommit {
		pc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if cfg.KeyedPlans {
		pc.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		pc.ConnConfig.RuntimeParams["enable_seqscan"] = "off"
		pc.ConnConfig.RuntimeParams["enable_hashjoin"] = "off"
		pc.ConnConfig.RuntimeParams["enable_mergejoin"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: ping %s: %w", pc.ConnConfig.Host, err)
	}
	return pool, nil
}

// AsyncCommitItem is a FROM item that turns synchronous commit off for the transaction of the
// statement that lists it: set_config(…, true) holds for that transaction alone, and a
// statement outside BEGIN … COMMIT is its own transaction, whose commit reads it (no BEGIN,
// SET LOCAL, COMMIT round trips). For one statement's commit on a pool that otherwise
// commits synchronously.
const AsyncCommitItem = `(SELECT set_config('synchronous_commit', 'off', true)) AS async`

// OneRow is the rows "unnest(params) AS alias(names)" of a statement, for one row: params,
// each "$n::type[]", become scalars of their element types ("$n::text::numeric" for numeric,
// which pgx encodes from text), so that a batch of one row is not packed into arrays and
// unpacked again. Its arguments are FirstOf the arrays'. Measured with pgbench on a table
// shaped as rm.positions, one row, synchronous commit: 0.18–0.20 ms an upsert from arrays,
// 0.15–0.16 ms from scalars.
func OneRow(params, alias, names string) string {
	return `(VALUES (` + scalars(params) + `)) AS ` + alias + `(` + names + `)`
}

// Rows is "unnest(params) AS alias(names)", the rows of a statement whose parameters are arrays
// of one element per row, or its OneRow form when one.
func Rows(params, alias, names string, one bool) string {
	if one {
		return OneRow(params, alias, names)
	}
	return `unnest(` + params + `) AS ` + alias + `(` + names + `)`
}

// RowsStatement is a statement whose rows come as arrays of one element per row (Rows), in
// both its forms: over arrays, and over one row of scalars.
type RowsStatement struct{ arrays, one string }

// NewRowsStatement makes both forms of the statement that build writes around Rows(…, one).
func NewRowsStatement(build func(one bool) string) RowsStatement {
	return RowsStatement{arrays: build(false), one: build(true)}
}

// For is the statement and its arguments for a number of rows given as args (their arrays,
// and any other arguments): the one-row form, of FirstOf(args), when rows is 1.
func (s RowsStatement) For(rows int, args []any) (string, []any) {
	if rows == 1 {
		return s.one, FirstOf(args)
	}
	return s.arrays, args
}

// SQL is the statement over arrays.
func (s RowsStatement) SQL() string { return s.arrays }

// scalars is params ("$n::type[]", comma separated) as scalars of their element types (OneRow).
func scalars(params string) string {
	return strings.ReplaceAll(strings.ReplaceAll(params, "::numeric[]", "::text::numeric"), "[]", "")
}

// FirstOf is args with each slice replaced by its first element: the arguments of a
// statement's OneRow form, arrays of one element each (other arguments are kept).
func FirstOf(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if v := reflect.ValueOf(a); v.Kind() == reflect.Slice {
			out[i] = v.Index(0).Interface()
		} else {
			out[i] = a
		}
	}
	return out
}

// NeverSent reports the errors of a statement that never reached Postgres: a connection that
// could not be made, or one that failed before anything was written to it.
func NeverSent(err error) bool {
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr) || pgconn.SafeToRetry(err)
}

// ServerGone reports the SQLSTATE codes of a Postgres that cannot go on with a statement for
// reasons of its own, not the statement's: connection exception (08), transaction rollback
// (40: serialization failure, deadlock), insufficient resources (53), operator intervention
// (57: shutdown, a crash of another backend, a cancelled statement), system error (58).
func ServerGone(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "08", "40", "53", "57", "58":
		return true
	}
	return false
}
