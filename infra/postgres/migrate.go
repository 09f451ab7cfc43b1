package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/migrations"
)

// migrationFiles holds the service's migrations. Numbering: 0001..0099 belong to the
// infrastructure (command side), 0100 onwards to the read models.
//
//go:embed migrations
var migrationFiles embed.FS

// Migrations returns the embedded migration files (the root holds the *.sql files).
func Migrations() fs.FS { return migrations.Dir(migrationFiles) }

// migrateLockKey is the advisory lock that serialises concurrent migration runs
// (several service instances starting at once). Arbitrary, but fixed forever.
const migrateLockKey int64 = 0x7472616465737663 // "tradesvc"

// Migration is one numbered SQL file.
type Migration = migrations.File

// Migrate applies every embedded migration that the database has not seen yet.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := MigrateFS(ctx, pool, Migrations())
	return err
}

// MigrateFS applies the *.sql files at the root of fsys, named NNNN_description.sql, in
// version order, each once, each in its own transaction together with its row in
// public.schema_migrations. A session advisory lock makes concurrent runs safe: the second
// runner waits and then finds nothing left to do. It returns the versions it applied.
//
// A file may hold several statements (it runs through the simple query protocol), but not
// statements that refuse to run in a transaction (CREATE INDEX CONCURRENTLY, VACUUM).
func MigrateFS(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) ([]int, error) {
	migrations, err := LoadMigrations(fsys)
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()

	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return nil, fmt.Errorf("migrate: take advisory lock: %w", err)
	}
	defer func() {
		// A fresh context: the caller's may be cancelled, and a lock left on a pooled
		// connection would block every later run.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) // closing the session releases the lock
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS public.schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	done, err := appliedVersions(ctx, conn.Conn())
	if err != nil {
		return nil, err
	}

	var applied []int
	for _, m := range migrations {
		if done[m.Version] {
			continue
		}
		if err := applyOne(ctx, conn.Conn(), m); err != nil {
			return applied, err
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

func appliedVersions(ctx context.Context, conn *pgx.Conn) (map[int]bool, error) {
	rows, err := conn.Query(ctx, "SELECT version FROM public.schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	done := make(map[int]bool, len(versions))
	for _, v := range versions {
		done[int(v)] = true
	}
	return done, nil
}

func applyOne(ctx context.Context, conn *pgx.Conn, m Migration) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// No arguments: pgx uses the simple protocol, so a file may hold many statements.
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO public.schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: %s: %w", m.Name, err)
	}
	return nil
}

// LoadMigrations reads and orders the *.sql files at the root of fsys. Names must start with
// a version number followed by '_' (0001_command_side.sql); two files with one number are
// an error, so that a merge of two branches cannot silently skip one.
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	files, err := migrations.Load(fsys)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return files, nil
}
