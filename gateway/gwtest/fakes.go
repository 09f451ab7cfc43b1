package gwtest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/gateway"
	"tradesvc/query"
)

// Keys is an in-memory gateway.KeyStore. Lookups counts calls (to observe caching).
type Keys struct {
	mu      sync.Mutex
	keys    map[string]gateway.Key
	fail    error
	Lookups atomic.Int64
}

// NewKeys returns a store holding keys.
func NewKeys(keys ...gateway.Key) *Keys {
	s := &Keys{keys: map[string]gateway.Key{}}
	for _, k := range keys {
		s.Put(k)
	}
	return s
}

// Put adds or replaces a key.
func (s *Keys) Put(k gateway.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[k.APIKey] = k
}

// Fail makes every lookup return err (nil restores).
func (s *Keys) Fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Lookup implements gateway.KeyStore.
func (s *Keys) Lookup(_ context.Context, apiKey string) (gateway.Key, error) {
	s.Lookups.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return gateway.Key{}, s.fail
	}
	k, ok := s.keys[apiKey]
	if !ok {
		return gateway.Key{}, gateway.ErrUnknownKey
	}
	return k, nil
}

// Switches is a settable gateway.Switches (trading on, executor alive by default).
type Switches struct {
	TradingOff  atomic.Bool
	ExecutorOff atomic.Bool
}

// TradingEnabled implements gateway.Switches.
func (s *Switches) TradingEnabled(context.Context) bool { return !s.TradingOff.Load() }

// ExecutionPathUp implements gateway.Switches.
func (s *Switches) ExecutionPathUp(context.Context) bool { return !s.ExecutorOff.Load() }

// Market is an in-memory symbol, quote, tick, day-statistics and bar store.
type Market struct {
	mu      sync.RWMutex
	symbols map[string]trading.SymbolSpec
	quotes  map[string]query.Quote
	ticks   map[string][]query.Quote
	stats   map[string]query.DayStats
	bars    map[string][]query.Bar
	Offset  int
}

// NewMarket returns an empty market with server zone offset 180.
func NewMarket() *Market {
	return &Market{symbols: map[string]trading.SymbolSpec{}, quotes: map[string]query.Quote{},
		ticks: map[string][]query.Quote{}, stats: map[string]query.DayStats{}, bars: map[string][]query.Bar{}, Offset: 180}
}

// AddSymbol adds a specification.
func (m *Market) AddSymbol(s trading.SymbolSpec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.symbols[s.Symbol] = s
}

// SetQuote records a tick: it becomes the latest quote and is appended to the buffer.
func (m *Market) SetQuote(q query.Quote) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.quotes[q.Symbol] = q
	m.ticks[q.Symbol] = append(m.ticks[q.Symbol], q)
}

// SetDayStats records a symbol's day statistics.
func (m *Market) SetDayStats(s query.DayStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats[s.Symbol] = s
}

// AddBars appends 1-minute bars (kept sorted by open time).
func (m *Market) AddBars(symbol string, bars ...query.Bar) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := append(m.bars[symbol], bars...)
	slices.SortFunc(all, func(a, b query.Bar) int { return cmp.Compare(a.OpenTime, b.OpenTime) })
	m.bars[symbol] = all
}

// Symbols implements query.SymbolReader.
func (m *Market) Symbols(context.Context) ([]trading.SymbolSpec, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]trading.SymbolSpec, 0, len(m.symbols))
	for _, s := range m.symbols {
		out = append(out, s)
	}
	return out, nil
}

// Symbol implements query.SymbolReader (exact, case-sensitive).
func (m *Market) Symbol(_ context.Context, name string) (trading.SymbolSpec, bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.symbols[name]
	return s, ok, nil
}

// Quote implements query.QuoteReader.
func (m *Market) Quote(symbol string) (query.Quote, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	q, ok := m.quotes[symbol]
	return q, ok
}

// Quotes implements query.QuoteReader.
func (m *Market) Quotes() []query.Quote {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]query.Quote, 0, len(m.quotes))
	for _, q := range m.quotes {
		out = append(out, q)
	}
	return out
}

// Ticks implements query.QuoteReader.
func (m *Market) Ticks(symbol string, limit int) []query.Quote {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.ticks[symbol]
	if len(t) > limit {
		t = t[len(t)-limit:]
	}
	return slices.Clone(t)
}

// DayStats implements query.DayStatsReader.
func (m *Market) DayStats(symbol string) (query.DayStats, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.stats[symbol]
	return s, ok
}

// AllDayStats implements query.DayStatsReader.
func (m *Market) AllDayStats() []query.DayStats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]query.DayStats, 0, len(m.stats))
	for _, s := range m.stats {
		out = append(out, s)
	}
	return out
}

// Candles implements query.BarReader by folding the stored 1-minute bars (oldest first)
// into epoch-aligned buckets of intervalMs, as the ClickHouse reader does in SQL.
func (m *Market) Candles(_ context.Context, symbol string, intervalMs, from, to int64, limit int) ([]query.Bar, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []query.Bar{}
	for _, b := range m.bars[symbol] {
		open := b.OpenTime - b.OpenTime%intervalMs
		if open < from || open > to {
			continue
		}
		if n := len(out); n > 0 && out[n-1].OpenTime == open {
			cur := &out[n-1]
			if b.High.Cmp(&cur.High) > 0 {
				cur.High = b.High
			}
			if b.Low.Cmp(&cur.Low) < 0 {
				cur.Low = b.Low
			}
			cur.Close, cur.Count = b.Close, cur.Count+b.Count
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, query.Bar{OpenTime: open, Open: b.Open, High: b.High, Low: b.Low, Close: b.Close, Count: b.Count})
	}
	return out, nil
}

// TimeZoneOffsetMinutes implements query.ServerInfo.
func (m *Market) TimeZoneOffsetMinutes() int { return m.Offset }

// Accounts is an in-memory query.AccountReader holding active accounts.
type Accounts struct {
	mu   sync.RWMutex
	rows map[int64]query.Account
	fail error
}

// NewAccounts returns a reader holding accounts.
func NewAccounts(accts ...query.Account) *Accounts {
	a := &Accounts{rows: map[int64]query.Account{}}
	for _, x := range accts {
		a.Put(x)
	}
	return a
}

// Put adds or replaces an account.
func (a *Accounts) Put(x query.Account) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rows[x.Login] = x
}

// Remove deletes an account (as if archived).
func (a *Accounts) Remove(login int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.rows, login)
}

// Fail makes every read return err (nil restores).
func (a *Accounts) Fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = err
}

// Account implements query.AccountReader.
func (a *Accounts) Account(_ context.Context, login int64) (query.Account, bool, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.fail != nil {
		return query.Account{}, false, a.fail
	}
	x, ok := a.rows[login]
	return x, ok, nil
}

// Accounts implements query.AccountReader.
func (a *Accounts) Accounts(_ context.Context, logins []int64) ([]query.Account, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.fail != nil {
		return nil, a.fail
	}
	var out []query.Account
	for _, l := range logins {
		if x, ok := a.rows[l]; ok {
			out = append(out, x)
		}
	}
	return out, nil
}

// Clock is a settable clock; zero value reads the real time until Set is called.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		return time.Now()
	}
	return c.now
}

// Set fixes the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves a fixed clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// ErrDown is a handy injected failure.
var ErrDown = errors.New("gwtest: store down")

// EURUSD is a 5-digit FX specification for tests.
func EURUSD() trading.SymbolSpec {
	return trading.SymbolSpec{
		Symbol: "EURUSD", Description: "Euro vs US Dollar", Digits: 5,
		TickSize: dec.MustParse("0.00001"), TickValue: dec.MustParse("1"), ContractSize: dec.MustParse("100000"),
		VolumeMin: dec.MustParse("0.01"), VolumeMax: dec.MustParse("100"), VolumeStep: dec.MustParse("0.01"),
		StopsLevel: 10, FreezeLevel: 0, TradeMode: "FULL", ExecutionMode: "MARKET",
		FillModes: []string{"FOK", "IOC"}, ExpirationModes: []string{"GTC", "DAY", "GTD", "GTD_DAY"},
		OrderModes:   []string{"MARKET", "LIMIT", "STOP", "STOP_LIMIT", "SL", "TP", "CLOSE_BY"},
		CurrencyBase: "EUR", CurrencyProfit: "USD", CurrencyMargin: "EUR",
		SwapMode: "BY_POINTS", SwapLong: dec.MustParse("-7.5"), SwapShort: dec.MustParse("2.1"), Swap3Days: "WEDNESDAY",
		Sessions: [7][]events.Session{
			trading.Monday: {{Open: "00:00", Close: "24:00"}}, trading.Tuesday: {{Open: "00:00", Close: "24:00"}},
			trading.Wednesday: {{Open: "00:00", Close: "24:00"}}, trading.Thursday: {{Open: "00:00", Close: "24:00"}},
			trading.Friday: {{Open: "00:00", Close: "23:55"}},
		},
	}
}

// XAUUSD is a 2-digit metal specification for tests.
func XAUUSD() trading.SymbolSpec {
	s := EURUSD()
	s.Symbol, s.Description, s.Digits = "XAUUSD", "Gold vs US Dollar", 2
	s.TickSize, s.ContractSize = dec.MustParse("0.01"), dec.MustParse("100")
	s.CurrencyBase, s.CurrencyMargin = "XAU", "XAU"
	return s
}

// Operations is an empty operations read model with a watcher that never fires: the fake
// gateway serves no trading.
type Operations struct{}

// Operation implements query.OperationReader.
func (Operations) Operation(context.Context, string) (trading.Operation, bool, error) {
	return trading.Operation{}, false, nil
}

// WatchOperation implements query.OperationWatcher.
func (Operations) WatchOperation(string) (<-chan query.OperationState, func()) {
	return make(chan query.OperationState), func() {}
}
