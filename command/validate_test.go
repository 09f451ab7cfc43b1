package command

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/query"
)

type fakeSymbols map[string]query.SymbolSpec

func (f fakeSymbols) Symbol(_ context.Context, name string) (query.SymbolSpec, bool, error) {
	s, ok := f[name]
	return s, ok, nil
}

type fakeQuotes map[string]query.Quote

func (f fakeQuotes) Quote(symbol string) (query.Quote, bool) {
	q, ok := f[symbol]
	return q, ok
}

var testNow = time.Date(2026, 11, 17, 12, 0, 0, 0, time.UTC)

func spec(name, mode string, digits int32, tick, step string, stops int32, orderModes []query.OrderMode, exp []query.ExpirationMode) query.SymbolSpec {
	return query.SymbolSpec{Symbol: name, Digits: digits, TickSize: dec.MustParse(tick), VolumeMin: dec.MustParse("0.01"),
		VolumeMax: dec.MustParse("100"), VolumeStep: dec.MustParse(step), StopsLevel: stops, TradeMode: query.TradeMode(mode),
		ExecutionMode: "MARKET", OrderModes: orderModes, ExpirationModes: exp}
}

var allModes = []query.OrderMode{"MARKET", "LIMIT", "STOP", "STOP_LIMIT", "SL", "TP", "CLOSE_BY"}
var allExp = []query.ExpirationMode{"GTC", "DAY", "GTD", "GTD_DAY"}

func testValidator(t *testing.T) *Validator {
	t.Helper()
	syms := fakeSymbols{
		"BTCUSD":  spec("BTCUSD", "FULL", 2, "0.01", "0.01", 100, allModes, allExp),
		"SOLUSD":  spec("SOLUSD", "DISABLED", 2, "0.01", "0.01", 100, allModes, allExp),
		"ADAUSD":  spec("ADAUSD", "LONG_ONLY", 4, "0.0001", "0.01", 10, allModes, allExp),
		"DOGEUSD": spec("DOGEUSD", "SHORT_ONLY", 5, "0.00001", "0.01", 50, allModes, allExp),
		"DOTUSD":  spec("DOTUSD", "CLOSE_ONLY", 3, "0.001", "0.01", 20, allModes, allExp),
		"AVAXUSD": spec("AVAXUSD", "FULL", 2, "0.01", "0.01", 100, []query.OrderMode{"MARKET", "LIMIT", "STOP", "STOP_LIMIT"}, allExp),
		"UNIUSD":  spec("UNIUSD", "FULL", 3, "0.001", "0.01", 20, allModes, []query.ExpirationMode{"GTC", "DAY", "GTD_DAY"}),
		"US500":   spec("US500", "FULL", 2, "0.25", "0.1", 100, allModes, allExp),
		"STALE":   spec("STALE", "FULL", 2, "0.01", "0.01", 100, allModes, allExp),
	}
	syms["US500"] = func(s query.SymbolSpec) query.SymbolSpec { s.VolumeMin = dec.MustParse("0.1"); return s }(syms["US500"])
	q := func(sym, bid, ask string, age time.Duration) query.Quote {
		return query.Quote{Symbol: sym, Bid: dec.MustParse(bid), Ask: dec.MustParse(ask), Time: testNow.Add(-age).UnixMilli()}
	}
	quotes := fakeQuotes{
		"BTCUSD": q("BTCUSD", "60000.00", "60015.00", time.Second),
		"US500":  q("US500", "5000.00", "5000.50", time.Second),
		"UNIUSD": q("UNIUSD", "10.000", "10.020", time.Second),
		"STALE":  q("STALE", "100.00", "100.10", time.Hour),
	}
	v, err := NewValidator(syms, quotes, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOrderValidationCodes pins the spec's code for every rule of POST /v1/order's table.
func TestOrderValidationCodes(t *testing.T) {
	v := testValidator(t)
	exp := strconv.FormatInt(testNow.Add(time.Hour).UnixMilli(), 10)
	past := strconv.FormatInt(testNow.Add(-time.Hour).UnixMilli(), 10)
	cases := []struct {
		name string
		p    MapParams
		code events.Code
	}{
		{"market ok", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, 0},
		{"missing symbol", MapParams{"type": "MARKET", "side": "BUY", "volume": "0.01"}, -1102},
		{"missing type", MapParams{"symbol": "BTCUSD", "side": "BUY", "volume": "0.01"}, -1102},
		{"invalid type", MapParams{"symbol": "BTCUSD", "type": "LIMIT", "side": "BUY", "volume": "0.01"}, -1116},
		{"market without side", MapParams{"symbol": "BTCUSD", "type": "MARKET", "volume": "0.01"}, -1102},
		{"invalid side", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "buy", "volume": "0.01"}, -1117},
		{"side disagrees with pending type", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "side": "SELL", "volume": "0.01", "price": "59000.00"}, -1117},
		{"missing volume", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY"}, -1102},
		{"malformed volume", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "1e-2"}, -1130},
		{"zero volume", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0"}, -4003},
		{"negative volume", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "-1"}, -4003},
		{"pending without price", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01"}, -1102},
		{"pending price zero", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "0"}, -4001},
		{"stop limit without stopLimitPrice", MapParams{"symbol": "BTCUSD", "type": "BUY_STOP_LIMIT", "volume": "0.01", "price": "61000.00"}, -1102},
		{"stray stopLimitPrice", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "stopLimitPrice": "58000.00"}, -1106},
		{"negative sl", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "-1"}, -4001},
		{"timeInForce on market", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "timeInForce": "GTC"}, -1106},
		{"invalid timeInForce", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "FOK"}, -1115},
		{"GTD without expiration", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "GTD"}, -1102},
		{"GTD expiration in the past", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "GTD", "expiration": past}, -4012},
		{"GTD expiration ok", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "GTD", "expiration": exp}, 0},
		{"GTD not in expirationModes", MapParams{"symbol": "UNIUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "9.000", "timeInForce": "GTD", "expiration": exp}, -4012},
		{"unknown symbol", MapParams{"symbol": "NOPE", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -1121},
		{"symbol in wrong case", MapParams{"symbol": "btcusd", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -1121},
		{"disabled symbol", MapParams{"symbol": "SOLUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -4011},
		{"long only sell", MapParams{"symbol": "ADAUSD", "type": "MARKET", "side": "SELL", "volume": "0.01"}, -4013},
		{"short only buy", MapParams{"symbol": "DOGEUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -4014},
		{"close only", MapParams{"symbol": "DOTUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -4015},
		{"sl not allowed", MapParams{"symbol": "AVAXUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "1.00"}, -4016},
		{"below volumeMin", MapParams{"symbol": "US500", "type": "MARKET", "side": "BUY", "volume": "0.05"}, -4006},
		{"above volumeMax", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "100.01"}, -4005},
		{"off volumeStep", MapParams{"symbol": "US500", "type": "MARKET", "side": "BUY", "volume": "0.15"}, -4007},
		{"price off tick size", MapParams{"symbol": "US500", "type": "BUY_LIMIT", "volume": "0.1", "price": "4990.10"}, -4008},
		{"buy limit above ask", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "60100.00"}, -2021},
		{"sell limit below bid", MapParams{"symbol": "BTCUSD", "type": "SELL_LIMIT", "volume": "0.01", "price": "59000.00"}, -2021},
		{"buy stop below ask", MapParams{"symbol": "BTCUSD", "type": "BUY_STOP", "volume": "0.01", "price": "59000.00"}, -2021},
		{"sell stop above bid", MapParams{"symbol": "BTCUSD", "type": "SELL_STOP", "volume": "0.01", "price": "61000.00"}, -2021},
		{"buy limit too close (stopsLevel 100 points = 1.00)", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "60014.50"}, -4009},
		{"buy limit exactly stopsLevel away", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "60014.00"}, 0},
		{"market sl measured from the bid: too close", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "59999.50"}, -4009},
		{"market sl above the bid", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "60005.00"}, -4009},
		{"market sell tp measured from the ask", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "SELL", "volume": "0.01", "tp": "60014.50"}, -4009},
		{"market sell tp far enough below the ask", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "SELL", "volume": "0.01", "tp": "60014.00"}, 0},
		{"pending sl measured from its price", MapParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "sl": "58999.50"}, -4009},
		{"stop limit sl measured from stopLimitPrice", MapParams{"symbol": "BTCUSD", "type": "BUY_STOP_LIMIT", "volume": "0.01", "price": "61000.00", "stopLimitPrice": "60900.00", "sl": "60899.50"}, -4009},
		{"stale quote leaves price rules to the server", MapParams{"symbol": "STALE", "type": "BUY_LIMIT", "volume": "0.01", "price": "200.00"}, 0},
		{"comment too long", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "0123456789012345678901234"}, -1130},
		{"comment of 24 characters", MapParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "012345678901234567890123"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Order(context.Background(), c.p, testNow)
			var rej *events.Rejection
			switch {
			case c.code == 0 && err != nil:
				t.Fatalf("want ok, got %v", err)
			case c.code != 0 && !errors.As(err, &rej):
				t.Fatalf("want code %d, got %v", c.code, err)
			case c.code != 0 && rej.Code != c.code:
				t.Fatalf("want code %d, got %d (%s)", c.code, rej.Code, rej.Msg)
			}
		})
	}
}

// TestClientOrderIDRules pins -1118 and -1119 and the generated id.
func TestClientOrderIDRules(t *testing.T) {
	for _, c := range []struct {
		v    string
		sent bool
		code events.Code
	}{
		{"", true, -1118}, {"abc-DEF_1.2", true, 0}, {"0123456789012345678901234567890123456", true, -1119},
		{"has space", true, -1119}, {"émile", true, -1119}, {"", false, 0},
	} {
		p := MapParams{}
		if c.sent {
			p["newClientOrderId"] = c.v
		}
		id, given, err := clientOrderID(p, "newClientOrderId")
		if c.code != 0 {
			var rej *events.Rejection
			if !errors.As(err, &rej) || rej.Code != c.code {
				t.Errorf("%q: want %d, got %v", c.v, c.code, err)
			}
			continue
		}
		if err != nil || given != c.sent || len(id) == 0 || len(id) > MaxClientOrderIDLen {
			t.Errorf("%q: id %q given %v err %v", c.v, id, given, err)
		}
	}
}

// TestFormatTag: a tag is '#' and six base-62 digits; distinct numbers give distinct tags,
// from the first to the last of the space.
func TestFormatTag(t *testing.T) {
	for n, want := range map[int64]string{0: "#000000", 61: "#00000z", 62: "#000010", tagSpace - 1: "#zzzzzz"} {
		if got := formatTag(n); got != want {
			t.Errorf("formatTag(%d) = %q, want %q", n, got, want)
		}
	}
	seen := map[string]bool{}
	for n := int64(0); n < 5000; n++ {
		tag := formatTag(n * 11400714 % tagSpace)
		if len(tag) != TagLen || tag[0] != '#' || seen[tag] {
			t.Fatalf("tag %q of %d", tag, n)
		}
		seen[tag] = true
	}
}

// TestParseBatch pins the batch envelope errors: not an array -1130, 0 or 101 items -1131,
// nested values -1130; numbers are accepted as their text.
func TestParseBatch(t *testing.T) {
	code := func(err error) events.Code {
		var rej *events.Rejection
		if errors.As(err, &rej) {
			return rej.Code
		}
		return 0
	}
	if _, err := parseBatch(`{"a":1}`); code(err) != -1130 {
		t.Errorf("object: %v", err)
	}
	if _, err := parseBatch(`[]`); code(err) != -1131 {
		t.Errorf("empty: %v", err)
	}
	big := "["
	for i := range 101 {
		if i > 0 {
			big += ","
		}
		big += `{"login":1001}`
	}
	if _, err := parseBatch(big + "]"); code(err) != -1131 {
		t.Errorf("101 items: %v", err)
	}
	if _, err := parseBatch(`[{"login":{"x":1}}]`); code(err) != -1130 {
		t.Errorf("nested: %v", err)
	}
	items, err := parseBatch(`[{"login":1001,"volume":"0.01","expiration":1766000000000}]`)
	if err != nil || items[0]["login"] != "1001" || items[0]["expiration"] != "1766000000000" {
		t.Fatalf("items %v err %v", items, err)
	}
}
