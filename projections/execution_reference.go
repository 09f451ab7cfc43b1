package projections

import (
	"context"
	"fmt"
	"strconv"
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
	symbols  map[string]execRef
	accounts map[int64]string
	missing  map[string]time.Time
}

// execReferenceRetry is how long a symbol or account that was not found is not asked for.
const execReferenceRetry = time.Minute

func newExecReference(pool *pgxpool.Pool) *execReference {
	return &execReference{pool: pool, symbols: map[string]execRef{}, accounts: map[int64]string{},
		missing: map[string]time.Time{}}
}

// get returns what is known of symbol and login.
func (r *execReference) get(symbol string, login int64) execRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := r.symbols[symbol]
	ref.AccountCurrency = r.accounts[login]
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
	retry := func(key string) bool {
		at, ok := r.missing[key]
		return !ok || now.Sub(at) >= execReferenceRetry
	}
	var ss []string
	for _, s := range symbols {
		if _, ok := r.symbols[s]; !ok && s != "" && retry("s:"+s) {
			ss = append(ss, s)
		}
	}
	var ls []int64
	for _, l := range logins {
		if _, ok := r.accounts[l]; !ok && retry("a:"+strconv.FormatInt(l, 10)) {
			ls = append(ls, l)
		}
	}
	return ss, ls
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
	for _, s := range ask {
		if ref, ok := found[s]; ok {
			r.symbols[s] = ref
			delete(r.missing, "s:"+s)
		} else {
			r.missing["s:"+s] = now
		}
	}
	return nil
}

func (r *execReference) loadAccounts(ctx context.Context, ask []int64, now time.Time) error {
	rows, err := r.pool.Query(ctx, `SELECT login, currency FROM rm.accounts WHERE login = ANY($1)`, ask)
	if err != nil {
		return fmt.Errorf("execution quality: read accounts: %w", err)
	}
	defer rows.Close()
	found := map[int64]string{}
	for rows.Next() {
		var login int64
		var cur string
		if err := rows.Scan(&login, &cur); err != nil {
			return fmt.Errorf("execution quality: scan account: %w", err)
		}
		found[login] = cur
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("execution quality: read accounts: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range ask {
		key := "a:" + strconv.FormatInt(l, 10)
		if cur, ok := found[l]; ok {
			r.accounts[l] = cur
			delete(r.missing, key)
		} else {
			r.missing[key] = now
		}
	}
	return nil
}

// parseRefDecimal reads a decimal of the symbol specification (a JSON string); absent is 0.
func parseRefDecimal(s string) (apd.Decimal, error) {
	if s == "" {
		return apd.Decimal{}, nil
	}
	return dec.Parse(s)
}
