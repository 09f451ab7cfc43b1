package testenv

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGDatabase creates an empty database for this test on the test Postgres and returns a URL
// that points at it. The database is dropped (connections forced out) when the test ends.
// Use it when a test runs migrations or owns schemas (cmd, rm) of its own.
func PGDatabase(t testing.TB) string {
	t.Helper()
	base := PG(t)
	name := scratch(t, func(sql string) { adminExec(t, base, sql) }, "CREATE DATABASE %s", "DROP DATABASE IF EXISTS %s WITH (FORCE)")
	return withURL(t, base, func(u *url.URL) { u.Path = "/" + name })
}

// PGSchema creates a fresh schema in the test database and returns a URL whose connections
// use it as search_path, plus the schema name. The schema is dropped when the test ends.
// Cheaper than PGDatabase for tests that only need a few scratch tables.
func PGSchema(t testing.TB) (connURL, schema string) {
	t.Helper()
	base := PG(t)
	schema = scratch(t, func(sql string) { adminExec(t, base, sql) }, "CREATE SCHEMA %s", "DROP SCHEMA IF EXISTS %s CASCADE")
	return withURL(t, base, func(u *url.URL) {
		q := u.Query()
		q.Set("search_path", schema) // pgx passes unknown URL parameters as run-time parameters
		u.RawQuery = q.Encode()
	}), schema
}

// withURL is the test Postgres URL base changed by edit.
func withURL(t testing.TB, base string, edit func(*url.URL)) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPG, err)
	}
	edit(u)
	return u.String()
}

func adminExec(t testing.TB, connURL, sql string) {
	t.Helper()
	within30s(t, sql, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, connURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	})
}

// scratch creates an object named for this test (a database, a schema) by running create
// with exec, drops it with drop when the test ends, and returns its name.
func scratch(t testing.TB, exec func(sql string), create, drop string) string {
	t.Helper()
	name := Name(t)
	exec(fmt.Sprintf(create, name))
	t.Cleanup(func() { exec(fmt.Sprintf(drop, name)) })
	return name
}

// within30s runs a statement of the test setup, failing the test when it fails or takes more
// than 30 seconds.
func within30s(t testing.TB, what string, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Explain returns the lines of the plan q makes for sql with args (EXPLAIN sql), failing the
// test on any error.
func Explain(t testing.TB, ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return plan
}
