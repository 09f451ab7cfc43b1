// Package apptest starts the whole service in-process against the real Kafka, Postgres and
// ClickHouse of `make test`, isolated per test (own topic prefix, Postgres database,
// ClickHouse database, simulator data and ports), for end-to-end tests and benchmarks.
package apptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/infra/config"
	"tradesvc/infra/testenv"
)

// Service is a running in-process service.
type Service struct {
	App     *app.App
	Config  config.Config
	BaseURL string
	// TLS trusts the service's local CA (for HTTPS and WSS clients).
	TLS *tls.Config
	// HTTP is a keep-alive HTTPS client that trusts the service.
	HTTP *http.Client
	// PG is a pool on the service's database (for arranging keys and reading read models).
	PG *pgxpool.Pool
}

// Start builds and runs the service with every role; it stops when the test ends.
func Start(t testing.TB) *Service {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	runDir := t.TempDir()
	fs := flag.NewFlagSet("apptest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, err := config.Load(fs, nil, func(k string) string {
		return map[string]string{
			"TRADESVC_LISTEN":        "127.0.0.1:0",
			"TRADESVC_SIM_LISTEN":    "127.0.0.1:0",
			"TRADESVC_RUN_DIR":       runDir,
			"TRADESVC_KAFKA_BROKERS": testenv.Kafka(t),
			"TRADESVC_TOPIC_PREFIX":  testenv.TopicPrefix(t),
			"TRADESVC_PG_URL":        testenv.PGDatabase(t),
			"TRADESVC_CH_ADDR":       testenv.CH(t),
			"TRADESVC_CH_DATABASE":   testenv.CHDatabase(t),
			"TRADESVC_LOG_LEVEL":     "warn",
		}[k]
	})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	startCtx, startCancel := context.WithTimeout(ctx, 60*time.Second)
	defer startCancel()
	a, err := app.New(startCtx, cfg, testenv.Logger())
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("service stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("service did not stop within 30s")
		}
		a.Close()
	})
	addr, err := a.GatewayAddr(startCtx)
	if err != nil {
		t.Fatalf("gateway did not start: %v", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(runDir, "tls", "ca.pem"))
	if err != nil {
		t.Fatalf("read CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	pg, err := pgxpool.New(ctx, cfg.PGURL)
	if err != nil {
		t.Fatalf("pg pool: %v", err)
	}
	t.Cleanup(pg.Close)
	s := &Service{App: a, Config: cfg, BaseURL: "https://" + addr, TLS: tlsCfg, PG: pg,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 64}}}
	return s
}

// Eventually polls cond every 50ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WSURL returns the stream URL for path (for WebSocket clients).
func (s *Service) WSURL(path string) string {
	return "wss://" + strings.TrimPrefix(s.BaseURL, "https://") + path
}
