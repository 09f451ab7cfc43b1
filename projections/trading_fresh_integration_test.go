package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
	"tradesvc/query"
)

// freshProjection is a trading projection on a database of its own, applied to directly,
// counting its fresh batches.
type freshProjection struct {
	pool            *pgxpool.Pool
	p               *Trading
	applied, fenced atomic.Int64
}

// freshBatches returns how many batches it applied fresh, and how many it found not fresh.
func (f *freshProjection) freshBatches() (applied, fenced int64) {
	return f.applied.Load(), f.fenced.Load()
}

func newFreshProjection(t *testing.T, pool *pgxpool.Pool) *freshProjection {
	t.Helper()
	if pool == nil {
		pool = testenv.MigratedPG(t)
		seedDigits(t, pool)
	}
	f := &freshProjection{pool: pool}
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandGrace: -1, Fresh: func(fenced bool) {
		if fenced {
			f.fenced.Add(1)
		} else {
			f.applied.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	f.p = p
	return f
}

func (f *freshProjection) apply(t *testing.T, msgs ...batch.Message) error {
	t.Helper()
	recordMessages(t, f.pool, msgs)
	return f.p.Apply(context.Background(), msgs)
}

// resultOutcome is a RESULT market order's outcome as the executor appends it: the command in
// band, and the facts its send caused (the deal, the order placed then filled, the position,
// the balance), with feed sequences from seq on.
func resultOutcome(t *testing.T, login int64, op, tag string, order int64, seq uint64) *events.ExecutionOutcome {
	t.Helper()
	cmd := marketOrder(login, op, tag, "0.3", 1)
	raw, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out := outcomeOf(login, op, tag, 1, "FILLED")
	out.Retcode, out.OrderID, out.DealID, out.Position = 10009, order, order+1, order
	out.Price, out.Volume = dp("1.10003"), dp("0.3")
	out.CommandType, out.Command = cmd.EventType(), raw
	z := dec.MustParse("0")
	// Filled by two deals at two prices: the average is rounded to the symbol's digits.
	deal := events.DealAdded{Fact: events.Fact{Seq: seq, Login: login}, DealID: order + 1, OrderID: order, PositionID: order,
		Symbol: "EURUSD", Action: 0, Entry: 0, Volume: dec.MustParse("0.1"), Price: dec.MustParse("1.10003"), Profit: z,
		Commission: dec.MustParse("-0.35"), Swap: z, Comment: "hi" + tag, Time: trT0 + 1000}
	deal2 := deal
	deal2.Seq, deal2.DealID, deal2.Volume, deal2.Price, deal2.Time = seq+5, order+2, dec.MustParse("0.2"), dec.MustParse("1.10006"), trT0+1200
	placed := events.OrderChanged{Fact: events.Fact{Seq: seq + 1, Login: login}, Change: events.ChangeNew, OrderID: order,
		Symbol: "EURUSD", Type: 0, State: 1, VolumeInitial: dec.MustParse("0.3"), VolumeCurrent: dec.MustParse("0.3"),
		Price: z, StopLimitPrice: z, SL: z, TP: z, Comment: "hi" + tag, TimeSetup: trT0 + 1000, Time: trT0 + 1000}
	filled := placed
	filled.Seq, filled.Change, filled.State, filled.VolumeCurrent, filled.TimeDone, filled.Time = seq+2, events.ChangeDelete, 4, z,
		trT0+1300, trT0+1300
	position := events.PositionChanged{Fact: events.Fact{Seq: seq + 3, Login: login}, Change: events.ChangeNew, PositionID: order,
		Symbol: "EURUSD", Direction: 0, Volume: dec.MustParse("0.3"), PriceOpen: dec.MustParse("1.10003"), SL: z, TP: z,
		Profit: z, Swap: z, Comment: "hi" + tag, TimeOpen: trT0 + 1000, Time: trT0 + 1000}
	account := events.AccountChanged{Fact: events.Fact{Seq: seq + 4, Login: login}, Change: events.ChangeUpdate,
		Balance: dec.MustParse("9998.95"), Credit: z, Time: trT0 + 1000}
	out.Facts = &events.ExecutionFacts{Deals: []events.DealAdded{deal, deal2}, Orders: []events.OrderChanged{placed, filled},
		Positions: []events.PositionChanged{position}, Accounts: []events.AccountChanged{account}}
	return out
}

// limitOutcome is a BUY_LIMIT placement's outcome, its command and its order placed in band.
func limitOutcome(t *testing.T, login int64, op, tag string, order int64, seq uint64) *events.ExecutionOutcome {
	t.Helper()
	cmd := limitOrder(login, op, tag)
	raw, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out := outcomeOf(login, op, tag, 1, "NEW")
	out.Retcode, out.OrderID, out.Price, out.Volume = 10008, order, dp("1.05000"), dp("1")
	out.CommandType, out.Command = cmd.EventType(), raw
	placed := *(&trEnv{}).orderFact(login, events.ChangeNew, order, 2, 1, "hi"+tag)
	placed.Seq, placed.Time = seq, trT0+1700
	out.Facts = &events.ExecutionFacts{Orders: []events.OrderChanged{placed}}
	return out
}

func outcomeMessage(out *events.ExecutionOutcome) batch.Message {
	return batch.Message{Envelope: events.Envelope{Type: out.EventType()}, Event: out}
}

// readModelRows returns login's rows of every trading read model and its change rows (in
// feed order, without their numbers and times), as JSON, for comparing two databases.
func readModelRows(t *testing.T, pool *pgxpool.Pool, login int64) map[string][]string {
	t.Helper()
	queries := map[string]string{
		"operations": `SELECT to_jsonb(x)::text FROM rm.operations x WHERE login = $1 ORDER BY operation_id`,
		"deals":      `SELECT to_jsonb(x)::text FROM rm.deals x WHERE login = $1 ORDER BY deal_id`,
		"orders":     `SELECT to_jsonb(x)::text FROM rm.orders x WHERE login = $1 ORDER BY order_id`,
		"positions":  `SELECT to_jsonb(x)::text FROM rm.positions x WHERE login = $1 ORDER BY position_id`,
		"balances":   `SELECT to_jsonb(x)::text FROM rm.account_balances x WHERE login = $1`,
		"changes": `SELECT concat_ws(' ', kind, operation_id, api_key_id, client_order_id, event::text) FROM rm.changes
			WHERE login = $1 ORDER BY seq`,
	}
	out := map[string][]string{}
	for name, sql := range queries {
		rows, err := pool.Query(context.Background(), sql, login)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out[name] = append(out[name], s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// countOperationUpdates counts every row update of rm.operations in pool's database from now
// on (a trigger), and returns how to read the count.
func countOperationUpdates(t *testing.T, pool *pgxpool.Pool) func() int {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE TABLE public.operation_updates (operation_id text)`,
		`CREATE FUNCTION public.count_operation_update() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN INSERT INTO public.operation_updates VALUES (NEW.operation_id); RETURN NEW; END $$`,
		`CREATE TRIGGER count_operation_update AFTER UPDATE ON rm.operations
			FOR EACH ROW EXECUTE FUNCTION public.count_operation_update()`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	return func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM public.operation_updates`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

func sameRows(t *testing.T, got, want map[string][]string) {
	t.Helper()
	for name, w := range want {
		if fmt.Sprint(got[name]) != fmt.Sprint(w) {
			t.Errorf("%s:\n got %v\nwant %v", name, got[name], w)
		}
	}
	if len(want["operations"]) == 0 || len(want["changes"]) == 0 {
		t.Fatalf("nothing to compare: %v", want)
	}
}

// A RESULT's outcome with its command and facts in band is a fresh batch: it commits in one
// pipeline and leaves the read models and the change feed exactly as the two-pipeline path,
// which reads the stored rows back, leaves them.
func TestTradingProjectionAppliesAFreshBatchInOnePipelineAsTheLongWayDoes(t *testing.T) {
	fresh, long := newFreshProjection(t, nil), newFreshProjection(t, nil)
	// The fresh projection learns the symbol's digits from a first order (the long way: the
	// digits are read in its transaction).
	if err := fresh.apply(t, outcomeMessage(resultOutcome(t, 7001, "op-warm", "#WARM01", 500, 1))); err != nil {
		t.Fatal(err)
	}
	if applied, fenced := fresh.freshBatches(); applied != 0 || fenced != 0 {
		t.Fatalf("a batch of an unknown symbol went fresh: %d applied, %d fenced", applied, fenced)
	}
	updates := countOperationUpdates(t, fresh.pool)
	out := resultOutcome(t, 7002, "op-fresh", "#FRESH1", 600, 10)
	limit := limitOutcome(t, 7002, "op-limit", "#FRESH2", 650, 20)
	if err := fresh.apply(t, outcomeMessage(out), outcomeMessage(limit)); err != nil {
		t.Fatal(err)
	}
	if applied, fenced := fresh.freshBatches(); applied != 1 || fenced != 0 {
		t.Fatalf("the RESULT's outcome: %d fresh batches applied, %d fenced; want 1, 0", applied, fenced)
	}
	// Each operation's row is written once, by its insert: the derived columns and the folded
	// outcome go in with the command's.
	if n := updates(); n != 0 {
		t.Fatalf("the fresh batch updated %d operation rows after inserting them; want 0", n)
	}
	if err := long.apply(t, outcomeMessage(resultOutcome(t, 7002, "op-fresh", "#FRESH1", 600, 10)),
		outcomeMessage(limitOutcome(t, 7002, "op-limit", "#FRESH2", 650, 20))); err != nil {
		t.Fatal(err)
	}
	if applied, _ := long.freshBatches(); applied != 0 {
		t.Fatal("the reference projection did not take the long way")
	}
	got, want := readModelRows(t, fresh.pool, 7002), readModelRows(t, long.pool, 7002)
	sameRows(t, got, want)
	op, ok, err := mustReader(t, fresh.pool).Operation(context.Background(), "op-fresh")
	if err != nil || !ok || op.Status != "FILLED" || op.DealID != 601 || execVol(op) != "0.3" || !op.Answered() ||
		op.ExecPrice == nil || dec.String(*op.ExecPrice) != "1.1000500" || op.UpdatedAt != trT0+1300 {
		t.Fatalf("the fresh operation: %+v (%v, %v)", op, ok, err)
	}
	if op, ok, err := mustReader(t, fresh.pool).Operation(context.Background(), "op-limit"); err != nil || !ok ||
		op.Status != "NEW" || op.OrderID != 650 || op.UpdatedAt != trT0+1700 {
		t.Fatalf("the fresh placement: %+v (%v, %v)", op, ok, err)
	}

	// The relay's copies of those facts change nothing and add no change row.
	var copies []batch.Message
	for _, f := range out.Facts.Events() {
		copies = append(copies, batch.Message{Envelope: events.Envelope{Type: f.EventType()}, Event: f})
	}
	if err := fresh.apply(t, copies...); err != nil {
		t.Fatal(err)
	}
	sameRows(t, readModelRows(t, fresh.pool, 7002), want)
}

// A batch planned as fresh whose rows are stored already (applied by another process first:
// the relay's copy of its deal, the command topic's copy of its command, the relay's copy of
// its order) is rolled back by what checks them in its pipeline (the fence, or the plain insert
// of its operation) and takes the long way: the operation is FILLED as ever, and each of its
// two deals (and a pending order's state) has one change row, from whoever applied it first.
// A fresh batch of one operation writes its rows with the one-row statements (postgres.OneRow), and
// the newest of a key's facts with the plain upsert (queueFresh): the RESULT's order below has
// two facts (placed, then filled), its position and balance one each, its deals two.
func TestTradingProjectionAppliesAFreshBatchOfOneOperationAsTheLongWayDoes(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  func() *events.ExecutionOutcome
	}{
		{"market", func() *events.ExecutionOutcome { return resultOutcome(t, 7003, "op-one", "#ONE001", 700, 10) }},
		{"limit", func() *events.ExecutionOutcome { return limitOutcome(t, 7003, "op-one", "#ONE001", 700, 10) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fresh, long := newFreshProjection(t, nil), newFreshProjection(t, nil)
			if err := fresh.apply(t, outcomeMessage(resultOutcome(t, 7001, "op-warm", "#WARM01", 500, 1))); err != nil {
				t.Fatal(err) // the symbol's digits learnt: the next batch can be fresh
			}
			if err := fresh.apply(t, outcomeMessage(tc.out())); err != nil {
				t.Fatal(err)
			}
			if applied, fenced := fresh.freshBatches(); applied != 1 || fenced != 0 {
				t.Fatalf("%d fresh batches applied, %d fenced; want 1, 0", applied, fenced)
			}
			if err := long.apply(t, outcomeMessage(tc.out())); err != nil {
				t.Fatal(err)
			}
			if applied, _ := long.freshBatches(); applied != 0 {
				t.Fatal("the reference projection did not take the long way")
			}
			want := readModelRows(t, long.pool, 7003)
			sameRows(t, readModelRows(t, fresh.pool, 7003), want)
			if len(want["orders"]) != 1 {
				t.Fatalf("orders %v, want the one order", want["orders"])
			}
		})
	}
}

func TestTradingProjectionFreshBatchWhoseRowsAreStoredTakesTheLongWay(t *testing.T) {
	fresh := newFreshProjection(t, nil)
	other := newFreshProjection(t, fresh.pool)
	if err := fresh.apply(t, outcomeMessage(resultOutcome(t, 7101, "op-warm", "#WARM02", 700, 1))); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		stored func(out *events.ExecutionOutcome) events.Event
	}{
		{"the relay's copy of its deal", func(out *events.ExecutionOutcome) events.Event { return &out.Facts.Deals[0] }},
		{"its command", func(out *events.ExecutionOutcome) events.Event {
			cmd, err := events.Decode(events.Envelope{Type: out.CommandType, Payload: out.Command})
			if err != nil {
				t.Fatal(err)
			}
			return cmd
		}},
	}
	for i, c := range cases {
		login, order := int64(7110+i), int64(800+100*i)
		op := fmt.Sprintf("op-stale-%d", i)
		out := resultOutcome(t, login, op, fmt.Sprintf("#STAL%02d", i), order, uint64(10+10*i)) // feed sequences are unique
		ev := c.stored(out)
		if err := other.apply(t, batch.Message{Envelope: events.Envelope{Type: ev.EventType()}, Event: ev}); err != nil {
			t.Fatal(err)
		}
		if err := fresh.apply(t, outcomeMessage(out)); err != nil {
			t.Fatal(err)
		}
		if applied, fenced := fresh.freshBatches(); applied != 0 || fenced != int64(i+1) {
			t.Fatalf("%s stored: %d fresh batches applied, %d fenced; want 0, %d", c.name, applied, fenced, i+1)
		}
		got, ok, err := mustReader(t, fresh.pool).Operation(context.Background(), op)
		if err != nil || !ok || got.Status != "FILLED" || got.DealID != order+1 || execVol(got) != "0.3" ||
			got.UpdatedAt != trT0+1300 {
			t.Fatalf("%s stored: the operation %+v (%v, %v)", c.name, got, ok, err)
		}
		deals := 0
		for _, row := range readModelRows(t, fresh.pool, login)["changes"] {
			if strings.HasPrefix(row, query.ChangeDeal+" ") {
				deals++
			}
		}
		if deals != 2 {
			t.Fatalf("%s stored: %d DEAL change rows, want 2 (one per deal)", c.name, deals)
		}
	}

	// A pending placement whose order the relay's copy stored first: one ORDER_UPDATE frame.
	limit := limitOutcome(t, 7120, "op-stale-limit", "#STALLM", 990, 90)
	placed := &limit.Facts.Orders[0]
	if err := other.apply(t, batch.Message{Envelope: events.Envelope{Type: placed.EventType()}, Event: placed}); err != nil {
		t.Fatal(err)
	}
	if err := fresh.apply(t, outcomeMessage(limit)); err != nil {
		t.Fatal(err)
	}
	if applied, fenced := fresh.freshBatches(); applied != 0 || fenced != int64(len(cases)+1) {
		t.Fatalf("its order stored: %d fresh batches applied, %d fenced; want 0, %d", applied, fenced, len(cases)+1)
	}
	if got, ok, err := mustReader(t, fresh.pool).Operation(context.Background(), "op-stale-limit"); err != nil || !ok ||
		got.Status != "NEW" || got.OrderID != 990 {
		t.Fatalf("its order stored: the placement %+v (%v, %v)", got, ok, err)
	}
	var updates []string
	for _, row := range readModelRows(t, fresh.pool, 7120)["changes"] {
		if strings.HasPrefix(row, query.ChangeOrderUpdate+" ") {
			updates = append(updates, row)
		}
	}
	if len(updates) != 1 {
		t.Fatalf("its order stored: ORDER_UPDATE rows %v, want the one of its first application", updates)
	}
}

// A fresh batch commits in the pipeline that checks its positions: when another writer moved
// a stored position meanwhile, the statement itself fails the transaction, nothing of the
// batch is written, and the consumer resumes from the store.
func TestTradingProjectionFreshBatchChecksItsPositionsBeforeItCommits(t *testing.T) {
	f := newFreshProjection(t, nil)
	at := func(out *events.ExecutionOutcome, offset int64) batch.Message {
		m := outcomeMessage(out)
		m.Topic, m.Partition, m.Offset = "executions", 3, offset
		return m
	}
	if err := f.apply(t, at(resultOutcome(t, 7201, "op-first", "#FIRST1", 900, 1), 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(context.Background(), `UPDATE rm.projection_offsets SET next_offset = 7
		WHERE projection = $1 AND topic = 'executions' AND partition = 3`, TradingName); err != nil {
		t.Fatal(err)
	}
	err := f.apply(t, at(resultOutcome(t, 7202, "op-moved", "#MOVED1", 950, 10), 1))
	if !errors.Is(err, errPositionsMoved) || !errors.Is(err, batch.ErrResume) {
		t.Fatalf("a fresh batch behind a moved position: %v, want errPositionsMoved and batch.ErrResume", err)
	}
	if _, ok, err := mustReader(t, f.pool).Operation(context.Background(), "op-moved"); err != nil || ok {
		t.Fatalf("the rolled-back batch's operation is stored (%v, %v)", ok, err)
	}
	if applied, fenced := f.freshBatches(); applied != 0 || fenced != 0 {
		t.Fatalf("%d fresh batches applied, %d fenced; want none", applied, fenced)
	}
}

func mustReader(t *testing.T, pool *pgxpool.Pool) *TradingReader {
	t.Helper()
	r, err := NewTradingReader(pool)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
