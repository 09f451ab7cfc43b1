package gateway

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"tradesvc/command"
	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/query"

	"github.com/cockroachdb/apd/v3"
)

type fakeSymbols map[string]trading.SymbolSpec

func (f fakeSymbols) Symbol(_ context.Context, name string) (trading.SymbolSpec, bool, error) {
	s, ok := f[name]
	return s, ok, nil
}

type fakeQuotes map[string]query.Quote

func (f fakeQuotes) Quote(symbol string) (query.Quote, bool) {
	q, ok := f[symbol]
	return q, ok
}

var testNow = time.Date(2026, 11, 17, 12, 0, 0, 0, time.UTC)

func spec(name, mode string, digits int32, tick, step string, stops int32, orderModes, exp []string) trading.SymbolSpec {
	return trading.SymbolSpec{SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{Symbol: name, Digits: digits,
		TickSize: dec.MustParse(tick), VolumeMin: dec.MustParse("0.01"), VolumeMax: dec.MustParse("100"),
		VolumeStep: dec.MustParse(step), StopsLevel: stops, TradeMode: mode, ExecutionMode: "MARKET",
		OrderModes: orderModes, ExpirationModes: exp}}
}

var allModes = []string{"MARKET", "LIMIT", "STOP", "STOP_LIMIT", "SL", "TP", "CLOSE_BY"}
var allExp = []string{"GTC", "DAY", "GTD", "GTD_DAY"}

func testValidator(t *testing.T) *command.Validator {
	t.Helper()
	syms := fakeSymbols{
		"BTCUSD":  spec("BTCUSD", "FULL", 2, "0.01", "0.01", 100, allModes, allExp),
		"SOLUSD":  spec("SOLUSD", "DISABLED", 2, "0.01", "0.01", 100, allModes, allExp),
		"ADAUSD":  spec("ADAUSD", "LONG_ONLY", 4, "0.0001", "0.01", 10, allModes, allExp),
		"DOGEUSD": spec("DOGEUSD", "SHORT_ONLY", 5, "0.00001", "0.01", 50, allModes, allExp),
		"DOTUSD":  spec("DOTUSD", "CLOSE_ONLY", 3, "0.001", "0.01", 20, allModes, allExp),
		"AVAXUSD": spec("AVAXUSD", "FULL", 2, "0.01", "0.01", 100, []string{"MARKET", "LIMIT", "STOP", "STOP_LIMIT"}, allExp),
		"UNIUSD":  spec("UNIUSD", "FULL", 3, "0.001", "0.01", 20, allModes, []string{"GTC", "DAY", "GTD_DAY"}),
		"US500":   spec("US500", "FULL", 2, "0.25", "0.1", 100, allModes, allExp),
		"STALE":   spec("STALE", "FULL", 2, "0.01", "0.01", 100, allModes, allExp),
	}
	syms["US500"] = func(s trading.SymbolSpec) trading.SymbolSpec { s.VolumeMin = dec.MustParse("0.1"); return s }(syms["US500"])
	q := func(sym, bid, ask string, age time.Duration) query.Quote {
		return query.Quote{Symbol: sym, Bid: dec.MustParse(bid), Ask: dec.MustParse(ask), Time: testNow.Add(-age).UnixMilli()}
	}
	quotes := fakeQuotes{
		"BTCUSD": q("BTCUSD", "60000.00", "60015.00", time.Second),
		"US500":  q("US500", "5000.00", "5000.50", time.Second),
		"UNIUSD": q("UNIUSD", "10.000", "10.020", time.Second),
		"STALE":  q("STALE", "100.00", "100.10", time.Hour),
	}
	v, err := command.NewValidator(syms, quotes, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOrderValidationCodes pins the spec's code for every rule of POST /v1/order's table,
// from the decoder's (the parameters themselves) to the validator's (the symbol's rules and
// the market), checked in that order as the gateway checks them.
func TestOrderValidationCodes(t *testing.T) {
	v := testValidator(t)
	exp := strconv.FormatInt(testNow.Add(time.Hour).UnixMilli(), 10)
	past := strconv.FormatInt(testNow.Add(-time.Hour).UnixMilli(), 10)
	cases := []struct {
		name string
		p    itemParams
		code events.Code
	}{
		{"market ok", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, 0},
		{"missing symbol", itemParams{"type": "MARKET", "side": "BUY", "volume": "0.01"}, -1102},
		{"missing type", itemParams{"symbol": "BTCUSD", "side": "BUY", "volume": "0.01"}, -1102},
		{"invalid type", itemParams{"symbol": "BTCUSD", "type": "LIMIT", "side": "BUY", "volume": "0.01"}, -1116},
		{"market without side", itemParams{"symbol": "BTCUSD", "type": "MARKET", "volume": "0.01"}, -1102},
		{"invalid side", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "buy", "volume": "0.01"}, -1117},
		{"side disagrees with pending type", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "side": "SELL", "volume": "0.01", "price": "59000.00"}, -1117},
		{"missing volume", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY"}, -1102},
		{"malformed volume", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "1e-2"}, -1130},
		{"zero volume", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0"}, -4003},
		{"negative volume", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "-1"}, -4003},
		{"pending without price", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01"}, -1102},
		{"pending price zero", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "0"}, -4001},
		{"stop limit without stopLimitPrice", itemParams{"symbol": "BTCUSD", "type": "BUY_STOP_LIMIT", "volume": "0.01", "price": "61000.00"}, -1102},
		{"stray stopLimitPrice", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "stopLimitPrice": "58000.00"}, -1106},
		{"negative sl", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "-1"}, -4001},
		{"timeInForce on market", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "timeInForce": "GTC"}, -1106},
		{"invalid timeInForce", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "FOK"}, -1115},
		{"GTD without expiration", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "GTD"}, -1102},
		{"GTD expiration in the past", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "GTD", "expiration": past}, -4012},
		{"GTD expiration ok", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "timeInForce": "GTD", "expiration": exp}, 0},
		{"GTD not in expirationModes", itemParams{"symbol": "UNIUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "9.000", "timeInForce": "GTD", "expiration": exp}, -4012},
		{"unknown symbol", itemParams{"symbol": "NOPE", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -1121},
		{"symbol in wrong case", itemParams{"symbol": "btcusd", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -1121},
		{"disabled symbol", itemParams{"symbol": "SOLUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -4011},
		{"long only sell", itemParams{"symbol": "ADAUSD", "type": "MARKET", "side": "SELL", "volume": "0.01"}, -4013},
		{"short only buy", itemParams{"symbol": "DOGEUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -4014},
		{"close only", itemParams{"symbol": "DOTUSD", "type": "MARKET", "side": "BUY", "volume": "0.01"}, -4015},
		{"sl not allowed", itemParams{"symbol": "AVAXUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "1.00"}, -4016},
		{"below volumeMin", itemParams{"symbol": "US500", "type": "MARKET", "side": "BUY", "volume": "0.05"}, -4006},
		{"above volumeMax", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "100.01"}, -4005},
		{"off volumeStep", itemParams{"symbol": "US500", "type": "MARKET", "side": "BUY", "volume": "0.15"}, -4007},
		{"price off tick size", itemParams{"symbol": "US500", "type": "BUY_LIMIT", "volume": "0.1", "price": "4990.10"}, -4008},
		{"buy limit above ask", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "60100.00"}, -2021},
		{"sell limit below bid", itemParams{"symbol": "BTCUSD", "type": "SELL_LIMIT", "volume": "0.01", "price": "59000.00"}, -2021},
		{"buy stop below ask", itemParams{"symbol": "BTCUSD", "type": "BUY_STOP", "volume": "0.01", "price": "59000.00"}, -2021},
		{"sell stop above bid", itemParams{"symbol": "BTCUSD", "type": "SELL_STOP", "volume": "0.01", "price": "61000.00"}, -2021},
		{"buy limit too close (stopsLevel 100 points = 1.00)", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "60014.50"}, -4009},
		{"buy limit exactly stopsLevel away", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "60014.00"}, 0},
		{"market sl measured from the bid: too close", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "59999.50"}, -4009},
		{"market sl above the bid", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "sl": "60005.00"}, -4009},
		{"market sell tp measured from the ask", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "SELL", "volume": "0.01", "tp": "60014.50"}, -4009},
		{"market sell tp far enough below the ask", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "SELL", "volume": "0.01", "tp": "60014.00"}, 0},
		{"pending sl measured from its price", itemParams{"symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01", "price": "59000.00", "sl": "58999.50"}, -4009},
		{"stop limit sl measured from stopLimitPrice", itemParams{"symbol": "BTCUSD", "type": "BUY_STOP_LIMIT", "volume": "0.01", "price": "61000.00", "stopLimitPrice": "60900.00", "sl": "60899.50"}, -4009},
		{"stale quote leaves price rules to the server", itemParams{"symbol": "STALE", "type": "BUY_LIMIT", "volume": "0.01", "price": "200.00"}, 0},
		{"comment too long", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "0123456789012345678901234"}, -1130},
		{"comment of 24 characters", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "012345678901234567890123"}, 0},
		{"comment with a NUL", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "a\x00b"}, -1100},
		{"comment with a newline", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "a\nb"}, -1100},
		{"comment not UTF-8", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "a\xffb"}, -1100},
		{"comment in Cyrillic", itemParams{"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "comment": "сделка"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := decodeOrder(c.p, testNow)
			if err == nil {
				_, err = v.Order(context.Background(), o, testNow)
			}
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
		p := itemParams{}
		if c.sent {
			p["newClientOrderId"] = c.v
		}
		cid, err := clientID(p)
		id, given := cid.ID, cid.Given
		if c.code != 0 {
			var rej *events.Rejection
			if !errors.As(err, &rej) || rej.Code != c.code {
				t.Errorf("%q: want %d, got %v", c.v, c.code, err)
			}
			continue
		}
		if err != nil || given != c.sent || len(id) == 0 || len(id) > command.MaxClientOrderIDLen {
			t.Errorf("%q: id %q given %v err %v", c.v, id, given, err)
		}
	}
}

// decodeBatch1 decodes a batchOrders value.
func decodeBatch1(raw string) ([]itemParams, error) {
	return decodeBatch(itemParams{"batchOrders": raw})
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
	if _, err := decodeBatch1(`{"a":1}`); code(err) != -1130 {
		t.Errorf("object: %v", err)
	}
	if _, err := decodeBatch1(`[]`); code(err) != -1131 {
		t.Errorf("empty: %v", err)
	}
	big := "["
	for i := range 101 {
		if i > 0 {
			big += ","
		}
		big += `{"login":1001}`
	}
	if _, err := decodeBatch1(big + "]"); code(err) != -1131 {
		t.Errorf("101 items: %v", err)
	}
	if _, err := decodeBatch1(`[{"login":{"x":1}}]`); code(err) != -1130 {
		t.Errorf("nested: %v", err)
	}
	items, err := decodeBatch1(`[{"login":1001,"volume":"0.01","expiration":1766000000000}]`)
	if err != nil || items[0]["login"] != "1001" || items[0]["expiration"] != "1766000000000" {
		t.Fatalf("items %v err %v", items, err)
	}
}
