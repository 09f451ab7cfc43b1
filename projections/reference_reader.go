package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events/trading"
	"tradesvc/query"
)

// ReferenceReader serves the symbol, server and account read models to the query handlers.
// Symbols and the server record are few and read on every market-data request, so they are
// held in memory and reloaded at most every refresh interval (sooner when the reference
// projection signals a change: Invalidate); accounts are read from Postgres on each call of
// Account, and cached the same way for the request pipeline's checks (Cached).
type ReferenceReader struct {
	pool    *pgxpool.Pool
	refresh time.Duration

	snap    atomic.Pointer[refSnapshot]
	loadMu  sync.Mutex
	invalid atomic.Bool

	gen      atomic.Int64 // bumped by Invalidate: older cached accounts are stale
	accounts sync.Map     // login → cachedAccount
}

type cachedAccount struct {
	acc query.Account
	ok  bool
	at  time.Time
	gen int64
}

type refSnapshot struct {
	loadedAt time.Time
	bySymbol map[string]trading.SymbolSpec
	ordered  []trading.SymbolSpec
	tzOffset int
}

// NewReferenceReader builds the reader; refresh bounds how stale the symbol cache may be.
func NewReferenceReader(pool *pgxpool.Pool, refresh time.Duration) (*ReferenceReader, error) {
	if pool == nil {
		return nil, errors.New("projections: reference reader needs a pool")
	}
	if refresh <= 0 {
		refresh = 2 * time.Second
	}
	return &ReferenceReader{pool: pool, refresh: refresh}, nil
}

// Invalidate makes the next read reload symbols, the server record and accounts.
func (r *ReferenceReader) Invalidate() {
	r.invalid.Store(true)
	r.gen.Add(1)
}

// InvalidateAccounts makes the next read of an account reload it (Cached).
func (r *ReferenceReader) InvalidateAccounts() { r.gen.Add(1) }

// Changed drops what a reference change of scope made stale.
func (r *ReferenceReader) Changed(scope RefScope) {
	if scope == RefAccounts {
		r.InvalidateAccounts()
		return
	}
	r.Invalidate()
}

// Cached is the account read model with the symbols' caching: what the request pipeline
// checks on every TRADE and account-scoped request (exists, active, trading allowed), read
// from Postgres at most every refresh interval per login, and at once after a change of
// reference data (Invalidate). GET /v1/account reads the account itself (its figures move).
func (r *ReferenceReader) Cached() query.AccountReader { return cachedAccounts{r} }

type cachedAccounts struct{ r *ReferenceReader }

// Account implements query.AccountReader from the cache.
func (c cachedAccounts) Account(ctx context.Context, login int64) (query.Account, bool, error) {
	gen := c.r.gen.Load()
	if v, ok := c.r.accounts.Load(login); ok {
		e := v.(cachedAccount)
		if e.gen == gen && time.Since(e.at) < c.r.refresh {
			return e.acc, e.ok, nil
		}
	}
	acc, ok, err := c.r.Account(ctx, login)
	if err != nil {
		return acc, ok, err
	}
	c.r.accounts.Store(login, cachedAccount{acc: acc, ok: ok, at: time.Now(), gen: gen})
	return acc, ok, nil
}

// Accounts implements query.AccountReader (not cached: a list answers GET /v1/accounts).
func (c cachedAccounts) Accounts(ctx context.Context, logins []int64) ([]query.Account, error) {
	return c.r.Accounts(ctx, logins)
}

func (r *ReferenceReader) snapshot(ctx context.Context) (*refSnapshot, error) {
	s := r.snap.Load()
	if s != nil && !r.invalid.Load() && time.Since(s.loadedAt) < r.refresh {
		return s, nil
	}
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if s2 := r.snap.Load(); s2 != s && s2 != nil && !r.invalid.Load() {
		return s2, nil // another caller reloaded while we waited
	}
	r.invalid.Store(false)
	fresh, err := r.load(ctx)
	if err != nil {
		if s != nil {
			return s, nil // serve the last good snapshot rather than fail market data
		}
		return nil, err
	}
	r.snap.Store(fresh)
	return fresh, nil
}

func (r *ReferenceReader) load(ctx context.Context) (*refSnapshot, error) {
	rows, err := r.pool.Query(ctx, `SELECT spec FROM rm.symbols`)
	if err != nil {
		return nil, fmt.Errorf("load symbols: %w", err)
	}
	specs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (trading.SymbolSpec, error) {
		var raw []byte
		if err := row.Scan(&raw); err != nil {
			return trading.SymbolSpec{}, err
		}
		var spec trading.SymbolSpec
		err := json.Unmarshal(raw, &spec)
		return spec, err
	})
	if err != nil {
		return nil, fmt.Errorf("load symbols: %w", err)
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Symbol < specs[j].Symbol })
	s := &refSnapshot{loadedAt: time.Now(), bySymbol: make(map[string]trading.SymbolSpec, len(specs)), ordered: specs}
	for _, sp := range specs {
		s.bySymbol[sp.Symbol] = sp
	}
	err = r.pool.QueryRow(ctx, `SELECT time_zone_offset_minutes FROM rm.server WHERE id = 1`).Scan(&s.tzOffset)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("load server: %w", err)
	}
	return s, nil
}

// Symbols implements query.SymbolReader.
func (r *ReferenceReader) Symbols(ctx context.Context) ([]trading.SymbolSpec, error) {
	s, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return s.ordered, nil
}

// Symbol implements query.SymbolReader and query.SymbolLookup (exact, case-sensitive name).
func (r *ReferenceReader) Symbol(ctx context.Context, name string) (trading.SymbolSpec, bool, error) {
	s, err := r.snapshot(ctx)
	if err != nil {
		return trading.SymbolSpec{}, false, err
	}
	sp, ok := s.bySymbol[name]
	return sp, ok, nil
}

// TimeZoneOffsetMinutes implements query.ServerInfo. Before the trade server's record has
// been projected it reports 0.
func (r *ReferenceReader) TimeZoneOffsetMinutes() int {
	s, err := r.snapshot(context.Background())
	if err != nil {
		return 0
	}
	return s.tzOffset
}

const accountColumns = `login, grp, currency, leverage, demo, trade_allowed, balance::text, credit::text, equity::text,
	margin::text, free_margin::text, profit::text, margin_level::text, update_time`

// Account implements query.AccountReader: only active accounts are found.
func (r *ReferenceReader) Account(ctx context.Context, login int64) (query.Account, bool, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+accountColumns+` FROM rm.accounts WHERE login = $1 AND active`, login)
	if err != nil {
		return query.Account{}, false, fmt.Errorf("read account %d: %w", login, err)
	}
	accts, err := pgx.CollectRows(rows, scanAccount)
	if err != nil {
		return query.Account{}, false, fmt.Errorf("read account %d: %w", login, err)
	}
	if len(accts) == 0 {
		return query.Account{}, false, nil
	}
	return accts[0], true, nil
}

// Accounts implements query.AccountReader.
func (r *ReferenceReader) Accounts(ctx context.Context, logins []int64) ([]query.Account, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+accountColumns+` FROM rm.accounts WHERE login = ANY($1) AND active ORDER BY login`, logins)
	if err != nil {
		return nil, fmt.Errorf("read accounts: %w", err)
	}
	accts, err := pgx.CollectRows(rows, scanAccount)
	if err != nil {
		return nil, fmt.Errorf("read accounts: %w", err)
	}
	return accts, nil
}

func scanAccount(row pgx.CollectableRow) (query.Account, error) {
	var a query.Account
	var bal, cred, eq, mar, free, prof, lvl string
	if err := row.Scan(&a.Login, &a.Group, &a.Currency, &a.Leverage, &a.Demo, &a.TradeAllowed,
		&bal, &cred, &eq, &mar, &free, &prof, &lvl, &a.UpdateTime); err != nil {
		return a, err
	}
	err := parseColumns([]string{bal, cred, eq, mar, free, prof, lvl},
		&a.Balance, &a.Credit, &a.Equity, &a.Margin, &a.FreeMargin, &a.Profit, &a.MarginLevel)
	return a, err
}
