package clickhouse

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tradesvc/infra/migrations"
)

// migrationFiles holds the ClickHouse migrations (deals, ticks, bars tables).
//
//go:embed migrations
var migrationFiles embed.FS

// Migrations returns the embedded migration files (the root holds the *.sql files).
func Migrations() fs.FS { return migrations.Dir(migrationFiles) }

// Migration is one numbered SQL file split into its statements.
type Migration struct {
	Version    int
	Name       string
	Statements []string
}

// Migrate applies every embedded migration that the database has not recorded yet.
func Migrate(ctx context.Context, conn driver.Conn) error {
	_, err := MigrateFS(ctx, conn, Migrations())
	return err
}

// MigrateFS applies the *.sql files at the root of fsys (NNNN_description.sql) in version
// order and records each in schema_migrations after all its statements succeeded.
//
// ClickHouse has no transactions and no advisory locks, so the rules are different from
// Postgres: every statement must be idempotent (CREATE TABLE IF NOT EXISTS, DROP ... IF
// EXISTS), because a migration interrupted halfway, or run by two instances at once, runs
// again. 18.16 has no ADD COLUMN IF NOT EXISTS: a plain ALTER TABLE ... ADD COLUMN whose
// column already exists counts as done. Recording a version twice is harmless (versions are read
// with DISTINCT). It returns the versions it applied.
func MigrateFS(ctx context.Context, conn driver.Conn, fsys fs.FS) ([]int, error) {
	migrations, err := LoadMigrations(fsys)
	if err != nil {
		return nil, err
	}
	if err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    UInt32,
		name       String,
		applied_at DateTime
	) ENGINE = MergeTree() ORDER BY version`); err != nil {
		return nil, fmt.Errorf("clickhouse migrate: create schema_migrations: %w", err)
	}
	done, err := appliedVersions(ctx, conn)
	if err != nil {
		return nil, err
	}
	var applied []int
	for _, m := range migrations {
		if done[m.Version] {
			continue
		}
		for i, stmt := range m.Statements {
			if err := conn.Exec(ctx, stmt); err != nil && !columnAlreadyAdded(stmt, err) {
				return applied, fmt.Errorf("clickhouse migrate: %s statement %d: %w", m.Name, i+1, err)
			}
		}
		if err := record(ctx, conn, m); err != nil {
			return applied, err
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// columnAlreadyAdded recognises the re-run of an ALTER TABLE ... ADD COLUMN whose column
// exists: ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS, so this is how such a statement
// stays idempotent when an interrupted migration runs again.
func columnAlreadyAdded(stmt string, err error) bool {
	var ex *clickhouse.Exception
	if !errors.As(err, &ex) || ex.Code != 44 || !strings.Contains(ex.Message, "already exists") {
		return false
	}
	upper := strings.ToUpper(stmt)
	return strings.HasPrefix(upper, "ALTER TABLE") && strings.Contains(upper, "ADD COLUMN")
}

// record writes the bookkeeping row through a batch: on 18.16 an INSERT ... VALUES with
// bound arguments sent through Exec never completes (the server waits for a data block).
func record(ctx context.Context, conn driver.Conn, m Migration) error {
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO schema_migrations (version, name, applied_at)")
	if err != nil {
		return fmt.Errorf("clickhouse migrate: record %s: %w", m.Name, err)
	}
	if err := batch.Append(uint32(m.Version), m.Name, time.Now()); err != nil {
		return fmt.Errorf("clickhouse migrate: record %s: %w", m.Name, err)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("clickhouse migrate: record %s: %w", m.Name, err)
	}
	return nil
}

func appliedVersions(ctx context.Context, conn driver.Conn) (map[int]bool, error) {
	rows, err := conn.Query(ctx, "SELECT DISTINCT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("clickhouse migrate: read schema_migrations: %w", err)
	}
	defer rows.Close()
	done := map[int]bool{}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("clickhouse migrate: read schema_migrations: %w", err)
		}
		done[int(v)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("clickhouse migrate: read schema_migrations: %w", err)
	}
	return done, nil
}

// LoadMigrations reads, splits and orders the *.sql files at the root of fsys. Names must
// start with a positive version number and '_'; versions must be unique.
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	files, err := migrations.Load(fsys)
	if err != nil {
		return nil, fmt.Errorf("clickhouse migrate: %w", err)
	}
	out := make([]Migration, 0, len(files))
	for _, f := range files {
		stmts := SplitStatements(f.SQL)
		if len(stmts) == 0 {
			return nil, fmt.Errorf("clickhouse migrate: %s holds no statement", f.Name)
		}
		out = append(out, Migration{Version: f.Version, Name: f.Name, Statements: stmts})
	}
	return out, nil
}

// SplitStatements cuts a migration file into statements, because the native protocol runs
// one statement per query. Lines starting with "--" are comments; a statement ends with ';'
// at the end of a line (a ';' inside a line, e.g. in a string literal, does not split).
func SplitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			continue
		}
		if strings.HasSuffix(trimmed, ";") {
			cur.WriteString(strings.TrimSuffix(trimmed, ";"))
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
	}
	flush()
	return out
}
