package executor

import (
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

func mustDec(s string) apd.Decimal { return dec.MustParse(s) }

func ptr(s string) *apd.Decimal { d := mustDec(s); return &d }

var testOp = events.Operation{OperationID: "op-1", Login: 1001, ClientOrderID: "c1", Tag: "#Ab3xY9", Attempt: 1}

func opOf(t *testing.T, ev events.Event) operation {
	t.Helper()
	o, ok := newOperation(events.Envelope{OccurredAt: 42}, ev)
	if !ok {
		t.Fatalf("%T is not an operation", ev)
	}
	if o.requestedAt != 42 {
		t.Errorf("requestedAt %d, want the envelope's 42", o.requestedAt)
	}
	return o
}

func sameDec(t *testing.T, what string, got apd.Decimal, want string) {
	t.Helper()
	if w := mustDec(want); got.Cmp(&w) != 0 {
		t.Errorf("%s = %s, want %s", what, got.String(), want)
	}
}

// A MARKET order is a deal at the price the client was quoted, no deviation, no filling
// policy, and the comment ends with the tag.
func TestMarketOrderBecomesADealAtTheQuotedPrice(t *testing.T) {
	o := opOf(t, &events.OrderRequested{Operation: testOp, Symbol: "EURUSD", Side: "SELL", Type: "MARKET",
		Volume: mustDec("0.25"), OrderPrices: events.OrderPrices{SL: ptr("1.2")}, QuotedPrice: ptr("1.10000"),
		Comment: "hedge"})
	r := o.req
	if o.invalid != nil || o.kind != trading.KindPlaceOrder || !o.market() || o.queued() != trading.StatusAccepted {
		t.Fatalf("operation %+v", o)
	}
	if r.Login != 1001 || r.Action != mt5.ActionDeal || r.Type != trading.OrderSell || r.Symbol != "EURUSD" ||
		r.Deviation != 0 || r.Filling != nil || r.Comment != "hedge#Ab3xY9" || r.Position != 0 {
		t.Fatalf("request %+v", r)
	}
	sameDec(t, "volume", r.Volume, "0.25")
	sameDec(t, "price", r.Price, "1.10000")
	sameDec(t, "sl", r.SL, "1.2")
	sameDec(t, "want", o.want, "0.25")
	// Without a quoted price the market takes it.
	o = opOf(t, &events.OrderRequested{Operation: testOp, Symbol: "EURUSD", Side: "BUY", Type: "MARKET", Volume: mustDec("1")})
	if o.req.Type != trading.OrderBuy || !o.req.Price.IsZero() || o.req.Comment != "#Ab3xY9" {
		t.Fatalf("request %+v", o.req)
	}
}

func TestPendingOrderCarriesTypePricesAndTimeInForce(t *testing.T) {
	for tif, want := range map[string]trading.TimeType{"": trading.TimeGTC, "GTC": trading.TimeGTC, "DAY": trading.TimeDay,
		"GTD": trading.TimeSpecified, "GTD_DAY": trading.TimeSpecifiedDay} {
		o := opOf(t, &events.OrderRequested{Operation: testOp, Symbol: "XAUUSD", Side: "BUY", Type: "BUY_STOP_LIMIT",
			Volume: mustDec("0.01"), OrderPrices: events.OrderPrices{Price: ptr("2400.00"), StopLimitPrice: ptr("2399.00"),
				TP: ptr("2500.00"), TimeInForce: tif, Expiration: 1_800_000_000_000}})
		r := o.req
		if o.invalid != nil || o.market() || o.queued() != trading.StatusNew || r.Action != mt5.ActionPending ||
			r.Type != trading.OrderBuyStopLimit || r.TypeTime != want || r.Expiration != 1_800_000_000_000 {
			t.Fatalf("tif %q: %+v %+v", tif, o, r)
		}
		sameDec(t, "price", r.Price, "2400.00")
		sameDec(t, "stopLimit", r.StopLimit, "2399.00")
		sameDec(t, "tp", r.TP, "2500.00")
	}
	if o := opOf(t, &events.OrderRequested{Operation: testOp, Type: "BUY_SOMETIMES", Volume: mustDec("1")}); o.invalid == nil {
		t.Error("an unknown order type was accepted")
	}
	if o := opOf(t, &events.OrderRequested{Operation: testOp, Type: "SELL_LIMIT", Volume: mustDec("1"),
		OrderPrices: events.OrderPrices{TimeInForce: "FOK"}}); o.invalid == nil {
		t.Error("an unknown time in force was accepted")
	}
}

func TestModifyCancelCloseAndSLTPRequests(t *testing.T) {
	o := opOf(t, &events.OrderModifyRequested{Operation: testOp, OrderID: 77,
		OrderPrices: events.OrderPrices{Price: ptr("1.05"), SL: ptr("1.04"), TimeInForce: "GTD", Expiration: 99000}})
	if r := o.req; o.kind != trading.KindModifyOrder || r.Action != mt5.ActionModify || r.Order != 77 ||
		r.TypeTime != trading.TimeSpecified || r.Expiration != 99000 || !r.TP.IsZero() || o.kind.ByTag() {
		t.Fatalf("modify %+v", o)
	}
	o = opOf(t, &events.OrderCancelRequested{Operation: testOp, OrderID: 78})
	if r := o.req; o.kind != trading.KindCancelOrder || r.Action != mt5.ActionRemove || r.Order != 78 || o.kind.ByTag() {
		t.Fatalf("cancel %+v", o)
	}
	o = opOf(t, &events.PositionCloseRequested{Operation: testOp, PositionID: 79, Symbol: "EURUSD", Side: "SELL"})
	if r := o.req; o.kind != trading.KindClosePosition || r.Action != mt5.ActionDeal || r.Position != 79 ||
		!r.Volume.IsZero() || !o.want.IsZero() || !o.kind.ByTag() {
		t.Fatalf("full close %+v", o)
	}
	o = opOf(t, &events.PositionCloseRequested{Operation: testOp, PositionID: 79, Volume: ptr("0.05")})
	sameDec(t, "partial close volume", o.req.Volume, "0.05")
	sameDec(t, "partial close want", o.want, "0.05")
	o = opOf(t, &events.PositionModifyRequested{Operation: testOp, PositionID: 80, TP: ptr("1.3")})
	if r := o.req; o.kind != trading.KindModifyPosition || r.Action != mt5.ActionSLTP || r.Position != 80 || !r.SL.IsZero() {
		t.Fatalf("sltp %+v", o)
	}
	if _, ok := newOperation(events.Envelope{}, &events.SweepRequested{Operation: testOp}); ok {
		t.Fatal("a sweep is sent as its legs, not itself")
	}
}

// The tag always survives the server's 31 characters: a too long client comment is cut.
func TestCommentKeepsTheTagWithinTheServersLength(t *testing.T) {
	long := strings.Repeat("é", 40)
	o := opOf(t, &events.OrderRequested{Operation: testOp, Type: "MARKET", Side: "BUY", Volume: mustDec("1"), Comment: long})
	if r := []rune(o.req.Comment); len(r) != trading.MaxPlatformComment || !strings.HasSuffix(o.req.Comment, "#Ab3xY9") {
		t.Fatalf("comment %q (%d characters)", o.req.Comment, len(r))
	}
	bad := testOp
	bad.Tag = "#short"
	if o := opOf(t, &events.OrderCancelRequested{Operation: bad, OrderID: 1}); o.invalid == nil {
		t.Fatal("a tag that is not 7 characters was accepted")
	}
}
