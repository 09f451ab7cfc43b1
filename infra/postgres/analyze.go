package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Analyzer keeps the statistics of fast-growing tables current while they are young.
// Postgres plans from the statistics a table had when a statement was first planned, and a
// generic plan made while a table was empty (a new deployment) stays in each connection's
// cache until the table is analyzed again; autovacuum only looks every minute, by which time
// a table taking a thousand rows a second has outgrown such plans (a join that scans). The
// writers of those tables tell the Analyzer how many rows they added; each time the total
// grows past the next step (growing fivefold from 200 rows, up to 25,000), the tables are
// analyzed in the background, which also makes every cached plan be made afresh.
//
// Such an analyze only has to tell a young table from an empty one, so it samples few rows
// (analyzeStatisticsTarget) and the analyzes of a process run one at a time. At the default
// target, the analyzes of the order path's three writers crossed a step together and took
// 1.1–2.2 s of CPU each, three at once on a two-core machine: every order in flight waited
// for them (make bench: a RESULT p99 of 47 ms against 20, and an ACK step that shed).
// Past the last step, autovacuum keeps the statistics current at its own, throttled pace.
type Analyzer struct {
	pool   *pgxpool.Pool
	tables string
	log    *slog.Logger

	mu      sync.Mutex
	added   int64
	next    int64
	running bool
}

// analyzeFirst and analyzeLast bound the steps; analyzeGrowth multiplies them.
const (
	analyzeFirst  = 200
	analyzeGrowth = 5
	analyzeLast   = 25_000
)

// analyzeStatisticsTarget is the statistics target of the Analyzer's analyzes (Postgres
// samples 300 times as many rows of each table; its default target is 100).
const analyzeStatisticsTarget = 10

// analyzing lets one Analyzer of the process analyze at a time.
var analyzing sync.Mutex

// NewAnalyzer analyzes tables (schema-qualified names) of pool as they grow.
func NewAnalyzer(pool *pgxpool.Pool, log *slog.Logger, tables ...string) *Analyzer {
	if log == nil {
		log = slog.Default()
	}
	return &Analyzer{pool: pool, tables: strings.Join(tables, ", "), log: log, next: analyzeFirst}
}

// Added counts rows added to the tables; it never blocks.
func (a *Analyzer) Added(n int) {
	if a == nil || !a.due(n) {
		return
	}
	go func() {
		defer func() {
			a.mu.Lock()
			a.running = false
			a.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := a.analyze(ctx); err != nil {
			a.log.Warn("postgres: analyze growing tables; autovacuum will", "tables", a.tables, "err", err)
		}
	}()
}

// due counts n rows added and reports whether they crossed the next step (the analyze it
// starts is running until it ends).
func (a *Analyzer) due(n int) bool {
	if n <= 0 {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.added += int64(n)
	if a.added < a.next || a.next > analyzeLast || a.running {
		return false
	}
	for a.next <= a.added {
		a.next *= analyzeGrowth
	}
	a.running = true
	return true
}

// analyze analyzes the tables with a small sample, once no other Analyzer of the process is.
func (a *Analyzer) analyze(ctx context.Context) error {
	analyzing.Lock()
	defer analyzing.Unlock()
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL default_statistics_target = %d", analyzeStatisticsTarget)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "ANALYZE "+a.tables); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
