package query_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/gateway/gwtest"
	"tradesvc/query"
)

// fakeTrading is an in-memory trading read model and deal history that records the windows
// it was asked for.
type fakeTrading struct {
	mu        sync.Mutex
	ops       map[string]trading.Operation
	orders    map[int64]trading.Order
	positions []trading.Position
	deals     []trading.Deal
	ordersW   query.OrdersWindow
	tradesW   query.TradesWindow
	reads     chan string // when set, each Operation read sends its id
}

func newFakeTrading() *fakeTrading {
	return &fakeTrading{ops: map[string]trading.Operation{}, orders: map[int64]trading.Order{}}
}

func (f *fakeTrading) Operation(_ context.Context, id string) (trading.Operation, bool, error) {
	f.mu.Lock()
	op, ok := f.ops[id]
	reads := f.reads
	f.mu.Unlock()
	if reads != nil {
		reads <- id
	}
	return op, ok, nil
}

func (f *fakeTrading) OperationByClientID(_ context.Context, key int64, coid string) (trading.Operation, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range f.ops {
		if op.APIKeyID == key && op.ClientOrderID == coid {
			return op, true, nil
		}
	}
	return trading.Operation{}, false, nil
}

func (f *fakeTrading) Order(_ context.Context, login, id int64) (trading.Order, bool, error) {
	o, ok := f.orders[id]
	return o, ok && o.Login == login, nil
}

func (f *fakeTrading) OpenOrders(_ context.Context, login int64, symbol string) ([]trading.Order, error) {
	var out []trading.Order
	for _, o := range f.orders {
		if o.Login == login && o.Open && (symbol == "" || o.Symbol == symbol) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (f *fakeTrading) Orders(_ context.Context, login int64, w query.OrdersWindow) ([]trading.Order, error) {
	f.ordersW = w
	return nil, nil
}

func (f *fakeTrading) OpenPositions(context.Context, int64, string) ([]trading.Position, error) {
	return f.positions, nil
}

func (f *fakeTrading) UserTrades(_ context.Context, _ int64, w query.TradesWindow) ([]trading.Deal, error) {
	f.tradesW = w
	return f.deals, nil
}

func dptr(s string) *apd.Decimal {
	d := dec.MustParse(s)
	return &d
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tradingMarket() *gwtest.Market {
	m := gwtest.NewMarket()
	m.AddSymbol(gwtest.EURUSD())
	m.AddSymbol(gwtest.XAUUSD())
	return m
}

func TestOrderByClientIDAnswersTheOperationsDerivedState(t *testing.T) {
	f := newFakeTrading()
	f.ops["op-rej"] = trading.Operation{OperationID: "op-rej", Login: 1001, Tag: "#Aaaaaa", Kind: trading.KindPlaceOrder,
		APIKeyID: 5, ClientOrderID: "never-queued", RequestedAt: 1000, Symbol: "EURUSD", Side: "BUY", Type: "MARKET",
		Volume: dptr("0.10"), Comment: "x", Status: "REJECTED", Code: -1000, UpdatedAt: 61000}
	f.ops["op-pend"] = trading.Operation{OperationID: "op-pend", Login: 1001, Tag: "#Bbbbbb", Kind: trading.KindPlaceOrder,
		APIKeyID: 5, ClientOrderID: "resting", RequestedAt: 1000, Symbol: "EURUSD", Side: "BUY", Type: "BUY_LIMIT",
		Volume: dptr("1"), Price: dptr("1.05"), TimeInForce: "GTC", Status: "NEW", Retcode: 10008, OrderID: 77, UpdatedAt: 2000}
	f.ops["op-mod"] = trading.Operation{OperationID: "op-mod", Login: 1001, Kind: trading.KindModifyOrder, APIKeyID: 5,
		ClientOrderID: "a-modify", Status: "NEW"}
	f.orders[77] = trading.Order{OrderID: 77, Login: 1001, Symbol: "EURUSD", Type: 2, State: 1, VolumeInitial: dec.MustParse("1"),
		VolumeCurrent: dec.MustParse("1"), Price: dec.MustParse("1.05"), SL: dec.MustParse("1.04"), Comment: "#Bbbbbb",
		TimeSetup: 1000, UpdateTime: 1500, Open: true, ClientOrderID: "resting", APIKeyID: 5, OperationID: "op-pend"}
	h, err := query.NewSymbolsHandler[query.OrderHandler, query.OrderLookup](f, tradingMarket())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	r, err := h.Handle(ctx, query.OrderQuery{Login: 1001, APIKeyID: 5, OrigClientOrderID: "never-queued"})
	if err != nil {
		t.Fatal(err)
	}
	got := jsonOf(t, r)
	for _, want := range []string{`"status":"REJECTED"`, `"code":-1000`, `"clientOrderId":"never-queued"`, `"volume":"0.10"`,
		`"type":"MARKET"`, `"sl":"0"`, `"comment":"x#Aaaaaa"`, `"time":1000`} {
		if !strings.Contains(got, want) {
			t.Errorf("rejected order %s lacks %s", got, want)
		}
	}
	if r.Msg == "" || strings.Contains(got, "orderId") || strings.Contains(got, "mt5RetCode") || strings.Contains(got, "null") {
		t.Errorf("rejected-unqueued order: %s", got)
	}

	r, err = h.Handle(ctx, query.OrderQuery{Login: 1001, APIKeyID: 5, OrigClientOrderID: "resting"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "NEW" || r.OrderID != 77 || r.Price != "1.05000" || r.SL != "1.04000" || r.TimeInForce != "GTC" ||
		r.RemainingVolume != "1" || r.MT5RetCode != 10008 || r.UpdateTime != 2000 || r.Code != 0 {
		t.Errorf("resting order %+v", r)
	}

	for name, q := range map[string]query.OrderQuery{
		"another login":          {Login: 1002, APIKeyID: 5, OrigClientOrderID: "resting"},
		"another key":            {Login: 1001, APIKeyID: 6, OrigClientOrderID: "resting"},
		"not an order operation": {Login: 1001, APIKeyID: 5, OrigClientOrderID: "a-modify"},
		"unknown":                {Login: 1001, APIKeyID: 5, OrigClientOrderID: "nope"},
		"unknown order id":       {Login: 1001, APIKeyID: 5, OrderID: ptr(78)},
		"order of another login": {Login: 1002, APIKeyID: 5, OrderID: ptr(77)},
	} {
		if _, err := h.Handle(ctx, q); code(err) != events.CodeNoSuchOrder {
			t.Errorf("%s: %v, want -2013", name, err)
		}
	}
	if _, err := h.Handle(ctx, query.OrderQuery{Login: 1001, APIKeyID: 5}); code(err) != events.CodeMandatoryParam {
		t.Errorf("neither id: %v, want -1102", err)
	}
}

// Issue 17, item 7: the sweep and its legs share the sweep's client order id, and the read
// model may find any of those rows. Whichever it finds, the answer is the same -2013 naming
// the sweep; on another login it is the plain -2013.
func TestOrderBySweepIDIsAlwaysTheSweepAnswer(t *testing.T) {
	sweep := trading.Operation{OperationID: "sw", Login: 1001, Kind: trading.KindCloseAll, APIKeyID: 5,
		ClientOrderID: "sweep-1", RequestedAt: 1000, Status: "ACCEPTED"}
	leg := trading.Operation{OperationID: "leg", Login: 1001, Kind: trading.KindClosePosition, APIKeyID: 5,
		ClientOrderID: "sweep-1", RequestedAt: 1000, SweepID: "sw", TargetPositionID: 9, Symbol: "EURUSD",
		Side: "SELL", Status: "FILLED", OrderID: 78, DealID: 79, PositionID: 9}
	ctx := context.Background()
	for name, row := range map[string]trading.Operation{"the sweep's row": sweep, "a leg's row": leg} {
		f := newFakeTrading()
		f.ops[row.OperationID] = row
		h, err := query.NewSymbolsHandler[query.OrderHandler, query.OrderLookup](f, tradingMarket())
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Handle(ctx, query.OrderQuery{Login: 1001, APIKeyID: 5, OrigClientOrderID: "sweep-1"})
		var rej *events.Rejection
		if !errors.As(err, &rej) || rej.Code != events.CodeNoSuchOrder || !strings.Contains(rej.Msg, "close-all sweep") ||
			!strings.Contains(rej.Msg, "'sweep-1'") {
			t.Errorf("%s: %v, want -2013 naming the sweep", name, err)
		}
		_, err = h.Handle(ctx, query.OrderQuery{Login: 1002, APIKeyID: 5, OrigClientOrderID: "sweep-1"})
		if !errors.As(err, &rej) || rej.Code != events.CodeNoSuchOrder || strings.Contains(rej.Msg, "sweep") {
			t.Errorf("%s on another login: %v, want the plain -2013", name, err)
		}
	}
}

func TestOrderByIDShowsTheClientOrderIDOnlyToItsKey(t *testing.T) {
	f := newFakeTrading()
	f.ops["op"] = trading.Operation{OperationID: "op", Login: 1001, Kind: trading.KindPlaceOrder, APIKeyID: 5,
		ClientOrderID: "mine", Status: "FILLED", OrderID: 80, DealID: 81}
	f.orders[80] = trading.Order{OrderID: 80, Login: 1001, Symbol: "XAUUSD", Type: 1, State: 4, VolumeInitial: dec.MustParse("0.5"),
		VolumeCurrent: dec.MustParse("0"), Price: dec.MustParse("2350.1"), TimeSetup: 1000, TimeDone: 1000, UpdateTime: 1000,
		PositionID: 80, ClientOrderID: "mine", APIKeyID: 5, OperationID: "op"}
	h, _ := query.NewSymbolsHandler[query.OrderHandler, query.OrderLookup](f, tradingMarket())
	r, err := h.Handle(context.Background(), query.OrderQuery{Login: 1001, APIKeyID: 5, OrderID: ptr(80)})
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientOrderID != "mine" || r.Type != "MARKET" || r.Side != "SELL" || r.Status != "FILLED" || r.Price != "2350.10" ||
		r.ExecutedVolume != "0.5" || r.DealID != 81 || r.PositionID != 80 || r.TimeInForce != "" {
		t.Fatalf("own order %+v", r)
	}
	r, err = h.Handle(context.Background(), query.OrderQuery{Login: 1001, APIKeyID: 6, OrderID: ptr(80)})
	if err != nil || r.ClientOrderID != "" || r.DealID != 0 {
		t.Fatalf("another key sees %+v %v", r, err)
	}
}

func TestOpenAndAllOrdersValidateSymbolAndWindow(t *testing.T) {
	f := newFakeTrading()
	f.orders[90] = trading.Order{OrderID: 90, Login: 1001, Symbol: "EURUSD", Type: 5, State: 1, VolumeInitial: dec.MustParse("0.10"),
		VolumeCurrent: dec.MustParse("0.10"), Price: dec.MustParse("1.07"), TypeTime: 2, Expiration: 99000, TimeSetup: 1000,
		UpdateTime: 1000, Open: true, ClientOrderID: "x", APIKeyID: 9}
	m := tradingMarket()
	open, _ := query.NewSymbolsHandler[query.OpenOrdersHandler, query.OpenOrderReader](f, m)
	ctx := context.Background()
	if _, err := open.Handle(ctx, query.OpenOrdersQuery{Login: 1001, Symbol: "eurusd"}); code(err) != events.CodeInvalidSymbol {
		t.Fatalf("lower-case symbol: %v", err)
	}
	recs, err := open.Handle(ctx, query.OpenOrdersQuery{Login: 1001, APIKeyID: 5})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%+v %v", recs, err)
	}
	if got := jsonOf(t, recs[0]); got != `{"login":1001,"orderId":90,"symbol":"EURUSD","side":"SELL","type":"SELL_STOP",`+
		`"status":"NEW","volume":"0.10","remainingVolume":"0.10","price":"1.07000","stopLimitPrice":"0","sl":"0","tp":"0",`+
		`"timeInForce":"GTD","expiration":99000,"comment":"","time":1000,"updateTime":1000}` {
		t.Fatalf("order record %s", got)
	}

	all, _ := query.NewSymbolsHandler[query.AllOrdersHandler, query.OrderHistoryReader](f, m)
	const now = int64(1_800_000_000_000)
	if _, err := all.Handle(ctx, query.HistoryQuery{Login: 1001, StartTime: ptr(now - 8*day), Now: now}); code(err) != events.CodeSpanTooBig {
		t.Fatalf("8 days to now: %v", err)
	}
	if _, err := all.Handle(ctx, query.HistoryQuery{Login: 1001, StartTime: ptr(now), EndTime: ptr(now - 1), Now: now}); code(err) != events.CodeBadCombination {
		t.Fatalf("end before start: %v", err)
	}
	if _, err := all.Handle(ctx, query.HistoryQuery{Login: 1001, FromID: ptr(7), EndTime: ptr(now - day), Now: now}); err != nil {
		t.Fatal(err)
	}
	if w := f.ordersW; w.From != now-8*day || w.To != now-day || w.Limit != query.HistoryDefaultLimit || w.FromOrderID != 7 {
		t.Fatalf("window %+v", w)
	}
}

func TestUserTradesFromIDOverridesTheWindow(t *testing.T) {
	f := newFakeTrading()
	f.deals = []trading.Deal{{DealID: 5, Login: 1001, OrderID: 4, PositionID: 3, Symbol: "EURUSD", Action: 1, Entry: 1,
		Volume: dec.MustParse("0.10000000"), Price: dec.MustParse("1.08012000"), Profit: dec.MustParse("-12.3456"),
		Commission: dec.MustParse("-0.7"), Time: 1000}}
	h, _ := query.NewSymbolsHandler[query.UserTradesHandler, query.DealHistoryReader](f, tradingMarket())
	ctx := context.Background()
	const now = int64(1_800_000_000_000)
	if _, err := h.Handle(ctx, query.HistoryQuery{Login: 1001, StartTime: ptr(0), Now: now}); code(err) != events.CodeSpanTooBig {
		t.Fatalf("a window from the epoch: %v", err)
	}
	recs, err := h.Handle(ctx, query.HistoryQuery{Login: 1001, StartTime: ptr(0), FromID: ptr(5), Limit: 10, Now: now})
	if err != nil {
		t.Fatalf("fromId must override the window: %v", err)
	}
	if w := f.tradesW; w.FromID == nil || *w.FromID != 5 || w.Limit != 10 {
		t.Fatalf("window %+v", w)
	}
	if got := jsonOf(t, recs); got != `[{"login":1001,"dealId":5,"orderId":4,"positionId":3,"symbol":"EURUSD","side":"SELL",`+
		`"entry":"OUT","volume":"0.10","price":"1.08012","profit":"-12.3456","commission":"-0.7000","swap":"0.0000",`+
		`"comment":"","time":1000}]` {
		t.Fatalf("deal record %s", got)
	}
	if _, err := h.Handle(ctx, query.HistoryQuery{Login: 1001, Symbol: "NOPE", Now: now}); code(err) != events.CodeInvalidSymbol {
		t.Fatalf("unknown symbol: %v", err)
	}
}

func TestPositionsRecomputeFloatingProfitFromTheLatestQuote(t *testing.T) {
	f := newFakeTrading()
	z := dec.MustParse("0")
	f.positions = []trading.Position{
		{PositionID: 1, Login: 1001, Symbol: "EURUSD", Direction: 0, Volume: dec.MustParse("1"), PriceOpen: dec.MustParse("1.08"),
			Profit: dec.MustParse("3"), Swap: dec.MustParse("-1.5"), SL: dec.MustParse("1.07"), TP: z, TimeOpen: 1000, UpdateTime: 2000},
		{PositionID: 2, Login: 1001, Symbol: "XAUUSD", Direction: 1, Volume: dec.MustParse("0.5"), PriceOpen: dec.MustParse("2350"),
			Profit: dec.MustParse("-7.25"), Swap: z, SL: z, TP: z, TimeOpen: 1000, UpdateTime: 2000},
	}
	m := tradingMarket()
	m.SetQuote(query.Quote{Symbol: "EURUSD", Bid: dec.MustParse("1.08105"), Ask: dec.MustParse("1.08120"), Time: 1})
	accts := gwtest.NewAccounts(query.Account{Login: 1001, Currency: "USD"}, query.Account{Login: 1004, Currency: "USC"},
		query.Account{Login: 1007, Currency: "JPY"})
	h, err := query.NewPositionsHandler(f, m, m, accts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs, err := h.Handle(ctx, query.PositionsQuery{Login: 1001})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%+v %v", recs, err)
	}
	// (1.08105 - 1.08) * 1 lot * 100000 = 105 USD, closing a buy at the bid.
	if r := recs[0]; r.Profit != "105.0000" || r.CurrentPrice != "1.08105" || r.OpenPrice != "1.08000" || r.SL != "1.07000" ||
		r.TP != "0" || r.Swap != "-1.5000" || r.Side != "BUY" {
		t.Fatalf("EURUSD position %+v", r)
	}
	// No XAUUSD quote: the last reported profit, no current price.
	if r := recs[1]; r.Profit != "-7.2500" || r.CurrentPrice != "" || r.Side != "SELL" || r.OpenPrice != "2350.00" {
		t.Fatalf("XAUUSD position %+v", r)
	}
	// A sell closes at the ask: (2350 - 2351.10) * 0.5 * 100 = -55.
	m.SetQuote(query.Quote{Symbol: "XAUUSD", Bid: dec.MustParse("2350.9"), Ask: dec.MustParse("2351.1"), Time: 1})
	if recs, _ = h.Handle(ctx, query.PositionsQuery{Login: 1001}); recs[1].Profit != "-55.0000" || recs[1].CurrentPrice != "2351.10" {
		t.Fatalf("XAUUSD position %+v", recs[1])
	}
	// A cent account sees cents; an account whose currency has no rate keeps the reported profit.
	if recs, _ = h.Handle(ctx, query.PositionsQuery{Login: 1004}); recs[0].Profit != "10500.0000" {
		t.Fatalf("USC profit %s", recs[0].Profit)
	}
	if recs, _ = h.Handle(ctx, query.PositionsQuery{Login: 1007}); recs[0].Profit != "3.0000" {
		t.Fatalf("JPY profit without a USDJPY quote %s", recs[0].Profit)
	}
	m.SetQuote(query.Quote{Symbol: "USDJPY", Bid: dec.MustParse("150"), Ask: dec.MustParse("150"), Time: 1})
	if recs, _ = h.Handle(ctx, query.PositionsQuery{Login: 1007}); recs[0].Profit != "15750.0000" {
		t.Fatalf("JPY profit through USDJPY %s", recs[0].Profit)
	}
	if _, err := h.Handle(ctx, query.PositionsQuery{Login: 1001, Symbol: "GBPUSD"}); code(err) != events.CodeInvalidSymbol {
		t.Fatalf("unknown symbol: %v", err)
	}
}

// watcher is an OperationWatcher whose states a test sends.
type watcher struct{ ch chan query.OperationState }

func (w watcher) WatchOperation(string) (<-chan query.OperationState, func()) { return w.ch, func() {} }

// The awaiter answers from the states the change feed hands it, without reading the read
// model: a state that does not answer (a fill its deals have not confirmed) is passed over,
// an older attempt's state is not this attempt's answer.
func TestOperationAwaiterAnswersFromTheStatesItIsHanded(t *testing.T) {
	f := newFakeTrading()
	f.reads = make(chan string, 4)
	w := watcher{ch: make(chan query.OperationState, 3)}
	a, err := query.NewOperationAwaiter(f, w)
	if err != nil {
		t.Fatal(err)
	}
	op := trading.Operation{OperationID: "op", Kind: trading.KindPlaceOrder, Type: "MARKET", Status: "ACCEPTED",
		Attempt: 2, Symbol: "EURUSD"}
	w.ch <- query.OperationState{Derived: trading.Derived{Status: "REJECTED", Code: -1000, Attempt: 1, Decided: true}, Version: 3}
	w.ch <- query.OperationState{Derived: trading.Derived{Status: "FILLED", Retcode: 10009, Attempt: 2}, Version: 4}
	w.ch <- query.OperationState{Derived: trading.Derived{Status: "FILLED", Retcode: 10009, OrderID: 9, Deals: 1,
		Attempt: 2, Decided: true}, Version: 5}
	got, found, err := a.Await(context.Background(), op, time.Minute)
	if err != nil || !found || got.Status != "FILLED" || got.OrderID != 9 || got.Version != 5 || got.Symbol != "EURUSD" {
		t.Fatalf("answered %+v found=%v err=%v", got, found, err)
	}
	if n := len(f.reads); n != 0 {
		t.Fatalf("%d reads of the read model, want none", n)
	}
}

// Nothing answers in time: the awaiter reads once when its time is up, and the status reached
// meanwhile is the answer.
func TestOperationAwaiterReadsTheStatusReachedWhenTheTimeIsUp(t *testing.T) {
	f := newFakeTrading()
	f.reads = make(chan string, 4)
	f.ops["late"] = trading.Operation{OperationID: "late", Kind: trading.KindPlaceOrder, Type: "MARKET", Status: "ACCEPTED", Attempt: 1}
	a, err := query.NewOperationAwaiter(f, watcher{ch: make(chan query.OperationState, 1)})
	if err != nil {
		t.Fatal(err)
	}
	op, found, err := a.Await(context.Background(), trading.Operation{OperationID: "late", Attempt: 1}, 200*time.Millisecond)
	if err != nil || !found || op.Status != "ACCEPTED" {
		t.Fatalf("after the time is up: %+v found=%v err=%v, want the ACCEPTED operation", op, found, err)
	}
	if n := len(f.reads); n != 1 {
		t.Fatalf("%d reads, want exactly the one when the time was up", n)
	}
	op, found, err = a.Await(context.Background(), trading.Operation{OperationID: "nope"}, time.Millisecond)
	if err != nil || found || op.OperationID != "nope" {
		t.Fatalf("unknown operation: %+v %v %v", op, found, err)
	}
}
