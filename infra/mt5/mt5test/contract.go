// Package mt5test is the contract every implementation of mt5.TradeServer must pass: the
// simulator today, a Manager-API bridge or a network client tomorrow. Run it from a _test.go
// file with RunContract and a constructor of fresh fixtures.
package mt5test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// Admin is the narrow control surface the contract needs besides the port itself.
type Admin interface {
	// SetQuote sets and holds a symbol's quote; pending orders and stops see it.
	SetQuote(symbol string, bid, ask apd.Decimal) error
	// Deposit books a balance operation and returns its deal ticket.
	Deposit(login int64, amount apd.Decimal) (int64, error)
	// SetAccountTradeAllowed switches trading on the account.
	SetAccountTradeAllowed(login int64, allowed bool) error
}

// Fixture is one fresh trade server for one contract test.
type Fixture struct {
	Server mt5.TradeServer
	Admin  Admin
	// Login is a real-group hedging account with trading allowed and free margin for a few
	// minimum-volume trades on Symbol.
	Login int64
	// Symbol trades now (FULL trade mode, MARKET execution, unlimited liquidity, no slippage).
	Symbol string
	// Bid and Ask are a valid quote for Symbol; the tests place pending orders far from it.
	Bid, Ask string
}

// RunContract runs every contract test, each on a fixture from newFixture.
func RunContract(t *testing.T, newFixture func(t *testing.T) Fixture) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Fixture)
	}{
		{"MarketBuyAnswersDoneWithTicketsAndReportsItsFacts", testMarketBuy},
		{"CloseReportsAnOutDealAndPositionClose", testClose},
		{"PendingOrderRestsAndItsRemovalCancelsIt", testPending},
		{"FactsAreGaplessAndResumableFromAnyCursor", testFactsResumable},
		{"TicksAndQuoteFollowTheMarket", testTicks},
		{"DepositIsABalanceDealWithAnAccountFact", testDeposit},
		{"TradeDisabledAccountIsRefusedInBand", testTradeDisabled},
		{"ReferenceDataAndLookupErrors", testReference},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if err := f.Admin.SetQuote(f.Symbol, dec.MustParse(f.Bid), dec.MustParse(f.Ask)); err != nil {
				t.Fatalf("set quote: %v", err)
			}
			tc.fn(t, f)
		})
	}
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cursor returns the sequence of the newest fact available now (0 when there is none).
func cursor(t *testing.T, s mt5.TradeServer) uint64 {
	t.Helper()
	var seq uint64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs, err := s.Facts(ctx, seq, 1000)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return seq
		}
		if err != nil {
			t.Fatalf("facts: %v", err)
		}
		seq = fs[len(fs)-1].Seq
	}
}

// waitFact reads facts after seq until one satisfies pred.
func waitFact(t *testing.T, s mt5.TradeServer, after uint64, what string, pred func(mt5.Fact) bool) mt5.Fact {
	t.Helper()
	ctx := ctx5(t)
	for {
		fs, err := s.Facts(ctx, after, 100)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		for _, f := range fs {
			if pred(f) {
				return f
			}
			after = f.Seq
		}
	}
}

func minVolume(t *testing.T, f Fixture) apd.Decimal {
	t.Helper()
	syms, err := f.Server.Symbols(ctx5(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range syms {
		if y.Name == f.Symbol {
			return y.VolumeMin
		}
	}
	t.Fatalf("symbol %s not listed", f.Symbol)
	return apd.Decimal{}
}

func eq(a, b apd.Decimal) bool { return a.Cmp(&b) == 0 }

func buy(t *testing.T, f Fixture, tag string) mt5.TradeResult {
	t.Helper()
	r, err := f.Server.Send(ctx5(t), mt5.TradeRequest{Login: f.Login, Action: mt5.ActionDeal, Symbol: f.Symbol,
		Type: trading.OrderBuy, Volume: minVolume(t, f), Comment: "contract" + tag})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if r.Retcode != trading.RetDone {
		t.Fatalf("retcode %v", r.Retcode)
	}
	return r
}

func testMarketBuy(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	seq := cursor(t, f.Server)
	r := buy(t, f, "CT00001")
	if r.Order == 0 || r.Deal == 0 || r.Position == 0 {
		t.Fatalf("tickets missing: %+v", r)
	}
	if !eq(r.Price, dec.MustParse(f.Ask)) || !eq(r.Volume, minVolume(t, f)) {
		t.Fatalf("filled %s at %s, want %s at the ask %s", dec.String(r.Volume), dec.String(r.Price), dec.String(minVolume(t, f)), f.Ask)
	}
	d := waitFact(t, f.Server, seq, "the deal", func(x mt5.Fact) bool { return x.Kind == mt5.FactDeal && x.Deal.Ticket == r.Deal })
	if d.Deal.Entry != trading.EntryIn || d.Deal.Action != trading.DealBuy || d.Deal.Order != r.Order || d.Deal.Position != r.Position ||
		!strings.HasSuffix(d.Deal.Comment, "CT00001") || d.Login != f.Login || d.Deal.Time%1000 != 0 {
		t.Fatalf("deal fact %+v", d.Deal)
	}
	p := waitFact(t, f.Server, seq, "the position", func(x mt5.Fact) bool { return x.Kind == mt5.FactPosition && x.Position.Ticket == r.Position })
	if p.Action != trading.ChangeNew || p.Position.Type != trading.Buy {
		t.Fatalf("position fact %v %+v", p.Action, p.Position)
	}
	// The answer carries the facts the request caused: the feed's own entries, same seq and
	// same content, the deal and the position among them.
	var inDeal, inPosition bool
	for _, in := range r.Facts {
		fed := waitFact(t, f.Server, seq, fmt.Sprintf("the in-band fact %d", in.Seq), func(x mt5.Fact) bool { return x.Seq == in.Seq })
		a, _ := json.Marshal(in)
		b, _ := json.Marshal(fed)
		if in.Kind != fed.Kind || in.Login != f.Login || string(a) != string(b) {
			t.Fatalf("in-band fact %+v differs from the feed's %+v", in, fed)
		}
		inDeal = inDeal || in.Kind == mt5.FactDeal && in.Deal.Ticket == r.Deal
		inPosition = inPosition || in.Kind == mt5.FactPosition && in.Position.Ticket == r.Position
	}
	if !inDeal || !inPosition {
		t.Fatalf("in-band facts %d lack the deal or the position: %+v", len(r.Facts), r.Facts)
	}
	ds, err := f.Server.DealsByTag(ctx, f.Login, "CT00001")
	if err != nil || len(ds) != 1 || ds[0].Ticket != r.Deal {
		t.Fatalf("deals by tag: %+v %v", ds, err)
	}
	os, err := f.Server.OrdersByTag(ctx, f.Login, "CT00001")
	if err != nil || len(os) != 1 || os[0].Ticket != r.Order || os[0].State != trading.StateFilled {
		t.Fatalf("orders by tag: %+v %v", os, err)
	}
	ps, err := f.Server.Positions(ctx, f.Login)
	if err != nil || !hasPosition(ps, r.Position) {
		t.Fatalf("positions: %+v %v", ps, err)
	}
	hist, err := f.Server.DealHistory(ctx, f.Login, 0, time.Now().Add(24*time.Hour).UnixMilli())
	if err != nil || !hasDeal(hist, r.Deal) {
		t.Fatalf("deal history: %v", err)
	}
	a, err := f.Server.Account(ctx, f.Login)
	if err != nil {
		t.Fatal(err)
	}
	if sum := dec.Add(dec.Add(a.Balance, a.Credit), a.Profit); !eq(sum, a.Equity) || !eq(dec.Sub(a.Equity, a.Margin), a.MarginFree) || a.Margin.Sign() <= 0 {
		t.Fatalf("account figures inconsistent: %+v", a)
	}
	st, err := f.Server.DayStats(ctx, f.Symbol)
	if err != nil || st.Deals < 1 {
		t.Fatalf("day stats %+v %v", st, err)
	}
}

func hasPosition(ps []mt5.Position, t int64) bool {
	for _, p := range ps {
		if p.Ticket == t {
			return true
		}
	}
	return false
}

func hasDeal(ds []mt5.Deal, t int64) bool {
	for _, d := range ds {
		if d.Ticket == t {
			return true
		}
	}
	return false
}

func testClose(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	r := buy(t, f, "CT00002")
	seq := cursor(t, f.Server)
	c, err := f.Server.Send(ctx, mt5.TradeRequest{Login: f.Login, Action: mt5.ActionDeal, Position: r.Position, Comment: "contractCT00003"})
	if err != nil || c.Retcode != trading.RetDone || c.Position != r.Position || c.Deal == 0 {
		t.Fatalf("close: %+v %v", c, err)
	}
	if !eq(c.Price, dec.MustParse(f.Bid)) {
		t.Fatalf("closed at %s, want the bid %s", dec.String(c.Price), f.Bid)
	}
	d := waitFact(t, f.Server, seq, "the out deal", func(x mt5.Fact) bool { return x.Kind == mt5.FactDeal && x.Deal.Ticket == c.Deal })
	if d.Deal.Entry != trading.EntryOut || d.Deal.Action != trading.DealSell || d.Deal.Position != r.Position {
		t.Fatalf("out deal %+v", d.Deal)
	}
	waitFact(t, f.Server, seq, "the position close", func(x mt5.Fact) bool {
		return x.Kind == mt5.FactPosition && x.Position.Ticket == r.Position && x.Action == trading.ChangeClose
	})
	ps, _ := f.Server.Positions(ctx, f.Login)
	if hasPosition(ps, r.Position) {
		t.Fatal("closed position still listed")
	}
	again, err := f.Server.Send(ctx, mt5.TradeRequest{Login: f.Login, Action: mt5.ActionDeal, Position: r.Position})
	if err != nil || again.Retcode != trading.RetPositionClosed {
		t.Fatalf("second close: %+v %v", again, err)
	}
}

func testPending(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	half, err := dec.Quo(dec.MustParse(f.Bid), dec.New(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	price := dec.Round(half, 0) // far below the market
	seq := cursor(t, f.Server)
	r, err := f.Server.Send(ctx, mt5.TradeRequest{Login: f.Login, Action: mt5.ActionPending, Symbol: f.Symbol,
		Type: trading.OrderBuyLimit, Volume: minVolume(t, f), Price: price, Comment: "contractCT00004"})
	if err != nil || r.Retcode != trading.RetPlaced || r.Order == 0 {
		t.Fatalf("place: %+v %v", r, err)
	}
	n := waitFact(t, f.Server, seq, "the order", func(x mt5.Fact) bool { return x.Kind == mt5.FactOrder && x.Order.Ticket == r.Order })
	if n.Action != trading.ChangeNew || n.Order.Type != trading.OrderBuyLimit {
		t.Fatalf("order fact %v %+v", n.Action, n.Order)
	}
	os, err := f.Server.OpenOrders(ctx, f.Login)
	if err != nil || len(os) == 0 || os[len(os)-1].Ticket != r.Order || !eq(os[len(os)-1].Price, price) {
		t.Fatalf("open orders %+v %v", os, err)
	}
	rm, err := f.Server.Send(ctx, mt5.TradeRequest{Login: f.Login, Action: mt5.ActionRemove, Order: r.Order})
	if err != nil || rm.Retcode != trading.RetDone {
		t.Fatalf("remove: %+v %v", rm, err)
	}
	waitFact(t, f.Server, n.Seq, "the cancel", func(x mt5.Fact) bool {
		return x.Kind == mt5.FactOrder && x.Order.Ticket == r.Order && x.Action == trading.ChangeDelete && x.Order.State == trading.StateCanceled
	})
	hist, err := f.Server.OrderHistory(ctx, f.Login, 0, time.Now().Add(24*time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range hist {
		found = found || o.Ticket == r.Order && o.State == trading.StateCanceled
	}
	if !found {
		t.Fatal("cancelled order missing from history")
	}
	tagged, _ := f.Server.OrdersByTag(ctx, f.Login, "CT00004")
	if len(tagged) != 1 || tagged[0].State != trading.StateCanceled {
		t.Fatalf("orders by tag %+v", tagged)
	}
}

func testFactsResumable(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	start := cursor(t, f.Server)
	r := buy(t, f, "CT00005")
	if _, err := f.Server.Send(ctx, mt5.TradeRequest{Login: f.Login, Action: mt5.ActionDeal, Position: r.Position}); err != nil {
		t.Fatal(err)
	}
	end := cursor(t, f.Server)
	if end < start+4 {
		t.Fatalf("an open and a close produced only %d facts", end-start)
	}
	var one []mt5.Fact
	for seq := start; seq < end; {
		fs, err := f.Server.Facts(ctx, seq, 1)
		if err != nil || len(fs) != 1 || fs[0].Seq != seq+1 {
			t.Fatalf("facts after %d: %+v %v", seq, fs, err)
		}
		one = append(one, fs[0])
		seq = fs[0].Seq
	}
	all, err := f.Server.Facts(ctx, start, int(end-start))
	if err != nil || len(all) != len(one) {
		t.Fatalf("batch read %d facts, one by one %d (%v)", len(all), len(one), err)
	}
	for i := range all {
		if all[i].Seq != one[i].Seq || all[i].Kind != one[i].Kind || all[i].Login != one[i].Login {
			t.Fatalf("re-read differs at %d", all[i].Seq)
		}
	}
}

func testTicks(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	q, err := f.Server.Quote(ctx, f.Symbol)
	if err != nil {
		t.Fatal(err)
	}
	bid := dec.Add(dec.MustParse(f.Bid), dec.Sub(dec.MustParse(f.Ask), dec.MustParse(f.Bid)))
	ask := dec.Add(bid, dec.Sub(dec.MustParse(f.Ask), dec.MustParse(f.Bid)))
	if err := f.Admin.SetQuote(f.Symbol, bid, ask); err != nil {
		t.Fatal(err)
	}
	after := q.Seq
	for {
		ts, err := f.Server.Ticks(ctx, after, 100)
		if err != nil {
			t.Fatalf("ticks: %v", err)
		}
		last := ts[len(ts)-1]
		for _, x := range ts {
			if x.Symbol == f.Symbol && eq(x.Bid, bid) && eq(x.Ask, ask) {
				if x.BidDirection != 1 || x.AskDirection != 1 || x.Seq <= q.Seq {
					t.Fatalf("tick %+v", x)
				}
				q2, _ := f.Server.Quote(ctx, f.Symbol)
				if !eq(q2.Bid, bid) || !eq(q2.Ask, ask) {
					t.Fatalf("quote %+v", q2)
				}
				return
			}
		}
		after = last.Seq
	}
}

func testDeposit(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	before, err := f.Server.Account(ctx, f.Login)
	if err != nil {
		t.Fatal(err)
	}
	seq := cursor(t, f.Server)
	tkt, err := f.Admin.Deposit(f.Login, dec.MustParse("123.45"))
	if err != nil {
		t.Fatal(err)
	}
	want := dec.Add(before.Balance, dec.MustParse("123.45"))
	d := waitFact(t, f.Server, seq, "the balance deal", func(x mt5.Fact) bool { return x.Kind == mt5.FactDeal && x.Deal.Ticket == tkt })
	if d.Deal.Action != trading.DealBalance || !eq(d.Deal.Profit, dec.MustParse("123.45")) {
		t.Fatalf("balance deal %+v", d.Deal)
	}
	a := waitFact(t, f.Server, seq, "the account change", func(x mt5.Fact) bool { return x.Kind == mt5.FactAccount && x.Login == f.Login })
	if !eq(a.Account.Balance, want) {
		t.Fatalf("account fact balance %s, want %s", dec.String(a.Account.Balance), dec.String(want))
	}
	after, _ := f.Server.Account(ctx, f.Login)
	if !eq(after.Balance, want) {
		t.Fatalf("balance %s, want %s", dec.String(after.Balance), dec.String(want))
	}
}

func testTradeDisabled(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	if err := f.Admin.SetAccountTradeAllowed(f.Login, false); err != nil {
		t.Fatal(err)
	}
	a, _ := f.Server.Account(ctx, f.Login)
	if a.TradeAllowed {
		t.Fatal("account still trade-allowed")
	}
	r, err := f.Server.Send(ctx, mt5.TradeRequest{Login: f.Login, Action: mt5.ActionDeal, Symbol: f.Symbol,
		Type: trading.OrderBuy, Volume: minVolume(t, f), Comment: "contractCT00006"})
	if err != nil || r.Retcode.Success() || r.Deal != 0 {
		t.Fatalf("trade on a disabled account: %+v %v", r, err)
	}
	if ds, _ := f.Server.DealsByTag(ctx, f.Login, "CT00006"); len(ds) != 0 {
		t.Fatal("a refused request produced a deal")
	}
	if err := f.Admin.SetAccountTradeAllowed(f.Login, true); err != nil {
		t.Fatal(err)
	}
	buy(t, f, "CT00007")
}

func testReference(t *testing.T, f Fixture) {
	ctx := ctx5(t)
	info, err := f.Server.ServerInfo(ctx)
	if err != nil || info.Name == "" || info.Time == 0 {
		t.Fatalf("server info %+v %v", info, err)
	}
	acc, err := f.Server.Account(ctx, f.Login)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := f.Server.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups {
		found = found || g.Name == acc.Group
	}
	if !found {
		t.Fatalf("group %q of the account not listed", acc.Group)
	}
	accs, err := f.Server.Accounts(ctx)
	if err != nil || len(accs) == 0 {
		t.Fatalf("accounts %v", err)
	}
	syms, err := f.Server.Symbols(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, y := range syms {
		if y.Name == "" || y.VolumeMin.Sign() <= 0 || y.VolumeStep.Sign() <= 0 || y.TickSize.Sign() <= 0 || y.ContractSize.Sign() <= 0 {
			t.Fatalf("symbol spec incomplete: %+v", y)
		}
	}
	if _, err := f.Server.Account(ctx, -1); !errors.Is(err, mt5.ErrUnknownLogin) {
		t.Fatalf("unknown login: %v", err)
	}
	if _, err := f.Server.DayStats(ctx, "NO_SUCH_SYMBOL"); !errors.Is(err, mt5.ErrUnknownSymbol) {
		t.Fatalf("unknown symbol: %v", err)
	}
	if _, err := f.Server.Quote(ctx, strings.ToLower(f.Symbol)); !errors.Is(err, mt5.ErrUnknownSymbol) {
		t.Fatalf("symbols are case-sensitive: %v", err)
	}
}
