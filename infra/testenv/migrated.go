package testenv

import (
	"context"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/clickhouse"
	"tradesvc/infra/postgres"
)

// MigratedPG returns a pool on a fresh Postgres database (PGDatabase) with every migration
// applied; both are closed and dropped when the test ends.
func MigratedPG(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := postgres.Open(ctx, postgres.Config{URL: PGDatabase(t), MaxConns: 4})
	if err != nil {
		t.Fatalf("open test Postgres: %v", err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatalf("migrate test Postgres: %v", err)
	}
	return pool
}

// MigratedCH returns a connection to a fresh ClickHouse database (CHDatabase) with every
// migration applied; both are closed and dropped when the test ends.
func MigratedCH(t testing.TB) driver.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := clickhouse.Open(ctx, clickhouse.Config{Addr: CH(t), Database: CHDatabase(t)})
	if err != nil {
		t.Fatalf("open test ClickHouse: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := clickhouse.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrate test ClickHouse: %v", err)
	}
	return conn
}
