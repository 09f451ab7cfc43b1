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
// found (reference data not projected yet) is asked for again after a minute, its decimals
// meanwhile written at their own precision.
type digitsCache struct {
	mu      sync.Mutex
	known   map[string]int32
	missing map[string]time.Time
}

const digitsRetry = time.Minute

func newDigitsCache() *digitsCache {
	return &digitsCache{known: map[string]int32{}, missing: map[string]time.Time{}}
}

// get returns the digits of symbol; ok is false when it is not known.
func (c *digitsCache) get(symbol string) (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.known[symbol]
	return d, ok
}

// load reads the digits of the symbols the cache does not hold yet.
func (c *digitsCache) load(ctx context.Context, q querier, symbols []string, now time.Time) error {
	c.mu.Lock()
	var ask []string
	for _, s := range symbols {
		if s == "" {
			continue
		}
		if _, ok := c.known[s]; ok {
			continue
		}
		if at, ok := c.missing[s]; ok && now.Sub(at) < digitsRetry {
			continue
		}
		ask = append(ask, s)
	}
	c.mu.Unlock()
	if len(ask) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `SELECT symbol, (spec->>'digits')::int FROM rm.symbols WHERE symbol = ANY($1)`, ask)
	if err != nil {
		return fmt.Errorf("load symbol digits: %w", err)
	}
	found := map[string]int32{}
	for rows.Next() {
		var s string
		var d int32
		if err := rows.Scan(&s, &d); err != nil {
			rows.Close()
			return fmt.Errorf("scan symbol digits: %w", err)
		}
		found[s] = d
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load symbol digits: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range ask {
		if d, ok := found[s]; ok {
			c.known[s] = d
			delete(c.missing, s)
		} else {
			c.missing[s] = now
		}
	}
	return nil
}
