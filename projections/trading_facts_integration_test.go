package projections

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
	"tradesvc/query"
)

// The facts of one transaction are applied one statement per table, and the result is what a
// statement per fact, in their order, would give: every row ends at its newest fact, a fact
// older than the row (or than an earlier fact of its key) changes nothing and gets no change
// row, a copy of a deal is inserted once, and the facts newer than the row each get their
// change row (a pending order's placement and its fill both reach the user streams).
func TestTradingProjectionAppliesEachTablesFactsInOneStatementAsInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, p := testTrading(t)
	msg := plainMessage
	order := func(seq uint64, change string, state int, current string) *events.OrderChanged {
		return &events.OrderChanged{Fact: events.Fact{Seq: seq, Login: 1001}, Change: change, OrderID: 70, Symbol: "EURUSD",
			Type: 2, State: state, VolumeInitial: dec.MustParse("1"), VolumeCurrent: dec.MustParse(current),
			Price: dec.MustParse("1.05000"), StopLimitPrice: dec.MustParse("0"), SL: dec.MustParse("0"), TP: dec.MustParse("0"),
			Comment: "manual", TimeSetup: trT0, Time: trT0 + int64(seq)}
	}
	position := func(seq uint64, volume string) *events.PositionChanged {
		return &events.PositionChanged{Fact: events.Fact{Seq: seq, Login: 1001}, Change: events.ChangeUpdate, PositionID: 71,
			Symbol: "EURUSD", Volume: dec.MustParse(volume), PriceOpen: dec.MustParse("1.05000"), SL: dec.MustParse("0"),
			TP: dec.MustParse("0"), Profit: dec.MustParse("0"), Swap: dec.MustParse("0"), Comment: "manual",
			TimeOpen: trT0, Time: trT0 + int64(seq)}
	}
	deal := &events.DealAdded{Fact: events.Fact{Seq: 13, Login: 1001}, DealID: 72, OrderID: 70, PositionID: 71,
		Symbol: "EURUSD", Volume: dec.MustParse("1"), Price: dec.MustParse("1.05000"), Profit: dec.MustParse("0"),
		Commission: dec.MustParse("0"), Swap: dec.MustParse("0"), Comment: "manual", Time: trT0 + 13}
	account := func(seq uint64, balance string) *events.AccountChanged {
		return &events.AccountChanged{Fact: events.Fact{Seq: seq, Login: 1001}, Change: events.ChangeUpdate,
			Balance: dec.MustParse(balance), Credit: dec.MustParse("0"), Time: trT0 + int64(seq)}
	}

	// A row that is already newer than some of the facts below.
	if err := p.Apply(ctx, []batch.Message{msg(position(15, "3"))}); err != nil {
		t.Fatal(err)
	}
	copyOfDeal := *deal
	if err := p.Apply(ctx, []batch.Message{
		msg(order(10, events.ChangeNew, 1, "1")),    // placed: applied
		msg(order(12, events.ChangeDelete, 4, "0")), // filled: applied
		msg(order(11, events.ChangeUpdate, 1, "1")), // older than the fill before it: nothing
		msg(deal), msg(&copyOfDeal), // inserted once
		msg(position(14, "2")),                          // older than the stored row: nothing
		msg(position(20, "1")),                          // applied
		msg(position(19, "5")),                          // older than the one before it: nothing
		msg(account(30, "100")), msg(account(31, "90")), // both applied, the row ends at 31
	}); err != nil {
		t.Fatal(err)
	}

	var state, seq int64
	var current string
	var open bool
	if err := pool.QueryRow(ctx, `SELECT state, volume_current::text, open, seq FROM rm.orders WHERE order_id = 70`).
		Scan(&state, &current, &open, &seq); err != nil {
		t.Fatal(err)
	}
	if state != 4 || current != "0" || open || seq != 12 {
		t.Errorf("order: state %d, current %s, open %v, seq %d; want the fill (4, 0, false, 12)", state, current, open, seq)
	}
	var volume string
	if err := pool.QueryRow(ctx, `SELECT volume::text, seq FROM rm.positions WHERE position_id = 71`).Scan(&volume, &seq); err != nil {
		t.Fatal(err)
	}
	if volume != "1" || seq != 20 {
		t.Errorf("position: volume %s, seq %d; want 1 and 20", volume, seq)
	}
	var deals int
	var balance string
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM rm.deals WHERE deal_id = 72),
		(SELECT balance::text || '@' || seq FROM rm.account_balances WHERE login = 1001)`).Scan(&deals, &balance); err != nil {
		t.Fatal(err)
	}
	if deals != 1 || balance != "90@31" {
		t.Errorf("deal rows %d, balance %s; want 1 and 90@31", deals, balance)
	}

	counts := map[string]int{}
	rows, err := pool.Query(ctx, `SELECT kind, count(*) FROM rm.changes WHERE login = 1001 GROUP BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind string
		var n int
		if err := rows.Scan(&kind, &n); err != nil {
			t.Fatal(err)
		}
		counts[kind] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		query.ChangeOrderUpdate:    2, // placed and filled, not the stale update
		query.ChangeDeal:           1, // not the copy
		query.ChangePositionUpdate: 2, // the first batch's 15 and this one's 20
		query.ChangeAccountUpdate:  2,
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("change rows %v, want %v", counts, want)
			break
		}
	}
}

// The commands of one transaction are applied in one statement too, with what a statement per
// command, in their order, gave: a row an outcome created first (no kind yet) is completed, a
// redelivered command changes nothing, a newer attempt raises the row and an older one after
// it does not bring it back, and each command that moved its row is reported applied.
func TestTradingProjectionAppliesCommandsInOneStatementAsInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := testenv.MigratedPG(t)
	seedDigits(t, pool)
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandGrace: -1, Replaying: true})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(ev events.Event) batch.Message {
		return batch.Message{Envelope: events.Envelope{Type: ev.EventType()}, Event: ev}
	}
	// Stored before: op-a as the skeleton its outcome made, op-b at attempt 1, op-c at attempt 3.
	recordCommands(t, pool, marketOrder(1001, "op-b", "#CMDB", "1", 1), marketOrder(1001, "op-c", "#CMDC", "1", 3))
	if err := p.Apply(ctx, []batch.Message{msg(outcomeOf(1001, "op-a", "#CMDA", 1, "FILLED")),
		msg(marketOrder(1001, "op-b", "#CMDB", "1", 1)), msg(marketOrder(1001, "op-c", "#CMDC", "1", 3))}); err != nil {
		t.Fatal(err)
	}
	batchCmds := []events.Event{
		marketOrder(1001, "op-a", "#CMDA", "2", 1), // completes the skeleton: applied
		marketOrder(1001, "op-a", "#CMDA", "9", 1), // a copy of the same attempt: nothing
		marketOrder(1001, "op-b", "#CMDB", "3", 1), // redelivered: nothing
		marketOrder(1001, "op-b", "#CMDB", "4", 2), // newer attempt: applied
		marketOrder(1001, "op-b", "#CMDB", "5", 1), // older than the one before it: nothing
		marketOrder(1001, "op-c", "#CMDC", "6", 2), // older than the stored row: nothing
		marketOrder(1002, "op-d", "#CMDD", "7", 1), // new: applied
		marketOrder(1002, "op-d", "#CMDD", "8", 2), // newer still: applied, the row ends here
	}
	items := make([]*tradingItem, len(batchCmds))
	b := &pgx.Batch{}
	for i, ev := range batchCmds {
		items[i] = &tradingItem{ev: ev, table: factTables[ev.EventType()]}
	}
	if items[0].table != commandTable {
		t.Fatalf("a command's table is %v, want the command table", items[0].table)
	}
	commandTable.queue(b, items)
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	var applied []bool
	for _, it := range items {
		applied = append(applied, it.applied)
	}
	if want := []bool{true, false, false, true, false, false, true, true}; !slices.Equal(applied, want) {
		t.Errorf("applied %v, want %v", applied, want)
	}
	want := map[string]string{"op-a": "PLACE_ORDER 1 2 #CMDA 1001", "op-b": "PLACE_ORDER 2 4 #CMDB 1001",
		"op-c": "PLACE_ORDER 3 1 #CMDC 1001", "op-d": "PLACE_ORDER 2 8 #CMDD 1002"}
	for op, w := range want {
		var got string
		if err := pool.QueryRow(ctx, `SELECT kind || ' ' || attempt || ' ' || volume::text || ' ' || tag || ' ' || login
			FROM rm.operations WHERE operation_id = $1`, op).Scan(&got); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if got != w {
			t.Errorf("%s: %q, want %q", op, got, w)
		}
	}
	var outStatus string
	if err := pool.QueryRow(ctx, `SELECT out_status FROM rm.operations WHERE operation_id = 'op-a'`).Scan(&outStatus); err != nil {
		t.Fatal(err)
	}
	if outStatus != "FILLED" {
		t.Errorf("op-a's outcome %q after its command completed the row, want FILLED kept", outStatus)
	}
}

// testTrading is a live trading projection (no command grace) on a fresh database.
func testTrading(t *testing.T) (*pgxpool.Pool, *Trading) {
	t.Helper()
	pool := testenv.MigratedPG(t)
	seedDigits(t, pool)
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandGrace: -1})
	if err != nil {
		t.Fatal(err)
	}
	return pool, p
}

// plainMessage is ev as a consumer hands it over, without its place in the log.
func plainMessage(ev events.Event) batch.Message {
	return batch.Message{Envelope: events.Envelope{Type: ev.EventType()}, Event: ev}
}
