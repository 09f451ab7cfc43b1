package postgres

import (
	"context"
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
// grows past the next step (growing fivefold from 200 rows, up to a million), the tables are
// analyzed in the background, which also makes every cached plan be made afresh.
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
	analyzeLast   = 1_000_000
)

// NewAnalyzer analyzes tables (schema-qualified names) of pool as they grow.
func NewAnalyzer(pool *pgxpool.Pool, log *slog.Logger, tables ...string) *Analyzer {
	if log == nil {
		log = slog.Default()
	}
	return &Analyzer{pool: pool, tables: strings.Join(tables, ", "), log: log, next: analyzeFirst}
}

// Added counts rows added to the tables; it never blocks.
func (a *Analyzer) Added(n int) {
	if a == nil || n <= 0 {
		return
	}
	a.mu.Lock()
	a.added += int64(n)
	if a.added < a.next || a.next > analyzeLast || a.running {
		a.mu.Unlock()
		return
	}
	a.next *= analyzeGrowth
	a.running = true
	a.mu.Unlock()
	go func() {
		defer func() {
			a.mu.Lock()
			a.running = false
			a.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := a.pool.Exec(ctx, "ANALYZE "+a.tables); err != nil {
			a.log.Warn("postgres: analyze growing tables; autovacuum will", "tables", a.tables, "err", err)
		}
	}()
}
