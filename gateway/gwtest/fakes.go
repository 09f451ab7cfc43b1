package gwtest

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/gateway"
	"tradesvc/query"

	"github.com/cockroachdb/apd/v3"
)

// table is the store behind the fakes: rows by key, safe for concurrent use, and a failure
// that every read returns while it is set.
type table[K comparable, V any] struct {
	mu   sync.RWMutex
	rows map[K]V
	fail error
	key  func(V) K
}

func newTable[K comparable, V any](key func(V) K, rows []V) *table[K, V] {
	t := &table[K, V]{rows: map[K]V{}, key: key}
	for _, v := range rows {
		t.Put(v)
	}
	return t
}

// Put adds or replaces a row.
func (t *table[K, V]) Put(v V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows[t.key(v)] = v
}

// Fail makes every read return err (nil restores).
func (t *table[K, V]) Fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fail = err
}

// read runs fn on the rows under the read lock, unless a failure is set.
func (t *table[K, V]) read(fn func(rows map[K]V)) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.fail != nil {
		return t.fail
	}
	fn(t.rows)
	return nil
}

// get reads the row of k.
func (t *table[K, V]) get(k K) (v V, ok bool, err error) {
	err = t.read(func(rows map[K]V) { v, ok = rows[k] })
	return v, ok, err
}

// values lists every row, in no order (never nil).
func (t *table[K, V]) values() ([]V, error) {
	var out []V
	err := t.read(func(rows map[K]V) { out = slices.AppendSeq(make([]V, 0, len(rows)), maps.Values(rows)) })
	return out, err
}

// one and all read the tables of the in-memory readers, which have no failure to report.
func (t *table[K, V]) one(k K) (V, bool) {
	v, ok, _ := t.get(k)
	return v, ok
}

func (t *table[K, V]) all() []V {
	out, _ := t.values()
	return out
}

// Keys is an in-memory gateway.KeyStore. Lookups counts calls (to observe caching).
type Keys struct {
	*table[string, gateway.Key]
	Lookups atomic.Int64
}

// NewKeys returns a store holding keys.
func NewKeys(keys ...gateway.Key) *Keys {
	return &Keys{table: newTable(func(k gateway.Key) string { return k.APIKey }, keys)}
}

// Lookup implements gateway.KeyStore.
func (s *Keys) Lookup(_ context.Context, apiKey string) (gateway.Key, error) {
	s.Lookups.Add(1)
	k, ok, err := s.get(apiKey)
	if err != nil {
		return gateway.Key{}, err
	}
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
	symbols *table[string, trading.SymbolSpec]
	quotes  *table[string, query.Quote]
	stats   *table[string, query.DayStats]
	mu      sync.RWMutex // guards ticks and bars
	ticks   map[string][]query.Quote
	bars    map[string][]query.Bar
	Offset  int
}

// NewMarket returns an empty market with server zone offset 180.
func NewMarket() *Market {
	return &Market{
		symbols: newTable(func(s trading.SymbolSpec) string { return s.Symbol }, nil),
		quotes:  newTable(func(q query.Quote) string { return q.Symbol }, nil),
		stats:   newTable(func(s query.DayStats) string { return s.Symbol }, nil),
		ticks:   map[string][]query.Quote{}, bars: map[string][]query.Bar{}, Offset: 180,
	}
}

// AddSymbol adds a specification.
func (m *Market) AddSymbol(s trading.SymbolSpec) { m.symbols.Put(s) }

// SetQuote records a tick: it becomes the latest quote and is appended to the buffer.
func (m *Market) SetQuote(q query.Quote) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.quotes.Put(q)
	m.ticks[q.Symbol] = append(m.ticks[q.Symbol], q)
}

// SetDayStats records a symbol's day statistics.
func (m *Market) SetDayStats(s query.DayStats) { m.stats.Put(s) }

// AddBars appends 1-minute bars (kept sorted by open time).
func (m *Market) AddBars(symbol string, bars ...query.Bar) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := append(m.bars[symbol], bars...)
	slices.SortFunc(all, func(a, b query.Bar) int { return cmp.Compare(a.OpenTime, b.OpenTime) })
	m.bars[symbol] = all
}

// Symbols implements query.SymbolReader.
func (m *Market) Symbols(context.Context) ([]trading.SymbolSpec, error) { return m.symbols.values() }

// Symbol implements query.SymbolReader (exact, case-sensitive).
func (m *Market) Symbol(_ context.Context, name string) (trading.SymbolSpec, bool, error) {
	return m.symbols.get(name)
}

// Quote implements query.QuoteReader.
func (m *Market) Quote(symbol string) (query.Quote, bool) { return m.quotes.one(symbol) }

// Quotes implements query.QuoteReader.
func (m *Market) Quotes() []query.Quote { return m.quotes.all() }

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
func (m *Market) DayStats(symbol string) (query.DayStats, bool) { return m.stats.one(symbol) }

// AllDayStats implements query.DayStatsReader.
func (m *Market) AllDayStats() []query.DayStats { return m.stats.all() }

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
type Accounts struct{ *table[int64, query.Account] }

// NewAccounts returns a reader holding accounts.
func NewAccounts(accts ...query.Account) *Accounts {
	return &Accounts{newTable(func(a query.Account) int64 { return a.Login }, accts)}
}

// Remove deletes an account (as if archived).
func (a *Accounts) Remove(login int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.rows, login)
}

// Account implements query.AccountReader.
func (a *Accounts) Account(_ context.Context, login int64) (query.Account, bool, error) {
	return a.get(login)
}

// Accounts implements query.AccountReader.
func (a *Accounts) Accounts(_ context.Context, logins []int64) ([]query.Account, error) {
	var out []query.Account
	err := a.read(func(rows map[int64]query.Account) {
		for _, l := range logins {
			if x, ok := rows[l]; ok {
				out = append(out, x)
			}
		}
	})
	if err != nil {
		return nil, err
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
	return trading.SymbolSpec{SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{
		Symbol: "EURUSD", Description: "Euro vs US Dollar", Digits: 5,
		TickSize: dec.MustParse("0.00001"), TickValue: dec.MustParse("1"), ContractSize: dec.MustParse("100000"),
		VolumeMin: dec.MustParse("0.01"), VolumeMax: dec.MustParse("100"), VolumeStep: dec.MustParse("0.01"),
		StopsLevel: 10, FreezeLevel: 0, TradeMode: "FULL", ExecutionMode: "MARKET",
		FillModes: []string{"FOK", "IOC"}, ExpirationModes: []string{"GTC", "DAY", "GTD", "GTD_DAY"},
		OrderModes:   []string{"MARKET", "LIMIT", "STOP", "STOP_LIMIT", "SL", "TP", "CLOSE_BY"},
		CurrencyBase: "EUR", CurrencyProfit: "USD", CurrencyMargin: "EUR",
		SwapMode: "BY_POINTS", SwapLong: dec.MustParse("-7.5"), SwapShort: dec.MustParse("2.1"), Swap3Days: "WEDNESDAY"},
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
