package projections

import (
	"context"
	"fmt"
	"testing"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
	"tradesvc/query"
)

func orderIDs(os []trading.Order) string {
	out := []int64{}
	for _, o := range os {
		out = append(out, o.OrderID)
	}
	return fmt.Sprint(out)
}

// TestTradingReaderWindowsAndOrdering applies facts straight to the projection (no broker
// needed to decide what the reader returns) and reads them back.
func TestTradingReaderWindowsAndOrdering(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	p, err := NewTrading(TradingConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewTradingReader(pool)
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	order := func(login, id int64, symbol string, typ int, change string, setup int64, comment string) batch.Message {
		seq++
		z := dec.MustParse("0")
		return batch.Message{Event: &events.OrderChanged{Fact: events.Fact{Seq: seq, Login: login}, Change: change, OrderID: id, Symbol: symbol,
			Type: typ, State: map[bool]int{true: 1, false: 4}[change != events.ChangeDelete], VolumeInitial: dec.MustParse("1"),
			VolumeCurrent: dec.MustParse("1"), Price: dec.MustParse("1.1"), StopLimitPrice: z, SL: z, TP: z,
			Comment: comment, TimeSetup: setup, Time: setup}}
	}
	const t0 = int64(1_800_000_000_000)
	// Ids and setup times deliberately disagree in order.
	msgs := []batch.Message{
		order(1001, 30, "EURUSD", 2, events.ChangeNew, t0+3000, "a#Own001"),
		order(1001, 10, "XAUUSD", 3, events.ChangeNew, t0+1000, ""),
		order(1001, 20, "EURUSD", 4, events.ChangeNew, t0+2000, ""),
		order(1001, 40, "EURUSD", 0, events.ChangeDelete, t0+500, ""), // a market order, done
		order(1001, 50, "EURUSD", 2, events.ChangeNew, t0+4000, ""),
		order(1001, 50, "EURUSD", 2, events.ChangeDelete, t0+4000, ""), // left the book
		order(2002, 60, "EURUSD", 2, events.ChangeNew, t0+1000, ""),    // another login
		{Event: &events.OrderRequested{Operation: events.Operation{OperationID: "op-own", Login: 1001, ClientOrderID: "mine",
			Tag: "#Own001", Attempt: 1, Requester: events.Requester{APIKeyID: 5, ReceivedAt: t0}}, Symbol: "EURUSD",
			Side: "BUY", Type: "BUY_LIMIT", Volume: dec.MustParse("1")}},
	}
	for _, leg := range []struct {
		op  string
		pos int64
	}{{"leg-b", 200}, {"leg-a", 100}} {
		msgs = append(msgs, batch.Message{Event: &events.PositionCloseRequested{Operation: events.Operation{OperationID: leg.op,
			Login: 1001, ClientOrderID: "c-" + leg.op, Tag: "#" + leg.op[4:] + "leg00", Attempt: 1,
			Requester: events.Requester{APIKeyID: 5, ReceivedAt: t0}}, PositionID: leg.pos, SweepID: "sweep-1"}})
	}
	recordMessages(t, pool, msgs)
	if err := p.Apply(ctx, msgs); err != nil {
		t.Fatal(err)
	}

	open, err := r.OpenOrders(ctx, 1001, "")
	if err != nil || orderIDs(open) != "[10 20 30]" {
		t.Fatalf("open orders %s %v (pending only, by id)", orderIDs(open), err)
	}
	if open[2].ClientOrderID != "mine" || open[2].APIKeyID != 5 || open[2].OperationID != "op-own" || open[0].ClientOrderID != "" {
		t.Fatalf("resolution: %+v / %+v", open[2], open[0])
	}
	if eur, _ := r.OpenOrders(ctx, 1001, "EURUSD"); orderIDs(eur) != "[20 30]" {
		t.Fatalf("EURUSD open orders %s", orderIDs(eur))
	}

	all := func(w query.OrdersWindow) string {
		if w.Limit == 0 {
			w.Limit = 500
		}
		os, err := r.Orders(ctx, 1001, w)
		if err != nil {
			t.Fatal(err)
		}
		return orderIDs(os)
	}
	for _, c := range []struct {
		name string
		w    query.OrdersWindow
		want string
	}{
		{"oldest first by setup time, done orders included", query.OrdersWindow{From: t0, To: t0 + 10000}, "[40 10 20 30 50]"},
		{"both bounds inclusive", query.OrdersWindow{From: t0 + 1000, To: t0 + 3000}, "[10 20 30]"},
		{"symbol", query.OrdersWindow{Symbol: "EURUSD", From: t0, To: t0 + 10000}, "[40 20 30 50]"},
		{"from an order id, within the window", query.OrdersWindow{FromOrderID: 20, From: t0 + 1000, To: t0 + 3500}, "[20 30]"},
		{"limit keeps the oldest", query.OrdersWindow{From: t0, To: t0 + 10000, Limit: 2}, "[40 10]"},
	} {
		if got := all(c.w); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}

	if o, ok, err := r.Order(ctx, 1001, 50); err != nil || !ok || o.Open || o.State != 4 {
		t.Fatalf("done order 50: %+v %v %v", o, ok, err)
	}
	if _, ok, _ := r.Order(ctx, 1001, 60); ok {
		t.Fatal("an order of another login is not found")
	}
	op, ok, err := r.OperationByClientID(ctx, 5, "mine")
	if err != nil || !ok || op.OperationID != "op-own" || op.Status != "NEW" || dec.String(*op.Volume) != "1" {
		t.Fatalf("by client id: %+v %v %v", op, ok, err)
	}
	if _, ok, _ := r.OperationByClientID(ctx, 6, "mine"); ok {
		t.Fatal("another key's client order id is not found")
	}
	legs, err := r.SweepLegs(ctx, "sweep-1")
	if err != nil || len(legs) != 2 || legs[0].TargetPositionID != 100 || legs[1].OperationID != "leg-b" ||
		legs[0].Kind != trading.KindClosePosition || legs[0].Volume != nil {
		t.Fatalf("sweep legs %+v %v", legs, err)
	}
}

func TestTradingReaderPositions(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	p, _ := NewTrading(TradingConfig{Pool: pool})
	r, _ := NewTradingReader(pool)
	pos := func(seq uint64, login, id int64, symbol, change, vol string) batch.Message {
		z := dec.MustParse("0")
		return batch.Message{Event: &events.PositionChanged{Fact: events.Fact{Seq: seq, Login: login}, Change: change, PositionID: id,
			Symbol: symbol, Volume: dec.MustParse(vol), PriceOpen: dec.MustParse("2350.10"), SL: z, TP: z,
			Profit: dec.MustParse("-1.25"), Swap: z, TimeOpen: 1000, Time: 1000 + int64(seq)}}
	}
	if err := p.Apply(ctx, []batch.Message{pos(1, 1001, 9, "XAUUSD", "NEW", "1"), pos(2, 1001, 7, "EURUSD", "NEW", "2"),
		pos(3, 1001, 8, "XAUUSD", "NEW", "1"), pos(4, 1001, 8, "XAUUSD", "CLOSE", "0"), pos(5, 1002, 6, "XAUUSD", "NEW", "1"),
		pos(6, 1001, 9, "XAUUSD", "UPDATE", "0.5")}); err != nil {
		t.Fatal(err)
	}
	// An older fact redelivered after a newer one never moves the row back.
	if err := p.Apply(ctx, []batch.Message{pos(1, 1001, 9, "XAUUSD", "NEW", "1")}); err != nil {
		t.Fatal(err)
	}
	open, err := r.OpenPositions(ctx, 1001, "")
	if err != nil || len(open) != 2 || open[0].PositionID != 7 || open[1].PositionID != 9 || dec.String(open[1].Volume) != "0.5" ||
		dec.String(open[1].PriceOpen) != "2350.10" || dec.String(open[1].Profit) != "-1.25" {
		t.Fatalf("open positions %+v %v", open, err)
	}
	if xau, _ := r.OpenPositions(ctx, 1001, "XAUUSD"); len(xau) != 1 || xau[0].PositionID != 9 {
		t.Fatalf("XAUUSD positions %+v", xau)
	}
	if closed, ok, err := r.Position(ctx, 1001, 8); err != nil || !ok || closed.Open {
		t.Fatalf("closed position: %+v %v %v", closed, ok, err)
	}
	if _, ok, _ := r.Position(ctx, 1001, 6); ok {
		t.Fatal("a position of another login is not found")
	}
}

func TestHistoryReaderReturnsClosingTradesDeduplicatedInTheirWindow(t *testing.T) {
	ctx := context.Background()
	conn := testenv.MigratedCH(t)
	h, err := NewDealHistory(conn)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewHistoryReader(conn)
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1_800_000_000_000)
	deal := func(login, id int64, symbol string, action, entry int, at int64) *events.DealAdded {
		z := dec.MustParse("0")
		return &events.DealAdded{Fact: events.Fact{Seq: uint64(id), Login: login}, DealID: id, OrderID: id - 1, PositionID: 5, Symbol: symbol,
			Action: action, Entry: entry, Volume: dec.MustParse("0.10"), Price: dec.MustParse("1.08012"),
			Profit: dec.MustParse("-12.3456"), Commission: dec.MustParse("-0.7"), Swap: z, Comment: "c", Time: at}
	}
	batch1 := msgs(
		deal(1001, 105, "EURUSD", 1, 1, t0+5000), // closing sell
		deal(1001, 101, "EURUSD", 0, 0, t0+1000), // opening: not returned
		deal(1001, 103, "XAUUSD", 0, 3, t0+3000), // OUT_BY
		deal(1001, 102, "", 2, 0, t0+2000),       // balance
		deal(1001, 104, "EURUSD", 0, 2, t0+4000), // INOUT
		deal(1002, 106, "EURUSD", 1, 1, t0+5000), // another login
	)
	for i := 0; i < 2; i++ { // redelivered: still one row per deal
		if err := h.Apply(ctx, batch1); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(w query.TradesWindow) string {
		if w.Limit == 0 {
			w.Limit = 500
		}
		ds, err := r.UserTrades(ctx, 1001, w)
		if err != nil {
			t.Fatal(err)
		}
		out := []int64{}
		for _, d := range ds {
			out = append(out, d.DealID)
		}
		return fmt.Sprint(out)
	}
	from := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		name string
		w    query.TradesWindow
		want string
	}{
		{"closing trading deals only, by deal id", query.TradesWindow{From: t0, To: t0 + 10000}, "[103 104 105]"},
		{"window bounds inclusive", query.TradesWindow{From: t0 + 3000, To: t0 + 4000}, "[103 104]"},
		{"symbol", query.TradesWindow{Symbol: "EURUSD", From: t0, To: t0 + 10000}, "[104 105]"},
		{"fromId overrides the window", query.TradesWindow{FromID: from(104), From: 0, To: 1}, "[104 105]"},
		{"limit keeps the first ids", query.TradesWindow{From: t0, To: t0 + 10000, Limit: 1}, "[103]"},
	} {
		if got := ids(c.w); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	ds, _ := r.UserTrades(ctx, 1001, query.TradesWindow{FromID: from(105), Limit: 10})
	if len(ds) != 1 {
		t.Fatalf("deals %+v", ds)
	}
	d := ds[0]
	if d.Login != 1001 || d.OrderID != 104 || d.PositionID != 5 || d.Action != 1 || d.Entry != 1 || d.Time != t0+5000 ||
		dec.Cmp(d.Volume, dec.MustParse("0.1")) != 0 || dec.Cmp(d.Price, dec.MustParse("1.08012")) != 0 ||
		dec.String(d.Profit) != "-12.3456" || dec.Cmp(d.Commission, dec.MustParse("-0.7")) != 0 || d.Comment != "c" {
		t.Fatalf("deal %+v", d)
	}
}

func TestTradingProjectionPrunesChangeRowsOlderThanTheRetention(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	if _, err := pool.Exec(ctx, `INSERT INTO rm.changes (part, seq, login, kind, event, created_at) VALUES
		(9, 1, 1, 'DEAL', '{}', now() - interval '2 hours'), (9, 2, 1, 'DEAL', '{}', now() - interval '10 minutes')`); err != nil {
		t.Fatal(err)
	}
	p, err := NewTrading(TradingConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	acct := &events.AccountChanged{Fact: events.Fact{Seq: 1, Login: 1}, Change: events.ChangeUpdate, Balance: dec.MustParse("1"),
		Credit: dec.MustParse("0"), Time: 1}
	if err := p.Apply(ctx, msgs(acct)); err != nil {
		t.Fatal(err)
	}
	var old, kept int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE created_at < now() - interval '1 hour'),
		count(*) FILTER (WHERE created_at >= now() - interval '1 hour') FROM rm.changes`).Scan(&old, &kept); err != nil {
		t.Fatal(err)
	}
	if old != 0 || kept != 2 { // the recent row and the batch's ACCOUNT_UPDATE
		t.Fatalf("after pruning: %d old rows, %d recent rows", old, kept)
	}
}
