package projections

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// querier is what the digits cache reads with: a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// digitsCache holds the digits of symbols (rm.symbols), which frames and averaged prices are
// formatted with. Digits practically never change, so a symbol found is kept; a symbol not
// found (reference data not projected yet) is asked for again after execReferenceRetry, its
// decimals meanwhile written at their own precision.
type digitsCache struct {
	mu     sync.Mutex
	digits remembered[string, int32]
}

func newDigitsCache() *digitsCache { return &digitsCache{digits: newRemembered[string, int32]()} }

// get returns the digits of symbol; ok is false when it is not known.
func (c *digitsCache) get(symbol string) (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.digits.found[symbol]
	return d, ok
}

// load reads the digits of the symbols the cache does not hold yet.
func (c *digitsCache) load(ctx context.Context, q querier, symbols []string, now time.Time) error {
	named := make([]string, 0, len(symbols))
	for _, s := range symbols {
		if s != "" {
			named = append(named, s)
		}
	}
	c.mu.Lock()
	ask := c.digits.toAsk(named, now)
	c.mu.Unlock()
	if len(ask) == 0 {
		return nil
	}
	return readRemembered(ctx, q, &c.mu, c.digits, ask, now, "symbol digits",
		`SELECT symbol, (spec->>'digits')::int FROM rm.symbols WHERE symbol = ANY($1)`)
}

// readPairs reads a query of two columns into a map from the first to the second.
func readPairs[K comparable, V any](ctx context.Context, q querier, what, sql string, args ...any) (map[K]V, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	out, err := collectPairs[K, V](rows)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}

// collectPairs reads rows of two columns into a map from the first to the second.
func collectPairs[K comparable, V any](rows pgx.Rows) (map[K]V, error) {
	defer rows.Close()
	out := map[K]V{}
	for rows.Next() {
		var k K
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}
