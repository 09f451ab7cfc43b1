package testenv

import (
	"context"
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
	name := Name(t)
	adminExec(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { adminExec(t, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPG, err)
	}
	u.Path = "/" + name
	return u.String()
}

// PGSchema creates a fresh schema in the test database and returns a URL whose connections
// use it as search_path, plus the schema name. The schema is dropped when the test ends.
// Cheaper than PGDatabase for tests that only need a few scratch tables.
func PGSchema(t testing.TB) (connURL, schema string) {
	t.Helper()
	base := PG(t)
	schema = Name(t)
	adminExec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { adminExec(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvPG, err)
	}
	q := u.Query()
	q.Set("search_path", schema) // pgx passes unknown URL parameters as run-time parameters
	u.RawQuery = q.Encode()
	return u.String(), schema
}

func adminExec(t testing.TB, connURL, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connURL)
	if err != nil {
		t.Fatalf("connect to test Postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
