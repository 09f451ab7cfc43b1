package projections

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events/dec"
)

// execReference is the reference data execution-quality rows need, read from the reference
// read models (rm.symbols, rm.accounts): a symbol's digits, tick size, tick value and profit
// currency, an account's currency. The gateway validates every order against those same read
// models, so they hold an operation's symbol and account before its command is in the log.
// What is found is kept (these figures practically never change); what is missing is asked
// for again after a minute, the rows meanwhile written without what it would give.
type execReference struct {
	pool *pgxpool.Pool

	mu       sync.Mutex
	symbols  remembered[string, execRef]
	accounts remembered[int64, string]
}

// execReferenceRetry is how long a symbol or account that was not found is not asked for.
const execReferenceRetry = time.Minute

func newExecReference(pool *pgxpool.Pool) *execReference {
	return &execReference{pool: pool, symbols: newRemembered[string, execRef](), accounts: newRemembered[int64, string]()}
}

// get returns what is known of symbol and login.
func (r *execReference) get(symbol string, login int64) execRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := r.symbols.found[symbol]
	ref.AccountCurrency = r.accounts.found[login]
	return ref
}

// load reads the symbols and accounts not known yet.
func (r *execReference) load(ctx context.Context, symbols []string, logins []int64, now time.Time) error {
	askSymbols, askLogins := r.unknown(symbols, logins, now)
	if len(askSymbols) > 0 {
		if err := r.loadSymbols(ctx, askSymbols, now); err != nil {
			return err
		}
	}
	if len(askLogins) > 0 {
		if err := r.loadAccounts(ctx, askLogins, now); err != nil {
			return err
		}
	}
	return nil
}

func (r *execReference) unknown(symbols []string, logins []int64, now time.Time) ([]string, []int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	named := make([]string, 0, len(symbols))
	for _, s := range symbols {
		if s != "" {
			named = append(named, s)
		}
	}
	return r.symbols.toAsk(named, now), r.accounts.toAsk(logins, now)
}

func (r *execReference) loadSymbols(ctx context.Context, ask []string, now time.Time) error {
	rows, err := r.pool.Query(ctx, `SELECT symbol, coalesce((spec->>'digits')::int, 0), coalesce(spec->>'tickSize', ''),
		coalesce(spec->>'tickValue', ''), coalesce(spec->>'currencyProfit', '') FROM rm.symbols WHERE symbol = ANY($1)`, ask)
	if err != nil {
		return fmt.Errorf("execution quality: read symbols: %w", err)
	}
	defer rows.Close()
	found := map[string]execRef{}
	for rows.Next() {
		var name, size, value string
		ref := execRef{SymbolOK: true}
		if err := rows.Scan(&name, &ref.Digits, &size, &value, &ref.ProfitCurrency); err != nil {
			return fmt.Errorf("execution quality: scan symbol: %w", err)
		}
		if ref.TickSize, err = parseRefDecimal(size); err != nil {
			return fmt.Errorf("execution quality: tick size of %s: %w", name, err)
		}
		if ref.TickValue, err = parseRefDecimal(value); err != nil {
			return fmt.Errorf("execution quality: tick value of %s: %w", name, err)
		}
		found[name] = ref
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("execution quality: read symbols: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.symbols.settle(ask, found, now)
	return nil
}

func (r *execReference) loadAccounts(ctx context.Context, ask []int64, now time.Time) error {
	return readRemembered(ctx, r.pool, &r.mu, r.accounts, ask, now, "execution quality accounts",
		`SELECT login, currency FROM rm.accounts WHERE login = ANY($1)`)
}

// remembered keeps what a reference lookup found, and when it last found a key missing: such
// a key is not asked for again before execReferenceRetry.
type remembered[K comparable, V any] struct {
	found   map[K]V
	missing map[K]time.Time
}

func newRemembered[K comparable, V any]() remembered[K, V] {
	return remembered[K, V]{found: map[K]V{}, missing: map[K]time.Time{}}
}

// toAsk returns the keys neither found nor found missing within execReferenceRetry.
func (m remembered[K, V]) toAsk(keys []K, now time.Time) []K {
	var out []K
	for _, k := range keys {
		if _, ok := m.found[k]; ok {
			continue
		}
		if at, ok := m.missing[k]; ok && now.Sub(at) < execReferenceRetry {
			continue
		}
		out = append(out, k)
	}
	return out
}

// settle records the answer to ask: what was found is kept, the rest is missing as of now.
func (m remembered[K, V]) settle(ask []K, found map[K]V, now time.Time) {
	for _, k := range ask {
		if v, ok := found[k]; ok {
			m.found[k] = v
			delete(m.missing, k)
		} else {
			m.missing[k] = now
		}
	}
}

// readRemembered reads the pairs sql selects for ask (its $1) and records them in m under mu:
// what was found is kept, the rest is missing as of now.
func readRemembered[K comparable, V any](ctx context.Context, q querier, mu *sync.Mutex, m remembered[K, V], ask []K,
	now time.Time, what, sql string) error {
	found, err := readPairs[K, V](ctx, q, what, sql, ask)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	m.settle(ask, found, now)
	return nil
}

// parseRefDecimal reads a decimal of the symbol specification (a JSON string); absent is 0.
func parseRefDecimal(s string) (apd.Decimal, error) {
	if s == "" {
		return apd.Decimal{}, nil
	}
	return dec.Parse(s)
}
