package gateway_test

import (
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"tradesvc/events/dec"
	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwtest"
	"tradesvc/query"
)

func TestPingAndTime(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	r := must(t)(c.Public(bg, "GET", "/v1/ping", nil))
	expectOK(t, r)
	if string(r.Body) != "{}" {
		t.Fatalf("ping %s", r.Body)
	}
	e.Clock.Set(time.UnixMilli(1_700_000_000_123))
	r = must(t)(c.Public(bg, "GET", "/v1/time", nil))
	if string(r.Body) != `{"serverTime":1700000000123}` {
		t.Fatalf("time %s", r.Body)
	}
}

func TestExchangeInfoSymbolFilters(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	type info struct {
		ServerTimeZoneOffsetMinutes int                `json:"serverTimeZoneOffsetMinutes"`
		Symbols                     []query.SymbolInfo `json:"symbols"`
	}
	all := decode[info](t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", nil)))
	if len(all.Symbols) != 2 || all.Symbols[0].Symbol != "EURUSD" || all.ServerTimeZoneOffsetMinutes != 180 {
		t.Fatalf("all: %+v", all)
	}
	s := all.Symbols[0]
	if s.Digits != 5 || s.TickSize != "0.00001" || s.VolumeStep != "0.01" || len(s.Sessions) != 7 || len(s.Sessions["SUNDAY"]) != 0 ||
		s.Sessions["MONDAY"][0].Open != "00:00" || s.TradeMode != "FULL" || s.Swap3Days != "WEDNESDAY" {
		t.Fatalf("spec: %+v", s)
	}
	one := decode[info](t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", vals("symbol", "XAUUSD"))))
	if len(one.Symbols) != 1 || one.Symbols[0].Symbol != "XAUUSD" {
		t.Fatalf("one: %+v", one.Symbols)
	}
	two := decode[info](t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", vals("symbols", `["XAUUSD","EURUSD"]`))))
	if len(two.Symbols) != 2 || two.Symbols[0].Symbol != "XAUUSD" {
		t.Fatalf("two: %+v", two.Symbols)
	}
}

func TestTickers(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	p := decode[query.PriceTicker](t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", vals("symbol", "XAUUSD"))))
	if p.Bid != "2350.10" || p.Ask != "2350.45" || p.Last != "2350.10" || p.Time == 0 {
		t.Fatalf("price %+v", p)
	}
	ps := decode[[]query.PriceTicker](t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", nil)))
	if len(ps) != 2 || ps[0].Symbol != "EURUSD" || ps[0].Bid != "1.08010" {
		t.Fatalf("prices %+v", ps)
	}
	b := decode[query.BookTicker](t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/bookTicker", vals("symbol", "EURUSD"))))
	if b.BidPrice != "1.08010" || b.AskPrice != "1.08025" || b.BidQty != "0" || b.AskQty != "0" {
		t.Fatalf("book %+v", b)
	}
	bs := decode[[]query.BookTicker](t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/bookTicker", nil)))
	if len(bs) != 2 {
		t.Fatalf("books %+v", bs)
	}
	d := decode[query.Ticker24hr](t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/24hr", vals("symbol", "EURUSD"))))
	if d.OpenPrice != "1.08000" || d.LowPrice != "1.07900" || d.PriceChangePercent != "0.01" || d.TradeDeals != 42 || d.Volume != "12.5" {
		t.Fatalf("24hr %+v", d)
	}
	ds := decode[[]query.Ticker24hr](t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/24hr", nil)))
	if len(ds) != 1 {
		t.Fatalf("24hr list %+v", ds)
	}
}

func TestKlinesAggregateThroughGateway(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	base := int64(1_800_000_000_000) / 300_000 * 300_000 // a 5-minute boundary
	for i := int64(0); i < 10; i++ {
		e.Market.AddBars("EURUSD", query.Bar{OpenTime: base + i*60_000, Open: dec.New(108000+i, -5), High: dec.New(108010+i, -5),
			Low: dec.New(107990-i, -5), Close: dec.New(108005+i, -5), Count: 2})
	}
	e.Clock.Set(time.UnixMilli(base + 10*60_000))
	r := must(t)(c.Keyed(bg, "GET", "/v1/klines", vals("symbol", "EURUSD", "interval", "5m")))
	rows := decode[[][]any](t, r)
	if len(rows) != 2 {
		t.Fatalf("rows %s", r.Body)
	}
	first := rows[0]
	if int64(first[0].(float64)) != base || first[1] != "1.08000" || first[2] != "1.08014" || first[3] != "1.07986" ||
		first[4] != "1.08009" || first[5].(float64) != 10 || int64(first[6].(float64)) != base+299_999 || first[7].(float64) != 0 {
		t.Fatalf("first row %v", first)
	}
	r = must(t)(c.Keyed(bg, "GET", "/v1/klines", vals("symbol", "EURUSD", "interval", "1m", "startTime", "0", "limit", "3")))
	if rows = decode[[][]any](t, r); len(rows) != 0 {
		t.Fatalf("window from 0 with limit 3 holds no bars: %s", r.Body)
	}
	r = must(t)(c.Keyed(bg, "GET", "/v1/klines", url.Values{"symbol": {"EURUSD"}, "interval": {"1m"},
		"startTime": {itoa(base + 60_000)}, "limit": {"3"}}))
	if rows = decode[[][]any](t, r); len(rows) != 3 || int64(rows[0][0].(float64)) != base+60_000 {
		t.Fatalf("startTime rows %s", r.Body)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestTicks(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	for i := int64(1); i <= 5; i++ {
		e.Market.SetQuote(query.Quote{Symbol: "EURUSD", Bid: dec.New(108000+i, -5), Ask: dec.New(108010+i, -5),
			Last: dec.New(108000+i, -5), Volume: i, BidDirection: 1, AskDirection: -1, Time: 1000 * i})
	}
	ticks := decode[[]query.Tick](t, must(t)(c.Keyed(bg, "GET", "/v1/ticks", vals("symbol", "EURUSD", "limit", "3"))))
	if len(ticks) != 3 || ticks[0].Time != 3000 || ticks[2].Bid != "1.08005" || ticks[2].Volume != 5 || ticks[2].AskDirection != -1 {
		t.Fatalf("ticks %+v", ticks)
	}
	all := decode[[]query.Tick](t, must(t)(c.Keyed(bg, "GET", "/v1/ticks", vals("symbol", "EURUSD"))))
	if len(all) != 6 { // the seed quote plus five
		t.Fatalf("default limit: %d ticks", len(all))
	}
}

func TestAccountAndAccounts(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	a := query.Account{Login: gwtest.LoginReal, Group: "real\\usd", Currency: "USD", Leverage: 100,
		Balance: dec.MustParse("10000.5"), Credit: dec.MustParse("0"), Equity: dec.MustParse("10012.34567"),
		Margin: dec.MustParse("108.02"), FreeMargin: dec.MustParse("9904.32567"), Profit: dec.MustParse("11.84567"),
		MarginLevel: dec.MustParse("9269.0123"), TradeAllowed: true, UpdateTime: 1_700_000_000_000}
	e.Accounts.Put(a)
	got := decode[query.AccountRecord](t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery)))
	want := query.AccountRecord{Login: 1001, Group: "real\\usd", Currency: "USD", Leverage: 100, Balance: "10000.5000",
		Credit: "0.0000", Equity: "10012.3457", Margin: "108.0200", FreeMargin: "9904.3257", Profit: "11.8457",
		MarginLevel: "9269.01", TradeAllowed: true, UpdateTime: 1_700_000_000_000}
	if got != want {
		t.Fatalf("account\n got %+v\nwant %+v", got, want)
	}
	items := decode[[]query.AccountItem](t, must(t)(c.Signed(bg, "GET", "/v1/accounts", nil, gwclient.InQuery)))
	wantItems := []query.AccountItem{{Login: 1001}, {Login: 1002, Demo: true}, {Login: 1003}}
	if len(items) != len(wantItems) {
		t.Fatalf("accounts %+v", items)
	}
	for i := range items {
		if items[i] != wantItems[i] {
			t.Fatalf("accounts %+v", items)
		}
	}
	// an archived account disappears
	e.Accounts.Remove(1002)
	items = decode[[]query.AccountItem](t, must(t)(c.Signed(bg, "GET", "/v1/accounts", nil, gwclient.InQuery)))
	if len(items) != 2 {
		t.Fatalf("after archive %+v", items)
	}
}

// echoEndpoint registers a signed USER_DATA endpoint on every method that echoes two params.
func echoEndpoint(s *gateway.Server) {
	for _, m := range []string{fiber.MethodGet, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete} {
		s.Handle(gateway.Endpoint{Method: m, Path: "/v1/test/echo", Security: gateway.SecUserData},
			func(c *fiber.Ctx, r *gateway.Request) error {
				return c.JSON(fiber.Map{"a": r.Params.Optional("a"), "b": r.Params.Optional("b"), "n": r.Params.Len()})
			})
	}
}

func TestSignedParametersInQueryBodyOrSplit(t *testing.T) {
	_, c := start(t, gateway.Config{}, echoEndpoint)
	for _, pl := range []gwclient.Placement{gwclient.InQuery, gwclient.InBody, gwclient.Split} {
		for _, m := range []string{"POST", "PUT"} {
			r := must(t)(c.Signed(bg, m, "/v1/test/echo", vals("a", "x y", "b", "ü&="), pl))
			expectOK(t, r)
			got := decode[map[string]any](t, r)
			if got["a"] != "x y" || got["b"] != "ü&=" {
				t.Fatalf("%s %v: %v", m, pl, got)
			}
		}
	}
	// query wins on a clash: a in both parts, the body's signed too
	ts := itoa(time.Now().UnixMilli())
	q := "a=fromquery"
	body := "a=frombody&timestamp=" + ts
	body += "&signature=" + gwclient.Sign([]byte(gwtest.Secret), q+body)
	r := must(t)(c.Raw(bg, "POST", "/v1/test/echo", q, body, true))
	expectOK(t, r)
	if got := decode[map[string]any](t, r); got["a"] != "fromquery" {
		t.Fatalf("clash: %v", got)
	}
	// GET and DELETE carry parameters in the query string only: a body is neither read nor signed.
	for _, m := range []string{"GET", "DELETE"} {
		expectOK(t, must(t)(c.Signed(bg, m, "/v1/test/echo", vals("a", "q"), gwclient.InQuery)))
		expectErr(t, must(t)(c.Signed(bg, m, "/v1/test/echo", vals("a", "x"), gwclient.InBody)), 400, -1102)
	}
	// signature not last still works (it is removed wherever it stands)
	q = "a=1&timestamp=" + ts
	sig := gwclient.Sign([]byte(gwtest.Secret), q)
	expectOK(t, must(t)(c.Raw(bg, "GET", "/v1/test/echo", "signature="+sig+"&"+q, "", true)))
}

func TestKeyCacheHonoursRevocationWithinTTL(t *testing.T) {
	e, c := start(t, gateway.Config{KeyCacheTTL: time.Second}, nil)
	t0 := time.UnixMilli(1_800_000_000_000)
	e.Clock.Set(t0)
	for i := 0; i < 5; i++ {
		expectOK(t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", vals("symbol", "EURUSD"))))
	}
	if n := e.Keys.Lookups.Load(); n != 1 {
		t.Fatalf("lookups = %d, want 1 (cached)", n)
	}
	k, _ := e.Keys.Lookup(bg, gwtest.APIKey)
	k.Revoked = true
	e.Keys.Put(k)
	e.Clock.Advance(1100 * time.Millisecond)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", nil)), 401, -2015)
	// scope change: un-revoke but drop login 1001
	k.Revoked, k.Logins = false, []int64{1002}
	e.Keys.Put(k)
	e.Clock.Advance(1100 * time.Millisecond)
	expectErr(t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery)), 400, -2022)
	expectOK(t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "1002"), gwclient.InQuery)))
}

func TestConfigValidation(t *testing.T) {
	e := gwtest.NewEnv()
	if _, err := gateway.New(gateway.Config{}, e.Deps(), e.App(t)); err == nil {
		t.Fatal("missing TLS accepted")
	}
	tcfg, _, err := gwtest.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.New(gateway.Config{TLS: tcfg, KeyCacheTTL: 3 * time.Second}, e.Deps(), e.App(t)); err == nil {
		t.Fatal("KeyCacheTTL 3s accepted")
	}
	d := e.Deps()
	d.Accounts = nil
	if _, err := gateway.New(gateway.Config{TLS: tcfg}, d, e.App(t)); err == nil {
		t.Fatal("missing dependency accepted")
	}
}
