package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
)

// eqEnv is an execution-quality projection on a fresh ClickHouse database, with reference
// data in a fresh Postgres: BTCUSD (2 digits, tick 0.01 worth 0.01 USD per lot) and
// USDJPY (profit in JPY), accounts 1001 (USD) and 1004 (USC).
type eqEnv struct {
	t    *testing.T
	ctx  context.Context
	ch   driver.Conn
	pool *pgxpool.Pool
	p    *ExecutionQuality
	off  int64 // offset of the next message
}

const eqT0 = int64(1_800_000_000_000)

func eqSetup(t *testing.T) *eqEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &eqEnv{t: t, ctx: ctx, ch: testenv.MigratedCH(t), pool: testenv.MigratedPG(t)}
	for _, q := range []string{
		`INSERT INTO rm.symbols (symbol, spec, spec_time) VALUES
			('BTCUSD', '{"symbol":"BTCUSD","digits":2,"tickSize":"0.01","tickValue":"0.01","currencyProfit":"USD"}', 1),
			('USDJPY', '{"symbol":"USDJPY","digits":3,"tickSize":"0.001","tickValue":"100","currencyProfit":"JPY"}', 1)`,
		`INSERT INTO rm.accounts (login, grp, currency, leverage, demo, trade_allowed, active, balance, credit, equity,
			margin, free_margin, profit, margin_level, update_time) VALUES
			(1001, 'real', 'USD', 100, false, true, true, 0, 0, 0, 0, 0, 0, 0, 0),
			(1004, 'cent', 'USC', 100, false, true, true, 0, 0, 0, 0, 0, 0, 0, 0)`,
	} {
		if _, err := e.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if e.p, err = NewExecutionQuality(e.ch, e.pool, testenv.Logger()); err != nil {
		t.Fatal(err)
	}
	return e
}

// msg wraps ev as the consumer hands it over: envelope time at, record timestamp at+ts.
func (e *eqEnv) msg(ev events.Event, at, ts int64) batch.Message {
	e.off++
	env := events.Envelope{ID: events.NewID(), Type: ev.EventType(), OccurredAt: at, Key: ev.PartitionKey()}
	m := batch.Message{Topic: "t", Offset: e.off, Envelope: env, Event: ev}
	if ts > 0 {
		m.Timestamp = time.UnixMilli(at + ts)
	}
	return m
}

func (e *eqEnv) apply(msgs ...batch.Message) {
	e.t.Helper()
	recordMessages(e.t, e.pool, msgs)
	if err := e.p.Apply(e.ctx, msgs); err != nil {
		e.t.Fatal(err)
	}
}

// row reads the newest version of an operation's row as text columns.
func (e *eqEnv) row(login int64, tag string) map[string]string {
	e.t.Helper()
	cols := []string{"version", "operation_id", "recorded", "decided", "kind", "client_order_id", "attempt", "symbol",
		"side", "type", "requested_volume", "requested_price", "quote_bid", "quote_ask", "quote_time_ms", "arrival_price",
		"status", "code", "mt5_retcode", "unanswered", "reconciled", "order_id", "deal_id", "position_id", "deals",
		"deal_ids", "executed_volume", "fill_price", "slippage_points", "slippage", "currency", "received_ms",
		"queued_ms", "sent_ms", "answered_ms", "decided_ms", "first_deal_time_ms", "first_deal_observed_ms",
		"latency_answer_ms", "latency_fill_ms", "received_date"}
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = "ifNull(toString(" + c + "), 'NULL')"
	}
	rows, err := e.ch.Query(e.ctx, "SELECT "+strings.Join(sel, ", ")+" FROM execution_quality FINAL WHERE login = ? AND tag = ?", login, tag)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		e.t.Fatalf("no row for %d/%s", login, tag)
	}
	vals := make([]string, len(cols))
	dests := make([]any, len(cols))
	for i := range vals {
		dests[i] = &vals[i]
	}
	if err := rows.Scan(dests...); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for i, c := range cols {
		out[c] = vals[i]
	}
	return out
}

// versions counts the stored versions of a row (before FINAL collapses them).
func (e *eqEnv) versions(login int64, tag string) uint64 {
	e.t.Helper()
	var n uint64
	if err := e.ch.QueryRow(e.ctx, "SELECT count() FROM execution_quality WHERE login = ? AND tag = ?", login, tag).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func want(t *testing.T, row map[string]string, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		if got := row[kv[i]]; got != kv[i+1] {
			t.Errorf("%s = %s, want %s (row %v)", kv[i], got, kv[i+1], row)
		}
	}
}

func ptrDec(s string) *apd.Decimal { d := dec.MustParse(s); return &d }

func eqHeader(login int64, op, tag string, attempt int, received int64) events.Operation {
	return events.Operation{OperationID: op, Login: login, ClientOrderID: "c-" + op, Tag: tag, Attempt: attempt,
		Requester: events.Requester{APIKeyID: 7, SourceAddr: "127.0.0.1", Method: "POST", Path: "/v1/order", ReceivedAt: received}}
}

func eqMarket(login int64, op, tag, side, vol string, received int64) *events.OrderRequested {
	return &events.OrderRequested{Operation: eqHeader(login, op, tag, 1, received), Symbol: "BTCUSD", Side: side,
		Type: "MARKET", Volume: dec.MustParse(vol), QuoteBid: ptrDec("60000.00"), QuoteAsk: ptrDec("60015.00"),
		QuoteTime: received - 40}
}

func eqDeal(login, id, order int64, vol, price, comment string, at int64) *events.DealAdded {
	z := dec.MustParse("0")
	return &events.DealAdded{Fact: events.Fact{Seq: uint64(id), Login: login}, DealID: id, OrderID: order, PositionID: order, Symbol: "BTCUSD",
		Action: 0, Entry: 0, Volume: dec.MustParse(vol), Price: dec.MustParse(price), Profit: z, Commission: z, Swap: z,
		Comment: comment, Time: at - at%1000}
}

// TestExecutionQualityRowsFromEitherShapeOfTheLog: a market order whose outcome carries its
// send time and in-band deals, and one logged the older way (ExecutionSent_v1, deals on the
// trades topic only, arriving before the command), give the same kind of row: the quote, the
// fill, slippage in points and money, and every time of the timeline. Redelivery writes no
// new version.
func TestExecutionQualityRowsFromEitherShapeOfTheLog(t *testing.T) {
	e := eqSetup(t)
	t0 := eqT0
	// New shape: the outcome has sentAt and the deal in band; two ticks of slippage on a buy.
	cmd := e.msg(eqMarket(1001, "op-new", "#AAAAA1", "BUY", "0.02", t0), t0+3, 2)
	deal := *eqDeal(1001, 501, 401, "0.02", "60015.02", "#AAAAA1", t0+40)
	out := &events.ExecutionOutcome{OperationID: "op-new", Login: 1001, Tag: "#AAAAA1", Attempt: 1, Status: "FILLED",
		Retcode: 10009, OrderID: 401, DealID: 501, Position: 401, Price: ptrDec("60015.02"), Volume: ptrDec("0.02"),
		DecidedAt: t0 + 30, SentAt: t0 + 10, Facts: &events.ExecutionFacts{Deals: []events.DealAdded{deal}}}
	// A record the projection does not accept reaches it undecoded (nil Event): it is skipped.
	first := []batch.Message{cmd, {Topic: "t", Offset: 999, Envelope: events.Envelope{Type: "PositionChanged_v1"}},
		e.msg(out, t0+31, 1)}
	e.apply(first...)
	row := e.row(1001, "#AAAAA1")
	want(t, row, "operation_id", "op-new", "recorded", "1", "decided", "1", "kind", "PLACE_ORDER", "client_order_id", "c-op-new",
		"symbol", "BTCUSD", "side", "BUY", "type", "MARKET", "requested_volume", "0.02000000", "requested_price", "NULL",
		"quote_bid", "60000.00000000", "quote_ask", "60015.00000000", "quote_time_ms", fmt.Sprint(t0-40),
		"arrival_price", "60015.00000000", "status", "FILLED", "code", "NULL", "mt5_retcode", "10009", "order_id", "401",
		"deal_id", "501", "position_id", "401", "deals", "1", "deal_ids", "[501]", "executed_volume", "0.02000000",
		"fill_price", "60015.02000000", "slippage_points", "2.0000", "slippage", "0.0004", "currency", "USD",
		"received_ms", fmt.Sprint(t0), "queued_ms", fmt.Sprint(t0+5), "sent_ms", fmt.Sprint(t0+10),
		"answered_ms", fmt.Sprint(t0+30), "decided_ms", fmt.Sprint(t0+30), "first_deal_time_ms", fmt.Sprint(t0+40-(t0+40)%1000),
		"first_deal_observed_ms", fmt.Sprint(t0+30), "latency_answer_ms", "30", "latency_fill_ms", "30",
		"received_date", time.UnixMilli(t0).UTC().Format(time.DateOnly), "version", "1")
	// The relay's copy of the deal, and the whole batch again: nothing new to write.
	e.apply(e.msg(&deal, t0+50, 1))
	e.apply(first...)
	if n := e.versions(1001, "#AAAAA1"); n != 1 {
		t.Errorf("%d versions after redelivery, want 1", n)
	}

	// Old shape, facts in another order: the deal first, then the outcome, the sent record,
	// and the command last. A sell 3 ticks below the bid.
	t1 := t0 + 10_000
	sell := eqMarket(1001, "op-old", "#AAAAA2", "SELL", "0.01", t1)
	d := eqDeal(1001, 502, 402, "0.01", "59999.97", "client #AAAAA2", t1+60)
	d.Action = 1
	e.apply(e.msg(d, t1+70, 1))
	e.apply(e.msg(&events.ExecutionOutcome{OperationID: "op-old", Login: 1001, Tag: "#AAAAA2", Attempt: 1,
		Status: "FILLED", Retcode: 10009, OrderID: 402, DealID: 502, Position: 402, Price: ptrDec("59999.97"),
		Volume: ptrDec("0.01"), DecidedAt: t1 + 50}, t1+51, 1),
		e.msg(&events.ExecutionSent{OperationID: "op-old", Login: 1001, Tag: "#AAAAA2", Attempt: 1, SentAt: t1 + 20}, t1+51, 1))
	if row := e.row(1001, "#AAAAA2"); row["recorded"] != "0" || row["deals"] != "1" {
		t.Errorf("before its command the row is a skeleton with the deal: %v", row)
	}
	e.apply(e.msg(sell, t1+2, 3))
	want(t, e.row(1001, "#AAAAA2"), "recorded", "1", "status", "FILLED", "side", "SELL", "arrival_price", "60000.00000000",
		"fill_price", "59999.97000000", "slippage_points", "3.0000", "slippage", "0.0003", "sent_ms", fmt.Sprint(t1+20),
		"answered_ms", fmt.Sprint(t1+50), "first_deal_observed_ms", fmt.Sprint(t1+70), "latency_fill_ms", "70",
		"queued_ms", fmt.Sprint(t1+5), "version", "3")
}

// TestExecutionQualityFollowsFillsRefusalsAndPendingOrders: a partial fill completes after the
// decision (a new version each time), a pending order is measured against its limit price once
// it triggers, a refusal keeps its codes without an answer time when the trade server gave
// none, a cent account's slippage stays in USC, and a rebuild from the same facts in another
// order equals the live rows.
func TestExecutionQualityFollowsFillsRefusalsAndPendingOrders(t *testing.T) {
	e := eqSetup(t)
	t0 := eqT0 + 100_000
	var all []batch.Message
	apply := func(ms ...batch.Message) {
		t.Helper()
		all = append(all, ms...)
		e.apply(ms...)
	}

	// Partial: 0.03 asked, 0.01 in band (PARTIALLY_FILLED 10010), then 0.02 on the trades topic.
	apply(e.msg(eqMarket(1001, "op-part", "#BBBBB1", "BUY", "0.03", t0), t0+1, 1))
	d1 := *eqDeal(1001, 601, 701, "0.01", "60015.00", "#BBBBB1", t0+20)
	apply(e.msg(&events.ExecutionOutcome{OperationID: "op-part", Login: 1001, Tag: "#BBBBB1", Attempt: 1,
		Status: "PARTIALLY_FILLED", Retcode: 10010, OrderID: 701, Price: ptrDec("60015.00"), Volume: ptrDec("0.01"),
		DecidedAt: t0 + 20, SentAt: t0 + 5, Facts: &events.ExecutionFacts{Deals: []events.DealAdded{d1}}}, t0+21, 1))
	want(t, e.row(1001, "#BBBBB1"), "status", "PARTIALLY_FILLED", "executed_volume", "0.01000000", "slippage_points", "0.0000")
	apply(e.msg(eqDeal(1001, 602, 701, "0.02", "60015.03", "#BBBBB1", t0+900_000), t0+900_100, 1))
	want(t, e.row(1001, "#BBBBB1"), "status", "FILLED", "executed_volume", "0.03000000", "deals", "2",
		"deal_ids", "[601,602]", "fill_price", "60015.02000000", "slippage_points", "2.0000", "slippage", "0.0006",
		"first_deal_observed_ms", fmt.Sprint(t0+20), "latency_fill_ms", "20", "version", "3")

	// Pending BUY_LIMIT at 59990.00: NEW, resting; it triggers and fills at 59989.99, one point better.
	limit := &events.OrderRequested{Operation: eqHeader(1001, "op-lim", "#BBBBB2", 1, t0), Symbol: "BTCUSD",
		Side: "BUY", Type: "BUY_LIMIT", Volume: dec.MustParse("0.01"),
		OrderPrices: events.OrderPrices{Price: ptrDec("59990.00"), TimeInForce: "GTC"}, QuoteBid: ptrDec("60000.00"),
		QuoteAsk: ptrDec("60015.00"), QuoteTime: t0 - 5}
	z := dec.MustParse("0")
	order := func(seq uint64, change string, state int) *events.OrderChanged {
		return &events.OrderChanged{Fact: events.Fact{Seq: seq, Login: 1001}, Change: change, OrderID: 801, Symbol: "BTCUSD", Type: 2,
			State: state, VolumeInitial: dec.MustParse("0.01"), VolumeCurrent: dec.MustParse("0.01"),
			Price: dec.MustParse("59990.00"), StopLimitPrice: z, SL: z, TP: z, Comment: "#BBBBB2", TimeSetup: t0, Time: t0 + int64(seq)}
	}
	apply(e.msg(limit, t0+1, 1), e.msg(order(10, "NEW", 1), t0+12, 1))
	apply(e.msg(&events.ExecutionOutcome{OperationID: "op-lim", Login: 1001, Tag: "#BBBBB2", Attempt: 1, Status: "NEW",
		Retcode: 10008, OrderID: 801, Price: ptrDec("59990.00"), Volume: ptrDec("0.01"), DecidedAt: t0 + 12}, t0+13, 1))
	want(t, e.row(1001, "#BBBBB2"), "status", "NEW", "requested_price", "59990.00000000", "arrival_price", "59990.00000000",
		"executed_volume", "0.00000000", "fill_price", "NULL", "slippage_points", "NULL", "mt5_retcode", "10008")
	apply(e.msg(eqDeal(1001, 603, 801, "0.01", "59989.99", "#BBBBB2", t0+60_000), t0+60_010, 1),
		e.msg(order(11, "DELETE", 4), t0+60_010, 1))
	want(t, e.row(1001, "#BBBBB2"), "status", "FILLED", "fill_price", "59989.99000000", "slippage_points", "-1.0000",
		"slippage", "-0.0001", "latency_fill_ms", "60010")

	// Refusals: the trade server's (retcode, answered) and the dispatch window's (-1000: not
	// sent, no answer), then the second attempt of the latter fills.
	apply(e.msg(eqMarket(1001, "op-rej", "#BBBBB3", "BUY", "0.01", t0), t0+1, 1),
		e.msg(&events.ExecutionOutcome{OperationID: "op-rej", Login: 1001, Tag: "#BBBBB3", Attempt: 1, Status: "REJECTED",
			Code: -4010, Retcode: 10018, Msg: "Market closed.", DecidedAt: t0 + 9, SentAt: t0 + 4}, t0+10, 1))
	want(t, e.row(1001, "#BBBBB3"), "status", "REJECTED", "code", "-4010", "mt5_retcode", "10018", "answered_ms", fmt.Sprint(t0+9),
		"latency_answer_ms", "9", "executed_volume", "0.00000000", "slippage", "NULL")
	apply(e.msg(eqMarket(1001, "op-win", "#BBBBB4", "BUY", "0.01", t0), t0+1, 1),
		e.msg(&events.ExecutionOutcome{OperationID: "op-win", Login: 1001, Tag: "#BBBBB4", Attempt: 1, Status: "REJECTED",
			Code: -1000, Msg: "not dispatched", DecidedAt: t0 + 61_000}, t0+61_001, 1))
	want(t, e.row(1001, "#BBBBB4"), "status", "REJECTED", "code", "-1000", "mt5_retcode", "NULL", "sent_ms", "NULL",
		"answered_ms", "NULL", "decided_ms", fmt.Sprint(t0+61_000), "attempt", "1")
	retry := eqMarket(1001, "op-win", "#BBBBB4", "BUY", "0.01", t0+70_000)
	retry.Attempt = 2
	apply(e.msg(retry, t0+70_001, 1),
		e.msg(&events.ExecutionOutcome{OperationID: "op-win", Login: 1001, Tag: "#BBBBB4", Attempt: 2, Status: "FILLED",
			Retcode: 10009, Price: ptrDec("60015.00"), Volume: ptrDec("0.01"), DecidedAt: t0 + 70_020, SentAt: t0 + 70_010},
			t0+70_021, 1),
		e.msg(eqDeal(1001, 604, 802, "0.01", "60015.00", "#BBBBB4", t0+70_015), t0+70_030, 1))
	want(t, e.row(1001, "#BBBBB4"), "status", "FILLED", "code", "NULL", "attempt", "2", "received_ms", fmt.Sprint(t0+70_000),
		"sent_ms", fmt.Sprint(t0+70_010), "latency_answer_ms", "20", "latency_fill_ms", "30")

	// No in-band answer: the queued status and no answer time until the deal confirms it.
	apply(e.msg(eqMarket(1001, "op-una", "#BBBBB5", "BUY", "0.01", t0), t0+1, 1),
		e.msg(&events.ExecutionOutcome{OperationID: "op-una", Login: 1001, Tag: "#BBBBB5", Attempt: 1, Status: "ACCEPTED",
			Unanswered: true, DecidedAt: t0 + 5_000, SentAt: t0 + 3}, t0+5_001, 1))
	want(t, e.row(1001, "#BBBBB5"), "status", "ACCEPTED", "unanswered", "1", "answered_ms", "NULL", "mt5_retcode", "NULL",
		"decided", "1")

	// A cent account: two points on 0.5 lots is 0.01 USD, 1 USC.
	apply(e.msg(eqMarket(1004, "op-usc", "#BBBBB6", "BUY", "0.5", t0), t0+1, 1),
		e.msg(&events.ExecutionOutcome{OperationID: "op-usc", Login: 1004, Tag: "#BBBBB6", Attempt: 1, Status: "FILLED",
			Retcode: 10009, Price: ptrDec("60015.02"), Volume: ptrDec("0.5"), DecidedAt: t0 + 8, SentAt: t0 + 2}, t0+9, 1))
	want(t, e.row(1004, "#BBBBB6"), "currency", "USC", "slippage_points", "2.0000", "slippage", "1.0000")

	// A symbol whose profit currency is neither: points, but no money figure without a rate.
	jpy := &events.OrderRequested{Operation: eqHeader(1001, "op-jpy", "#BBBBB7", 1, t0), Symbol: "USDJPY", Side: "BUY",
		Type: "MARKET", Volume: dec.MustParse("1"), QuoteBid: ptrDec("150.000"), QuoteAsk: ptrDec("150.010")}
	apply(e.msg(jpy, t0+1, 1), e.msg(&events.ExecutionOutcome{OperationID: "op-jpy", Login: 1001, Tag: "#BBBBB7",
		Attempt: 1, Status: "FILLED", Retcode: 10009, Price: ptrDec("150.012"), Volume: ptrDec("1"), DecidedAt: t0 + 8},
		t0+9, 1))
	want(t, e.row(1001, "#BBBBB7"), "slippage_points", "2.0000", "slippage", "NULL", "currency", "USD")

	// An outcome that carries its command, read before the command's own record: the row is
	// recorded at once; the record gives the time it was queued.
	emb := eqMarket(1001, "op-emb", "#BBBBB8", "BUY", "0.01", t0)
	raw, err := json.Marshal(emb)
	if err != nil {
		t.Fatal(err)
	}
	apply(e.msg(&events.ExecutionOutcome{OperationID: "op-emb", Login: 1001, Tag: "#BBBBB8", Attempt: 1, Status: "FILLED",
		Retcode: 10009, Price: ptrDec("60015.00"), Volume: ptrDec("0.01"), DecidedAt: t0 + 8, SentAt: t0 + 3,
		CommandType: emb.EventType(), Command: raw}, t0+9, 1))
	want(t, e.row(1001, "#BBBBB8"), "recorded", "1", "kind", "PLACE_ORDER", "client_order_id", "c-op-emb", "queued_ms", "0",
		"status", "FILLED", "slippage_points", "0.0000", "latency_answer_ms", "8")
	apply(e.msg(emb, t0+1, 1))
	want(t, e.row(1001, "#BBBBB8"), "queued_ms", fmt.Sprint(t0+2), "version", "2")

	// A rebuild: empty the table, apply every message again in reverse order, one at a time.
	live := e.dump()
	if err := e.p.Reset(e.ctx); err != nil {
		t.Fatal(err)
	}
	for i := len(all) - 1; i >= 0; i-- {
		e.apply(all[i])
	}
	if rebuilt := e.dump(); rebuilt != live {
		t.Errorf("rebuilt rows differ from the live ones:\nlive    %s\nrebuilt %s", live, rebuilt)
	}
}

// dump is every row's columns but version and state (the order facts arrived in shows there),
// sorted by key.
func (e *eqEnv) dump() string {
	e.t.Helper()
	var cols []string
	for _, c := range execColumns {
		if c != "version" && c != "state" {
			cols = append(cols, "ifNull(toString("+c+"), 'NULL')")
		}
	}
	rows, err := e.ch.Query(e.ctx, "SELECT concat("+strings.Join(cols, ", '|', ")+") FROM execution_quality FINAL ORDER BY login, tag")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

// TestExecutionQualityTakesFromMemoryOnlyWhatTheStoreConfirms: the projection keeps the rows
// it wrote, but a row another writer moved on since (here a second instance, as after a
// partition moved away and back) is read from the store: the next fact merges into the
// store's newest version, not into the remembered one. Checked to fail with the store's
// version not consulted: the first instance wrote version 2 from its memory (the command and
// the deal, not the outcome: no mt5_retcode) beside the other's version 2, and FINAL kept it.
func TestExecutionQualityTakesFromMemoryOnlyWhatTheStoreConfirms(t *testing.T) {
	e := eqSetup(t)
	t0 := eqT0
	e.apply(e.msg(eqMarket(1001, "op-m", "#AAAAB1", "BUY", "0.01", t0), t0+3, 2))
	other, err := NewExecutionQuality(e.ch, e.pool, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	out := &events.ExecutionOutcome{OperationID: "op-m", Login: 1001, Tag: "#AAAAB1", Attempt: 1, Status: "FILLED",
		Retcode: 10009, OrderID: 403, DealID: 503, Position: 403, Price: ptrDec("60015.00"), Volume: ptrDec("0.01"),
		DecidedAt: t0 + 30, SentAt: t0 + 10}
	if err := other.Apply(e.ctx, []batch.Message{e.msg(out, t0+31, 1)}); err != nil {
		t.Fatal(err)
	}
	want(t, e.row(1001, "#AAAAB1"), "version", "2", "status", "FILLED", "deals", "0")
	e.apply(e.msg(eqDeal(1001, 503, 403, "0.01", "60015.00", "#AAAAB1", t0+40), t0+45, 1))
	want(t, e.row(1001, "#AAAAB1"), "version", "3", "status", "FILLED", "deals", "1", "deal_ids", "[503]",
		"mt5_retcode", "10009", "recorded", "1")
	if n := e.versions(1001, "#AAAAB1"); n != 3 {
		t.Errorf("%d versions stored, want 3", n)
	}
	// Its own row, confirmed by the store, is taken from memory: a redelivery writes nothing.
	e.apply(e.msg(eqDeal(1001, 503, 403, "0.01", "60015.00", "#AAAAB1", t0+40), t0+45, 1))
	if n := e.versions(1001, "#AAAAB1"); n != 3 {
		t.Errorf("%d versions stored after a redelivery, want 3", n)
	}
}

// TestExecutionQualityVersionsGoAheadOfTheirRows: each row's version is in
// execution_quality_versions, written before the row; a version there whose row never came
// (its insert failed after the version's) costs a read of the stored row, and the next fact
// merges into that row as the version after it.
func TestExecutionQualityVersionsGoAheadOfTheirRows(t *testing.T) {
	e := eqSetup(t)
	t0 := eqT0
	e.apply(e.msg(eqMarket(1001, "op-v", "#AAAAV1", "BUY", "0.01", t0), t0+3, 2),
		e.msg(eqMarket(1001, "op-w", "#AAAAW1", "SELL", "0.02", t0), t0+3, 2))
	b, err := e.ch.PrepareBatch(e.ctx, "INSERT INTO execution_quality_versions (login, tag, version)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(int64(1001), "#AAAAV1", uint64(2)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	out := &events.ExecutionOutcome{OperationID: "op-v", Login: 1001, Tag: "#AAAAV1", Attempt: 1, Status: "FILLED",
		Retcode: 10009, OrderID: 404, DealID: 504, Position: 404, Price: ptrDec("60015.00"), Volume: ptrDec("0.01"),
		DecidedAt: t0 + 30, SentAt: t0 + 10}
	e.apply(e.msg(out, t0+31, 1))
	want(t, e.row(1001, "#AAAAV1"), "version", "2", "status", "FILLED", "mt5_retcode", "10009", "recorded", "1",
		"side", "BUY", "requested_volume", "0.01000000")
	if n := e.versions(1001, "#AAAAV1"); n != 2 {
		t.Errorf("%d versions of the row stored, want 2", n)
	}
	rows, err := e.ch.Query(e.ctx, `SELECT v.login, v.tag, v.version, r.version FROM
		(SELECT login, tag, max(version) AS version FROM execution_quality_versions GROUP BY login, tag) AS v
		ALL FULL OUTER JOIN (SELECT login, tag, max(version) AS version FROM execution_quality GROUP BY login, tag) AS r
		USING login, tag ORDER BY tag`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var login int64
		var tag string
		var v, r uint64
		if err := rows.Scan(&login, &tag, &v, &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d/%s %d %d", login, tag, v, r))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if w := []string{"1001/#AAAAV1 2 2", "1001/#AAAAW1 1 1"}; !slices.Equal(got, w) {
		t.Errorf("versions and rows' newest versions %q, want %q", got, w)
	}
}

// The cache keeps two generations: a full current one becomes the previous, the one before
// is dropped, and a row read from the previous one is kept current.
func TestExecCacheKeepsTheKeysUsedLast(t *testing.T) {
	c := newExecCache(2)
	row := func(tag string, v uint64) execRow { return execRow{Login: 1, Tag: tag, Version: v} }
	c.put(row("a", 1))
	c.put(row("b", 1))
	c.put(row("c", 1)) // cur full: {a, b} becomes prev
	if r, ok := c.get(execKey{1, "a"}); !ok || r.Version != 1 {
		t.Fatalf("a from the previous generation: %v %v", r, ok)
	}
	// a was promoted into cur {c, a}; the next put turns {c, a} into prev and drops {a, b}.
	c.put(row("d", 1))
	if _, ok := c.get(execKey{1, "b"}); ok {
		t.Error("b, used before the last two generations, is still kept")
	}
	for _, tag := range []string{"a", "c", "d"} {
		if _, ok := c.get(execKey{1, tag}); !ok {
			t.Errorf("%s is not kept", tag)
		}
	}
	c.put(row("d", 2))
	if r, _ := c.get(execKey{1, "d"}); r.Version != 2 {
		t.Errorf("d version %d after a newer put, want 2", r.Version)
	}
	c.clear()
	if _, ok := c.get(execKey{1, "d"}); ok {
		t.Error("kept after clear")
	}
}
