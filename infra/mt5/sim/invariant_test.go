package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// randomOps drives n random operations and ticks with a fixed seed.
func randomOps(h *harness, rng *rand.Rand, n int, check func(i int)) {
	logins := []int64{1001, 1002, 1003, 1004}
	syms := []string{"BTCUSD", "ETHUSD", "EURUSD", "LTCUSD", "BNBUSD", "USDJPY", "XAUUSD", "BCHUSD"}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	ctx := context.Background()
	vol := func(y *symbol) apd.Decimal {
		k := int64(1 + rng.IntN(5))
		switch y.spec.Name {
		case "BNBUSD": // whole lots against 1-lot liquidity levels: partial fills
			return dec.New(k, 0)
		case "BTCUSD": // big enough that a price shock can stop an account out
			return dec.New(k*50, -2)
		}
		return dec.Mul(y.spec.VolumeMin, dec.New(k, 0))
	}
	price := func(y *symbol, base int64, offTicks int64) apd.Decimal {
		k := base + offTicks*pointsPerTick(y)
		if k < pointsPerTick(y) {
			k = pointsPerTick(y)
		}
		return fromPoints(y, k)
	}
	randomPosition := func(login int64) *mt5.Position {
		ps, _ := h.s.Positions(ctx, login)
		if len(ps) == 0 {
			return nil
		}
		return &ps[rng.IntN(len(ps))]
	}
	randomOrder := func(login int64) *mt5.Order {
		os, _ := h.s.OpenOrders(ctx, login)
		if len(os) == 0 {
			return nil
		}
		return &os[rng.IntN(len(os))]
	}
	for i := 0; i < n; i++ {
		login := logins[rng.IntN(len(logins))]
		y := h.s.symbols[pick(syms)]
		spreadT := int64(1 + rng.IntN(5))
		op := rng.IntN(100)
		var err error
		switch {
		case op < 22:
			req := mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Symbol: y.spec.Name, Type: trading.OrderType(rng.IntN(2)),
				Volume: vol(y), Comment: fmt.Sprintf("r%06d", i)}
			if rng.IntN(3) == 0 {
				d := int64(50 + rng.IntN(200))
				if req.Type == trading.OrderBuy {
					req.SL, req.TP = price(y, y.bidK, -d), price(y, y.bidK, d)
				} else {
					req.SL, req.TP = price(y, y.askK, d), price(y, y.askK, -d)
				}
			}
			_, err = h.s.Send(ctx, req)
		case op < 35:
			if p := randomPosition(login); p != nil {
				req := mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Position: p.Ticket}
				if rng.IntN(2) == 0 {
					req.Volume = dec.Round(dec.MustQuo(p.Volume, dec.New(2, 0)), 2)
				}
				_, err = h.s.Send(ctx, req)
			}
		case op < 50:
			t := trading.OrderType(2 + rng.IntN(6))
			d := int64(5 + rng.IntN(100))
			var p, sl apd.Decimal
			switch t {
			case trading.OrderBuyLimit:
				p = price(y, y.askK, -d)
			case trading.OrderSellLimit:
				p = price(y, y.bidK, d)
			case trading.OrderBuyStop:
				p = price(y, y.askK, d)
			case trading.OrderSellStop:
				p = price(y, y.bidK, -d)
			case trading.OrderBuyStopLimit:
				p = price(y, y.askK, d)
				sl = price(y, y.askK, d/2)
			case trading.OrderSellStopLimit:
				p = price(y, y.bidK, -d)
				sl = price(y, y.bidK, -d/2)
			}
			req := mt5.TradeRequest{Login: login, Action: mt5.ActionPending, Symbol: y.spec.Name, Type: t, Volume: vol(y),
				Price: p, StopLimit: sl, TypeTime: trading.TimeType(rng.IntN(2)), Comment: fmt.Sprintf("p%06d", i)}
			_, err = h.s.Send(ctx, req)
		case op < 57:
			if o := randomOrder(login); o != nil {
				oy := h.s.symbols[o.Symbol]
				k, _ := toPoints(oy, o.Price)
				_, err = h.s.Send(ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionModify, Order: o.Ticket,
					Price: price(oy, k, int64(rng.IntN(21)-10)), StopLimit: o.StopLimit, TypeTime: o.TypeTime, Expiration: o.Expiration})
			}
		case op < 63:
			if o := randomOrder(login); o != nil {
				_, err = h.s.Send(ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionRemove, Order: o.Ticket})
			}
		case op < 67:
			if p := randomPosition(login); p != nil {
				py := h.s.symbols[p.Symbol]
				_, err = h.s.Send(ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionSLTP, Position: p.Ticket,
					SL: apd.Decimal{}, TP: price(py, closeK(py, p.Type), tpDir(p.Type)*int64(100+rng.IntN(100)))})
			}
		case op < 95:
			move := int64(rng.IntN(41) - 20)
			if rng.IntN(30) == 0 { // a price shock of up to 15%
				move = (y.bidK / pointsPerTick(y)) * int64(rng.IntN(31)-15) / 100
			}
			tick := pointsPerTick(y)
			bid := y.bidK + move*tick
			if bid < 100*tick {
				bid = y.bidK
			}
			err = h.s.PushTick(y.spec.Name, fromPoints(y, bid), fromPoints(y, bid+spreadT*tick))
		case op < 97:
			_, err = h.s.Deposit(login, dec.New(int64(100+rng.IntN(1000)), 0))
		default:
			h.clock.Add(time.Duration(rng.IntN(360)) * time.Minute)
			h.housekeep()
		}
		if err != nil {
			h.t.Fatalf("op %d: %v", i, err)
		}
		if check != nil && i%100 == 99 {
			check(i)
		}
	}
}

func closeK(y *symbol, t trading.Side) int64 {
	if t == trading.Buy {
		return y.bidK
	}
	return y.askK
}

func tpDir(t trading.Side) int64 {
	if t == trading.Buy {
		return 1
	}
	return -1
}

// checkInvariants asserts what must hold for every account at any moment.
func checkInvariants(t *testing.T, h *harness, initial map[int64]apd.Decimal) {
	t.Helper()
	seenDeal := map[int64]bool{}
	seenOrder := map[int64]bool{}
	for login, init := range initial {
		a := h.account(login)
		if got := dec.Add(dec.Add(a.Balance, a.Credit), a.Profit); got.Cmp(&a.Equity) != 0 {
			t.Fatalf("%d: equity %s != balance+credit+profit %s", login, dec.String(a.Equity), dec.String(got))
		}
		ps := h.positions(login)
		var sum apd.Decimal
		for _, p := range ps {
			if p.Volume.Sign() <= 0 {
				t.Fatalf("%d: position %d volume %s", login, p.Ticket, dec.String(p.Volume))
			}
			sum = dec.Add(sum, dec.Add(p.Profit, p.Swap))
		}
		diff := dec.Sub(sum, a.Profit)
		tol := dec.Mul(dec.New(int64(len(ps)+1), 0), dec.New(1, -2))
		if diff.Sign() < 0 {
			diff = dec.Neg(diff)
		}
		if diff.Cmp(&tol) > 0 {
			t.Fatalf("%d: account profit %s vs positions %s beyond rounding", login, dec.String(a.Profit), dec.String(sum))
		}
		hist := h.history(login)
		positionsOpened := map[int64]bool{}
		for _, o := range hist {
			if seenOrder[o.Ticket] {
				t.Fatalf("order ticket %d twice", o.Ticket)
			}
			seenOrder[o.Ticket] = true
			if o.PositionID != 0 {
				positionsOpened[o.PositionID] = true
			}
		}
		open := h.openOrders(login)
		for _, o := range open {
			if seenOrder[o.Ticket] {
				t.Fatalf("order ticket %d twice", o.Ticket)
			}
			seenOrder[o.Ticket] = true
		}
		bal := init
		var last int64
		for _, d := range h.deals(login) {
			if seenDeal[d.Ticket] || d.Ticket <= last {
				t.Fatalf("deal ticket %d not unique and increasing", d.Ticket)
			}
			seenDeal[d.Ticket], last = true, d.Ticket
			bal = dec.Add(bal, dec.Add(d.Profit, dec.Add(d.Commission, d.Swap)))
			if d.Action.IsTrade() {
				if !seenOrder[d.Order] || !positionsOpened[d.Position] {
					t.Fatalf("deal %d: order %d / position %d unknown", d.Ticket, d.Order, d.Position)
				}
			}
		}
		if bal.Cmp(&a.Balance) != 0 {
			t.Fatalf("%d: balance %s != initial + deals %s", login, dec.String(a.Balance), dec.String(bal))
		}
	}
}

func TestRandomOperationsKeepInvariantsAndSurviveRestart(t *testing.T) {
	h := newHarness(t)
	initial := map[int64]apd.Decimal{}
	for _, l := range []int64{1001, 1002, 1003, 1004} {
		initial[l] = h.account(l).Balance
	}
	// a thin account, so that price shocks stop it out
	if _, err := h.s.Deposit(1003, D("-9000")); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(42, 42))
	randomOps(h, rng, 4000, func(int) { checkInvariants(t, h, initial) })
	checkInvariants(t, h, initial)

	// the fact feed is gapless from 1
	var seq uint64
	n := h.lastSeq()
	for seq < n {
		fs, err := h.s.Facts(context.Background(), seq, 5000)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.Seq != seq+1 {
				t.Fatalf("fact seq %d after %d", f.Seq, seq)
			}
			seq = f.Seq
		}
	}
	if n < 1000 {
		t.Fatalf("only %d facts: the random run did too little", n)
	}

	type snap struct {
		Bal, Cr    []string
		Positions  [][]string
		Open, Hist []mt5.Order
		Deals      []mt5.Deal
	}
	take := func() snap {
		var s snap
		for _, l := range []int64{1001, 1002, 1003, 1004} {
			a := h.account(l)
			s.Bal, s.Cr = append(s.Bal, dec.String(a.Balance)), append(s.Cr, dec.String(a.Credit))
			for _, p := range h.positions(l) {
				s.Positions = append(s.Positions, []string{fmt.Sprint(p.Ticket, p.Type), dec.String(p.Volume), dec.String(p.PriceOpen),
					dec.String(p.SL), dec.String(p.TP), dec.String(p.Swap), fmt.Sprint(p.TimeCreate)})
			}
			s.Open = append(s.Open, h.openOrders(l)...)
			s.Hist = append(s.Hist, h.history(l)...)
			s.Deals = append(s.Deals, h.deals(l)...)
		}
		return s
	}
	before := take()
	lastOrder, lastDeal := h.s.nextOrder, h.s.nextDeal
	h.reopen()
	after := take()
	if !reflect.DeepEqual(fmt.Sprint(before), fmt.Sprint(after)) {
		t.Fatal("state after restart differs from before")
	}
	if h.lastSeq() != n {
		t.Fatalf("fact sequence after restart %d, want %d", h.lastSeq(), n)
	}
	if h.s.nextOrder != lastOrder || h.s.nextDeal != lastDeal {
		t.Fatalf("ticket counters after restart %d/%d, want %d/%d", h.s.nextOrder, h.s.nextDeal, lastOrder, lastDeal)
	}
	// resumed facts continue the sequence, and old cursors are served from the journal file
	if fs, err := h.s.Facts(context.Background(), 10, 5); err != nil || len(fs) != 5 || fs[0].Seq != 11 {
		t.Fatalf("facts from the journal after restart: %v %v", fs, err)
	}
	h.quote("BTCUSD", "60000.00", "60010.00")
	if _, err := h.s.Deposit(1001, D("1000000")); err != nil {
		t.Fatal(err)
	}
	r := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.01"))
	if r.Order < lastOrder || r.Deal < lastDeal {
		t.Fatalf("tickets reused after restart: %+v", r)
	}
	// and the invariants keep holding as work continues on the replayed state
	randomOps(h, rng, 1000, nil)
	checkInvariants(t, h, initial)

	// the run must have exercised what it claims to
	fs, err := h.s.Facts(context.Background(), 0, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range fs {
		switch {
		case f.Deal != nil && f.Deal.Reason != trading.ReasonClient:
			seen[fmt.Sprint("deal reason ", int(f.Deal.Reason))]++
		case f.Order != nil && f.Action == trading.ChangeDelete:
			seen["order "+f.Order.State.String()]++
		}
	}
	for _, k := range []string{"deal reason 4", "deal reason 5", "deal reason 6", "deal reason 7", "order FILLED",
		"order PARTIAL", "order CANCELED", "order EXPIRED"} {
		if seen[k] == 0 {
			t.Errorf("the random run never produced %s (%v)", k, seen)
		}
	}
}
