package gwtest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"tradesvc/events/dec"
	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/ratelimit"
	"tradesvc/query"
)

// Seed credentials and logins of NewEnv.
const (
	APIKey      = "gwtest-key-0001"
	Secret      = "gwtest-secret-0001"
	ReadOnlyKey = "gwtest-key-readonly"
	// LoginReal and LoginDemo are active; LoginNoTrade has trading disabled; LoginMissing
	// is in the key's scope but has no account.
	LoginReal    int64 = 1001
	LoginDemo    int64 = 1002
	LoginNoTrade int64 = 1003
	LoginMissing int64 = 1009
	// LoginOther exists but is outside the seed key's scope.
	LoginOther int64 = 2001
)

// Env is a gateway with in-memory fakes, ready to Start.
type Env struct {
	Keys     *Keys
	Switches *Switches
	Market   *Market
	Accounts *Accounts
	Clock    *Clock
	// RateLimits, when set before Build, is where the gateway keeps the keys' rate-limit
	// state (nil: its own memory).
	RateLimits ratelimit.Store

	Server  *gateway.Server
	BaseURL string
	CA      []byte
	HTTP    *http.Client
}

// NewEnv seeds fakes: EURUSD and XAUUSD with quotes, day statistics and no bars; accounts
// 1001 (USD, real), 1002 (demo), 1003 (trading disabled), 2001 (other key); key APIKey for
// 1001-1003 and 1009, and ReadOnlyKey for 1001.
func NewEnv() *Env {
	e := &Env{Keys: NewKeys(), Switches: &Switches{}, Market: NewMarket(), Accounts: NewAccounts(), Clock: &Clock{}}
	e.Keys.Put(gateway.Key{ID: "k1", APIKey: APIKey, Secret: []byte(Secret),
		Logins: []int64{LoginReal, LoginDemo, LoginNoTrade, LoginMissing}})
	e.Keys.Put(gateway.Key{ID: "k2", APIKey: ReadOnlyKey, Secret: []byte(Secret), Logins: []int64{LoginReal}, ReadOnly: true})
	e.Market.AddSymbol(EURUSD())
	e.Market.AddSymbol(XAUUSD())
	now := time.Now().UnixMilli()
	e.Market.SetQuote(query.Quote{Symbol: "EURUSD", Bid: dec.MustParse("1.0801"), Ask: dec.MustParse("1.08025"),
		Last: dec.MustParse("1.0801"), Volume: 3, BidDirection: 1, AskDirection: -1, Time: now})
	e.Market.SetQuote(query.Quote{Symbol: "XAUUSD", Bid: dec.MustParse("2350.1"), Ask: dec.MustParse("2350.45"),
		Last: dec.MustParse("2350.1"), Volume: 1, BidDirection: -1, AskDirection: 1, Time: now})
	e.Market.SetDayStats(query.DayStats{Symbol: "EURUSD", Open: dec.MustParse("1.08"), High: dec.MustParse("1.0812"),
		Low: dec.MustParse("1.0790"), Last: dec.MustParse("1.0801"), Bid: dec.MustParse("1.0801"), Ask: dec.MustParse("1.08025"),
		BidHigh: dec.MustParse("1.0812"), BidLow: dec.MustParse("1.079"), AskHigh: dec.MustParse("1.0813"), AskLow: dec.MustParse("1.0791"),
		PriceChange: dec.MustParse("0.0001"), PriceChangePercent: dec.MustParse("0.009259"), Volatility: dec.MustParse("0.2"),
		TradeDeals: 42, Volume: dec.MustParse("12.5"), BuyOrders: 3, SellOrders: 4, Time: now})
	acct := func(login int64, cur string, demo, trade bool) query.Account {
		return query.Account{Login: login, Group: "real\\usd", Currency: cur, Leverage: 100,
			Balance: dec.MustParse("10000"), Equity: dec.MustParse("10000"), FreeMargin: dec.MustParse("10000"),
			TradeAllowed: trade, Demo: demo, UpdateTime: now}
	}
	e.Accounts.Put(acct(LoginReal, "USD", false, true))
	e.Accounts.Put(acct(LoginDemo, "USD", true, true))
	e.Accounts.Put(acct(LoginNoTrade, "USD", false, false))
	e.Accounts.Put(acct(LoginOther, "USD", false, true))
	return e
}

// Deps returns the fakes as the gateway pipeline's dependencies.
func (e *Env) Deps() gateway.Deps {
	return gateway.Deps{Keys: e.Keys, Switches: e.Switches, Accounts: e.Accounts, Clock: e.Clock.Now, RateLimits: e.RateLimits}
}

// App returns the application (query handlers over the fakes) the gateway serves.
func (e *Env) App(tb testing.TB) gateway.Application {
	tb.Helper()
	q, err := query.NewHandlers(query.Readers{Symbols: e.Market, Quotes: e.Market, DayStats: e.Market,
		Bars: e.Market, Accounts: e.Accounts, Server: e.Market, Operations: Operations{}, OperationChanges: Operations{},
		Trading: Trading{}, Deals: Trading{}})
	if err != nil {
		tb.Fatal(err)
	}
	return gateway.Application{Queries: q}
}

// Build creates the gateway (without serving) so a test can register endpoints first.
func (e *Env) Build(tb testing.TB, cfg gateway.Config) *gateway.Server {
	tb.Helper()
	if cfg.TLS == nil {
		tcfg, ca, err := SelfSignedTLS()
		if err != nil {
			tb.Fatal(err)
		}
		cfg.TLS, e.CA = tcfg, ca
	}
	srv, err := gateway.New(cfg, e.Deps(), e.App(tb))
	if err != nil {
		tb.Fatal(err)
	}
	e.Server = srv
	return srv
}

// Start serves the built (or a newly built) gateway on 127.0.0.1:0 over TLS until the test
// ends, and prepares an HTTP client trusting its certificate.
func (e *Env) Start(tb testing.TB, cfg gateway.Config) {
	tb.Helper()
	if e.Server == nil {
		e.Build(tb, cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Server.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, net.ErrClosed) {
				tb.Errorf("gateway Serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			tb.Errorf("gateway did not stop")
		}
	})
	e.BaseURL = "https://" + ln.Addr().String()
	e.HTTP, err = gwclient.NewHTTPClient(e.CA, 64)
	if err != nil {
		tb.Fatal(err)
	}
}

// Client returns a client for the seed key (APIKey / Secret).
func (e *Env) Client() *gwclient.Client {
	return &gwclient.Client{BaseURL: e.BaseURL, APIKey: APIKey, Secret: []byte(Secret), HTTP: e.HTTP, Now: e.Clock.Now}
}
