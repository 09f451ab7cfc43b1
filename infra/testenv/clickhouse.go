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
	name := Name(t)
	chExec(t, addr, "CREATE DATABASE "+name)
	t.Cleanup(func() { chExec(t, addr, "DROP DATABASE IF EXISTS "+name) })
	return name
}

func chExec(t testing.TB, addr, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Native protocol: the HTTP protocol of clickhouse-go v2 does not work with ClickHouse 18.16.
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{addr},
		Protocol:    clickhouse.Native,
		Auth:        clickhouse.Auth{Database: "default", Username: "default"},
		DialTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("open test ClickHouse: %v", err)
	}
	defer conn.Close()
	if err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
