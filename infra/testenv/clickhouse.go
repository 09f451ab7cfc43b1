package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// CHDatabase creates a fresh database on the test ClickHouse and returns its name; it is
// dropped when the test ends. Pass it as the Database of infra/clickhouse.Config.
func CHDatabase(t testing.TB) string {
	t.Helper()
	addr := CH(t)
	return scratch(t, func(sql string) { chExec(t, addr, sql) }, "CREATE DATABASE %s", "DROP DATABASE IF EXISTS %s")
}

func chExec(t testing.TB, addr, sql string) {
	t.Helper()
	within30s(t, sql, func(ctx context.Context) error {
		// Native protocol: the HTTP protocol of clickhouse-go v2 does not work with ClickHouse 18.16.
		conn, err := clickhouse.Open(&clickhouse.Options{
			Addr:        []string{addr},
			Protocol:    clickhouse.Native,
			Auth:        clickhouse.Auth{Database: "default", Username: "default"},
			DialTimeout: 10 * time.Second,
		})
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.Exec(ctx, sql)
	})
}
