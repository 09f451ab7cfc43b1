package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka"
	"tradesvc/infra/testenv"
	"tradesvc/query"
)

// trEnv is a live trading projection: isolated topics on the test broker, a fresh database,
// the projection consuming in its consumer group, and an appender to feed it.
type trEnv struct {
	t      *testing.T
	ctx    context.Context
	kcfg   kafka.Config
	pool   *pgxpool.Pool
	log    *kafka.Appender
	reader *TradingReader
	seq    atomic.Uint64
	proj   *Trading
}

const (
	trT0     = int64(1_800_000_000_000)
	trAPIKey = int64(77)
)

func trSetup(t *testing.T, opts ...func(*TradingConfig)) *trEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	e := &trEnv{t: t, ctx: ctx}
	e.kcfg = kafka.Config{Brokers: testenv.Brokers(t), TopicPrefix: testenv.TopicPrefix(t), ClientID: "trading-test"}
	topics := []events.Topic{events.TopicCommands(), events.TopicExecutions(), events.TopicTrades()}
	if err := kafka.EnsureTopics(ctx, e.kcfg, topics); err != nil {
		t.Fatal(err)
	}
	pub, err := kafka.NewPublisher(e.kcfg, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	if e.log, err = kafka.NewAppender(pub, "trading-test", time.Now); err != nil {
		t.Fatal(err)
	}
	e.pool = testenv.MigratedPG(t)
	seedDigits(t, e.pool)
	if e.reader, err = NewTradingReader(e.pool); err != nil {
		t.Fatal(err)
	}
	// A deal whose command never comes waits a second, not ten, for it (a subtest applies one).
	cfg := TradingConfig{Pool: e.pool, Logger: testenv.Logger(), OwnerWait: time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := NewTrading(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.proj = p
	testenv.Background(t, ctx, 30*time.Second, func(ctx context.Context) error {
		return Run(ctx, e.source(), TradingName, p)
	})
	return e
}

// seedDigits gives EURUSD 5 digits in rm.symbols (frames and averages are formatted with it).
func seedDigits(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO rm.symbols (symbol, spec, spec_time)
		VALUES ('EURUSD', '{"symbol":"EURUSD","digits":5}', 1)`); err != nil {
		t.Fatal(err)
	}
}

func (e *trEnv) source() Source {
	return Source{Brokers: e.kcfg.Brokers, TopicPrefix: e.kcfg.TopicPrefix, Sarama: e.kcfg.ConsumerConfig(),
		Logger: testenv.Logger()}
}

func (e *trEnv) append(topic events.Topic, evs ...events.Event) {
	e.t.Helper()
	if err := e.log.Append(e.ctx, topic, evs...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *trEnv) command(evs ...events.Event) {
	e.t.Helper()
	recordCommands(e.t, e.pool, evs...)
	e.append(events.TopicCommands(), evs...)
}
func (e *trEnv) outcome(evs ...events.Event) {
	e.t.Helper()
	e.append(events.TopicExecutions(), evs...)
}
func (e *trEnv) fact(evs ...events.Event) { e.t.Helper(); e.append(events.TopicTrades(), evs...) }

func (e *trEnv) nextSeq() uint64 { return e.seq.Add(1) }

// eventually polls check until it returns "" (or fails with its last answer after a minute).
func (e *trEnv) eventually(what string, check func() string) {
	e.t.Helper()
	eventually(e.t, what, 60*time.Second, check)
}

// eventually polls check until it returns "", or fails the test with its last answer once
// within has passed.
func eventually(t *testing.T, what string, within time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitOp waits until the operation reads with status and returns it.
func (e *trEnv) waitOp(id, status string) trading.Operation {
	e.t.Helper()
	var op trading.Operation
	e.eventually(id+" "+status, func() string {
		var ok bool
		var err error
		op, ok, err = e.reader.Operation(e.ctx, id)
		switch {
		case err != nil:
			return err.Error()
		case !ok:
			return "not projected"
		case string(op.Status) != status:
			return fmt.Sprintf("status %s (%+v)", op.Status, op)
		}
		return ""
	})
	return op
}

// change is a row of rm.changes as a test reads it.
type change struct {
	Kind          string
	OperationID   string
	APIKeyID      int64
	ClientOrderID string
	Event         map[string]any
}

func (e *trEnv) changes(login int64) []change {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT kind, coalesce(operation_id, ''), coalesce(api_key_id, 0),
		coalesce(client_order_id, ''), event FROM rm.changes WHERE login = $1 ORDER BY seq`, login)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []change
	for rows.Next() {
		var c change
		var raw []byte
		if err := rows.Scan(&c.Kind, &c.OperationID, &c.APIKeyID, &c.ClientOrderID, &raw); err != nil {
			e.t.Fatal(err)
		}
		d := json.NewDecoder(strings.NewReader(string(raw)))
		d.UseNumber()
		if err := d.Decode(&c.Event); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// kinds lists the kinds of changes, OPERATION rows left out unless withOps.
func kinds(cs []change, withOps bool) []string {
	var out []string
	for _, c := range cs {
		if c.Kind != query.ChangeOperation || withOps {
			out = append(out, c.Kind)
		}
	}
	return out
}

func hdr(login int64, op, tag string, attempt int) events.Operation {
	return events.Operation{OperationID: op, Login: login, ClientOrderID: "coid-" + op, Tag: tag, Attempt: attempt,
		Requester: events.Requester{APIKeyID: trAPIKey, ReceivedAt: trT0}}
}

func marketOrder(login int64, op, tag, vol string, attempt int) *events.OrderRequested {
	return &events.OrderRequested{Operation: hdr(login, op, tag, attempt), Symbol: "EURUSD", Side: "BUY", Type: "MARKET",
		Volume: dec.MustParse(vol), Comment: "hi"}
}

func limitOrder(login int64, op, tag string) *events.OrderRequested {
	price := dec.MustParse("1.05000")
	return &events.OrderRequested{Operation: hdr(login, op, tag, 1), Symbol: "EURUSD", Side: "BUY", Type: "BUY_LIMIT",
		Volume: dec.MustParse("1"), OrderPrices: events.OrderPrices{Price: &price, TimeInForce: "GTC"}, Comment: "hi"}
}

func outcomeOf(login int64, op, tag string, attempt int, status string) *events.ExecutionOutcome {
	return &events.ExecutionOutcome{OperationID: op, Login: login, Tag: tag, Attempt: attempt, Status: status,
		DecidedAt: trT0 + 500}
}

func (e *trEnv) deal(login, dealID, order int64, vol, price, comment string) *events.DealAdded {
	return &events.DealAdded{Fact: events.Fact{Seq: e.nextSeq(), Login: login}, DealID: dealID, OrderID: order, PositionID: order,
		Symbol: "EURUSD", Action: 0, Entry: 0, Volume: dec.MustParse(vol), Price: dec.MustParse(price),
		Profit: dec.MustParse("0"), Commission: dec.MustParse("-3.5"), Swap: dec.MustParse("0"), Comment: comment,
		Time: trT0 + 1000}
}

func (e *trEnv) orderFact(login int64, change string, order int64, typ, state int, comment string) *events.OrderChanged {
	z := dec.MustParse("0")
	return &events.OrderChanged{Fact: events.Fact{Seq: e.nextSeq(), Login: login}, Change: change, OrderID: order, Symbol: "EURUSD",
		Type: typ, State: state, VolumeInitial: dec.MustParse("1"), VolumeCurrent: dec.MustParse("1"),
		Price: dec.MustParse("1.05"), StopLimitPrice: z, SL: dec.MustParse("1.04"), TP: z, Comment: comment,
		TimeSetup: trT0, Time: trT0 + 2000}
}

func (e *trEnv) positionFact(login int64, change string, id int64, vol string) *events.PositionChanged {
	z := dec.MustParse("0")
	return &events.PositionChanged{Fact: events.Fact{Seq: e.nextSeq(), Login: login}, Change: change, PositionID: id, Symbol: "EURUSD",
		Direction: 0, Volume: dec.MustParse(vol), PriceOpen: dec.MustParse("1.1"), SL: z, TP: z,
		Profit: dec.MustParse("1.5"), Swap: z, Comment: "hi", TimeOpen: trT0 + 1000, Time: trT0 + 1000}
}

func execVol(op trading.Operation) string {
	if op.ExecutedVolume == nil {
		return "<nil>"
	}
	return dec.String(*op.ExecutedVolume)
}

// TestTradingProjectionDerivesEveryStateAndWritesTheChangeFeed runs the spec's state tables
// through the live projection (Kafka in, Postgres out), then rebuilds the read models from
// the same log in another database and compares them row for row.
func TestTradingProjectionDerivesEveryStateAndWritesTheChangeFeed(t *testing.T) {
	e := trSetup(t)

	t.Run("market ACCEPTED then FILLED from the outcome, DEAL then POSITION_UPDATE with C", func(t *testing.T) {
		const login = 5001
		e.command(marketOrder(login, "op-m1", "#M00001", "1", 1))
		e.waitOp("op-m1", "ACCEPTED")
		out := outcomeOf(login, "op-m1", "#M00001", 1, "FILLED")
		out.Retcode, out.OrderID, out.DealID, out.Position = 10009, 900, 901, 900
		out.Price, out.Volume = dp("1.10005"), dp("1")
		e.outcome(out)
		op := e.waitOp("op-m1", "FILLED")
		if op.OrderID != 900 || op.DealID != 901 || op.Retcode != 10009 || execVol(op) != "1" || op.Kind != trading.KindPlaceOrder ||
			op.ClientOrderID != "coid-op-m1" || op.APIKeyID != trAPIKey {
			t.Fatalf("filled op %+v", op)
		}
		// The deal, then the position once the deal is applied: appended together they may go in
		// one transaction, whose change rows put its facts before the operations they derive.
		e.fact(e.deal(login, 901, 900, "1", "1.10005", "hi#M00001"))
		e.eventually("the deal frame", func() string {
			if k := kinds(e.changes(login), false); !slices.Equal(k, []string{"DEAL"}) {
				return fmt.Sprint(k)
			}
			return ""
		})
		e.fact(e.positionFact(login, events.ChangeNew, 900, "1"))
		e.eventually("deal and position frames", func() string {
			if k := kinds(e.changes(login), false); !slices.Equal(k, []string{"DEAL", "POSITION_UPDATE"}) {
				return fmt.Sprint(k)
			}
			return ""
		})
		cs := e.changes(login)
		// OPERATION rows: the command seen (ACCEPTED), the answer (FILLED), and the deal
		// confirming the fill (RESULT waits end on it).
		if got := kinds(cs, true); !slices.Equal(got, []string{"OPERATION", "OPERATION", "DEAL", "OPERATION", "POSITION_UPDATE"}) {
			t.Fatalf("change kinds %v", got)
		}
		if cs[1].OperationID != "op-m1" || cs[1].Event["status"] != "FILLED" {
			t.Fatalf("OPERATION row %+v", cs[1])
		}
		// Only the confirmed fill answers a RESULT wait: the rows before it wake no one.
		for i, want := range map[int]bool{0: false, 1: false, 3: true} {
			if got := cs[i].Event["answered"]; got != want {
				t.Fatalf("OPERATION row %d (%v): answered=%v, want %v", i, cs[i].Event["status"], got, want)
			}
		}
		deal := cs[2]
		if deal.APIKeyID != trAPIKey || deal.ClientOrderID != "coid-op-m1" || deal.OperationID != "op-m1" {
			t.Fatalf("DEAL resolution %+v", deal)
		}
		wantFact(t, deal.Event, map[string]string{"login": "5001", "dealId": "901", "orderId": "900", "positionId": "900",
			"symbol": "EURUSD", "action": "0", "entry": "0", "volume": "1", "price": "1.10005", "commission": "-3.5",
			"comment": "hi#M00001", "time": "1800000001000"})
		pos := cs[4]
		wantFact(t, pos.Event, map[string]string{"login": "5001", "change": "NEW", "positionId": "900", "symbol": "EURUSD",
			"direction": "0", "volume": "1", "priceOpen": "1.1", "profit": "1.5", "comment": "hi", "timeOpen": "1800000001000"})
	})

	t.Run("PARTIALLY_FILLED then FILLED from two deals; a redelivered deal never counts twice", func(t *testing.T) {
		const login = 5002
		e.command(marketOrder(login, "op-p1", "#P00001", "1", 1))
		e.waitOp("op-p1", "ACCEPTED")
		first := e.deal(login, 911, 910, "0.4", "1.10001", "hi#P00001")
		e.fact(first)
		op := e.waitOp("op-p1", "PARTIALLY_FILLED")
		if execVol(op) != "0.4" || dec.String(*op.ExecPrice) != "1.10001" || op.DealID != 911 || op.OrderID != 910 {
			t.Fatalf("partial %+v", op)
		}
		e.fact(first) // redelivered: same deal, same seq
		e.fact(e.deal(login, 912, 910, "0.6", "1.10002", "hi#P00001"))
		op = e.waitOp("op-p1", "FILLED")
		if execVol(op) != "1.0" || dec.String(*op.ExecPrice) != "1.1000160" || op.DealID != 911 {
			t.Fatalf("filled %+v (price %s)", op, dec.String(*op.ExecPrice))
		}
		e.fact(first) // a redelivery after the fill moves nothing either
		e.fact(e.positionFact(login, events.ChangeNew, 910, "1"))
		e.eventually("position frame", func() string {
			if k := kinds(e.changes(login), false); !slices.Equal(k, []string{"DEAL", "DEAL", "POSITION_UPDATE"}) {
				return fmt.Sprint(k)
			}
			return ""
		})
		if op = e.waitOp("op-p1", "FILLED"); execVol(op) != "1.0" {
			t.Fatalf("after redelivery: executed %s", execVol(op))
		}
		var statuses []any
		for _, c := range e.changes(login) {
			if c.Kind == query.ChangeOperation {
				statuses = append(statuses, c.Event["status"])
			}
		}
		// The command itself (attempt 1 seen), then one row per fill: never one per redelivery.
		if fmt.Sprint(statuses) != "[ACCEPTED PARTIALLY_FILLED FILLED]" {
			t.Fatalf("OPERATION rows %v", statuses)
		}
	})

	t.Run("a deal before its command fills the operation the command creates", func(t *testing.T) {
		const login = 5003
		e.fact(e.deal(login, 921, 920, "1", "1.2", "hi#D00001"))
		e.eventually("the deal row", func() string {
			if k := kinds(e.changes(login), false); len(k) != 1 {
				return fmt.Sprint(k)
			}
			return ""
		})
		if c := e.changes(login)[0]; c.APIKeyID != 0 || c.ClientOrderID != "" {
			t.Fatalf("a deal whose operation is unknown carries no C resolution: %+v", c)
		}
		e.command(marketOrder(login, "op-d1", "#D00001", "1", 1))
		op := e.waitOp("op-d1", "FILLED")
		if execVol(op) != "1" || op.DealID != 921 {
			t.Fatalf("%+v", op)
		}
	})

	t.Run("an outcome before its command makes a skeleton the command completes", func(t *testing.T) {
		const login = 5004
		out := outcomeOf(login, "op-s1", "#S00001", 1, "REJECTED")
		out.Code, out.Retcode, out.Msg = -2018, 10019, "No money"
		e.outcome(out)
		op := e.waitOp("op-s1", "REJECTED")
		if op.Kind != "" || op.Code != -2018 {
			t.Fatalf("skeleton %+v", op)
		}
		e.command(marketOrder(login, "op-s1", "#S00001", "1", 1))
		e.eventually("the command completing the skeleton", func() string {
			op, _, _ := e.reader.Operation(e.ctx, "op-s1")
			if op.Kind != trading.KindPlaceOrder || op.Status != "REJECTED" || op.Code != -2018 || op.Retcode != 10019 ||
				op.Msg != "No money" || op.Symbol != "EURUSD" {
				return fmt.Sprintf("%+v", op)
			}
			return ""
		})
	})

	t.Run("IN_DOUBT then FILLED from a deal", func(t *testing.T) {
		const login = 5005
		e.command(marketOrder(login, "op-i1", "#I00001", "1", 1))
		out := outcomeOf(login, "op-i1", "#I00001", 1, "IN_DOUBT")
		out.Code = -5009
		e.outcome(out)
		if op := e.waitOp("op-i1", "IN_DOUBT"); op.Code != -5009 {
			t.Fatalf("%+v", op)
		}
		e.fact(e.deal(login, 931, 930, "1", "1.3", "hi#I00001"))
		if op := e.waitOp("op-i1", "FILLED"); op.Code != 0 || execVol(op) != "1" {
			t.Fatalf("%+v", op)
		}
	})

	t.Run("REJECTED -1000, then attempt 2, then FILLED", func(t *testing.T) {
		const login = 5006
		e.command(marketOrder(login, "op-r1", "#R00001", "1", 1))
		out := outcomeOf(login, "op-r1", "#R00001", 1, "REJECTED")
		out.Code = -1000
		e.outcome(out)
		if op := e.waitOp("op-r1", "REJECTED"); op.Code != -1000 || op.Retcode != 0 {
			t.Fatalf("%+v", op)
		}
		e.command(marketOrder(login, "op-r1", "#R00001", "1", 2))
		if op := e.waitOp("op-r1", "ACCEPTED"); op.Code != 0 || op.Attempt != 2 {
			t.Fatalf("attempt 2 queued %+v", op)
		}
		out2 := outcomeOf(login, "op-r1", "#R00001", 2, "FILLED")
		out2.Retcode, out2.OrderID, out2.DealID, out2.Price, out2.Volume = 10009, 940, 941, dp("1.4"), dp("1")
		e.outcome(out2)
		e.outcome(out) // the old attempt's outcome redelivered late changes nothing
		e.fact(e.deal(login, 941, 940, "1", "1.4", "hi#R00001"))
		e.eventually("FILLED with its deal", func() string {
			op, _, _ := e.reader.Operation(e.ctx, "op-r1")
			if op.Status != "FILLED" || op.Code != 0 || op.Retcode != 10009 || execVol(op) != "1" {
				return fmt.Sprintf("%+v", op)
			}
			return ""
		})
	})

	t.Run("pending NEW, then FILLED, CANCELED, EXPIRED, REJECTED from order facts", func(t *testing.T) {
		const login = 5007
		ends := []struct {
			op, tag string
			order   int64
			state   int
			status  string
		}{
			{"op-f1", "#F00001", 951, 4, "FILLED"}, {"op-c1", "#C00001", 952, 2, "CANCELED"},
			{"op-e1", "#E00001", 953, 6, "EXPIRED"}, {"op-j1", "#J00001", 954, 5, "REJECTED"},
		}
		for _, x := range ends {
			e.command(limitOrder(login, x.op, x.tag))
			e.waitOp(x.op, "NEW")
			out := outcomeOf(login, x.op, x.tag, 1, "NEW")
			out.Retcode, out.OrderID = 10008, x.order
			e.outcome(out)
			e.fact(e.orderFact(login, events.ChangeNew, x.order, 2, 1, "hi"+x.tag))
			e.eventually(x.op+" resting", func() string {
				o, ok, err := e.reader.Order(e.ctx, login, x.order)
				if err != nil || !ok || !o.Open || o.ClientOrderID != "coid-"+x.op || o.APIKeyID != trAPIKey {
					return fmt.Sprintf("%+v %v %v", o, ok, err)
				}
				return ""
			})
			if op := e.waitOp(x.op, "NEW"); op.OrderID != x.order {
				t.Fatalf("resting %+v", op)
			}
			done := e.orderFact(login, events.ChangeDelete, x.order, 2, x.state, "hi"+x.tag)
			done.TimeDone = trT0 + 3000
			if x.state == 4 { // a trigger: the order leaves the book, its deal and position follow
				done.VolumeCurrent = dec.MustParse("0")
				e.fact(done, e.deal(login, 1951, x.order, "1", "1.05", "hi"+x.tag), e.positionFact(login, events.ChangeNew, x.order, "1"))
			} else {
				e.fact(done)
			}
			e.waitOp(x.op, x.status)
		}
		cs := e.changes(login)
		var orders []change
		for _, c := range cs {
			if c.Kind == query.ChangeOrderUpdate {
				orders = append(orders, c)
			}
		}
		if len(orders) != 8 {
			t.Fatalf("ORDER_UPDATE rows: %d (%v)", len(orders), kinds(cs, true))
		}
		for _, o := range orders {
			if o.APIKeyID != trAPIKey || o.ClientOrderID == "" {
				t.Fatalf("ORDER_UPDATE without C resolution: %+v", o)
			}
		}
		wantFact(t, orders[0].Event, map[string]string{"login": "5007", "change": "NEW", "orderId": "951", "symbol": "EURUSD",
			"type": "2", "state": "1", "volumeInitial": "1", "price": "1.05", "sl": "1.04", "timeSetup": "1800000000000",
			"time": "1800000002000"})
		// The trigger: ORDER_UPDATE x=DELETE X=FILLED, then DEAL, then POSITION_UPDATE.
		var trigger []string
		for _, c := range cs {
			if c.Kind == query.ChangeOperation {
				continue
			}
			if len(trigger) > 0 || (c.Kind == query.ChangeOrderUpdate && c.Event["change"] == "DELETE" && fmt.Sprint(c.Event["state"]) == "4") {
				trigger = append(trigger, c.Kind)
			}
			if len(trigger) == 3 {
				break
			}
		}
		if !slices.Equal(trigger, []string{"ORDER_UPDATE", "DEAL", "POSITION_UPDATE"}) {
			t.Fatalf("trigger rows %v", trigger)
		}
		if open, err := e.reader.OpenOrders(e.ctx, login, ""); err != nil || len(open) != 0 {
			t.Fatalf("open orders after all left the book: %+v %v", open, err)
		}
	})

	t.Run("shortfall: a pending placement answered Unanswered stays NEW without orderId", func(t *testing.T) {
		const login = 5008
		e.command(limitOrder(login, "op-u1", "#U00001"))
		out := outcomeOf(login, "op-u1", "#U00001", 1, "NEW")
		out.Unanswered = true
		e.outcome(out)
		e.fact(e.orderFact(login, events.ChangeNew, 961, 2, 1, "hi#U00001"))
		e.eventually("the order row", func() string {
			if _, ok, _ := e.reader.Order(e.ctx, login, 961); !ok {
				return "no order 961"
			}
			op, _, _ := e.reader.Operation(e.ctx, "op-u1")
			if op.Attempt != 1 || op.Kind == "" {
				return "command not projected"
			}
			return ""
		})
		if op := e.waitOp("op-u1", "NEW"); op.OrderID != 0 || op.Code != 0 || op.Retcode != 0 {
			t.Fatalf("%+v", op)
		}
	})

	t.Run("market orders passing through the book write no ORDER_UPDATE; balance changes write ACCOUNT_UPDATE once", func(t *testing.T) {
		const login = 5009
		market := e.orderFact(login, events.ChangeDelete, 971, 0, 4, "hi")
		acct := &events.AccountChanged{Fact: events.Fact{Seq: e.nextSeq(), Login: login}, Change: events.ChangeUpdate,
			Balance: dec.MustParse("10100.5"), Credit: dec.MustParse("0"), Time: trT0 + 4000}
		balance := e.deal(login, 972, 0, "0", "0", "deposit")
		balance.Action, balance.Symbol = 2, ""
		e.fact(market, balance, acct)
		e.fact(acct)                                              // redelivered
		e.fact(e.positionFact(login, events.ChangeNew, 973, "1")) // a marker after the redelivery
		e.eventually("account and position frames", func() string {
			if k := kinds(e.changes(login), true); !slices.Equal(k, []string{"ACCOUNT_UPDATE", "POSITION_UPDATE"}) {
				return fmt.Sprint(k)
			}
			return ""
		})
		wantFact(t, e.changes(login)[0].Event, map[string]string{"login": "5009", "change": "UPDATE", "balance": "10100.5",
			"time": "1800000004000"})
	})

	t.Run("a replayed projection equals the live one row for row and writes no change rows", func(t *testing.T) {
		pool2 := testenv.MigratedPG(t)
		seedDigits(t, pool2)
		replaying, err := NewTrading(TradingConfig{Pool: pool2, Records: e.pool, Replaying: true, Logger: testenv.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		n, err := Replay(e.ctx, e.source(), TradingName, replaying)
		if err != nil || n == 0 {
			t.Fatalf("replay: %d events, %v", n, err)
		}
		// version counts the states the live projection happened to observe (it depends on
		// batching), so it is the one column left out.
		for _, table := range []struct{ name, cols, key string }{
			{"rm.operations", "to_jsonb(t) - 'version'", "operation_id"},
			{"rm.orders", "to_jsonb(t)", "order_id"},
			{"rm.positions", "to_jsonb(t)", "position_id"},
			{"rm.deals", "to_jsonb(t)", "deal_id"},
			{"rm.account_balances", "to_jsonb(t)", "login"},
		} {
			live, replayed := dump(t, e.pool, table.name, table.cols, table.key), dump(t, pool2, table.name, table.cols, table.key)
			if len(live) == 0 {
				t.Fatalf("%s is empty", table.name)
			}
			if !slices.Equal(live, replayed) {
				t.Fatalf("%s differs after replay:\nlive     %v\nreplayed %v", table.name, live, replayed)
			}
		}
		var rows int
		if err := pool2.QueryRow(e.ctx, `SELECT count(*) FROM rm.changes`).Scan(&rows); err != nil || rows != 0 {
			t.Fatalf("replay wrote %d change rows (%v)", rows, err)
		}
		// Reset empties the rebuilt tables but keeps the feed (its seq must keep growing).
		if err := replaying.Reset(e.ctx); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, pool2, "rm.operations", "to_jsonb(t)", "operation_id"); len(got) != 0 {
			t.Fatalf("after reset: %v", got)
		}
	})
}

func dump(t *testing.T, pool *pgxpool.Pool, table, cols, key string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT (`+cols+`)::text FROM `+table+` t ORDER BY `+key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// wantFact checks the fields of a change row's fact (decoded with UseNumber): the row holds
// the fact as the log carried it; the user streams render it (gateway/streams).
func wantFact(t *testing.T, got map[string]any, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if fmt.Sprint(got[k]) != v {
			t.Errorf("fact: %s = %v, want %s (%v)", k, got[k], v, got)
		}
	}
}

func dp(s string) *apd.Decimal {
	d := dec.MustParse(s)
	return &d
}
