// Package testenv gives integration tests the real Kafka, Postgres and ClickHouse that
// `make test` starts, and isolates each test's data on them (own database, schema, ClickHouse
// database or topic prefix), so tests can run in parallel and leave nothing behind.
//
// The servers are found through environment variables set by `make test`. A missing variable
// fails the test (never skips it): an integration test that silently does not run proves nothing.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// Environment variables set by `make test` (see the team contract).
const (
	EnvKafka = "TRADESVC_TEST_KAFKA_BROKERS"
	EnvPG    = "TRADESVC_TEST_PG_URL"
	EnvCH    = "TRADESVC_TEST_CH_ADDR"
)

// Kafka returns the test broker list (comma separated host:port) or fails the test.
func Kafka(t testing.TB) string { return need(t, EnvKafka) }

// PG returns the URL of the test Postgres database or fails the test.
func PG(t testing.TB) string { return need(t, EnvPG) }

// CH returns the native-protocol address (host:port) of the test ClickHouse or fails the test.
func CH(t testing.TB) string { return need(t, EnvCH) }

func need(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: integration tests need the real servers; run via make test", name)
	}
	return v
}

// Name returns a fresh identifier "t_<16 hex digits>", safe as a Postgres or ClickHouse
// database/schema name and inside a Kafka topic name.
func Name(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random name: %v", err)
	}
	return "t_" + hex.EncodeToString(b[:])
}
