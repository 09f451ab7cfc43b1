package executor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/kafkatest"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"
)

// exEnv is one executor's world: a simulator, isolated command and execution topics, a
// fresh database with cmd.executions, and the clock both the command appender and the
// executor read (so a test decides how old a command is).
type exEnv struct {
	t       *testing.T
	ctx     context.Context
	sim     *sim.Sim
	clock   *testenv.Clock
	kcfg    kafka.Config
	brokers []string
	pub     *kafka.Publisher
	cmds    *kafka.Appender // what the gateway's command handlers would append
	pool    *pgxpool.Pool
	execs   *kafkatest.Reader
	cfg     executor.ExecutorConfig
	n       int

	mu       sync.Mutex
	reported []string // "kind status" of every OnOutcome call
}

func exSetup(t *testing.T) *exEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	e := &exEnv{t: t, ctx: ctx, brokers: testenv.Brokers(t), clock: testenv.NewClock(tuesdayNoon)}
	e.kcfg = kafka.Config{Brokers: e.brokers, TopicPrefix: testenv.TopicPrefix(t), ClientID: "executor-test"}
	if err := kafka.EnsureTopics(ctx, e.kcfg, []events.Topic{events.TopicCommands(), events.TopicExecutions()}); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.pub, err = kafka.NewPublisher(e.kcfg, testenv.Logger()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.pub.Close() })
	if e.cmds, err = kafka.NewAppender(e.pub, "gateway-test", e.clock.Now); err != nil {
		t.Fatal(err)
	}
	out, err := kafka.NewAppender(e.pub, "executor-test", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	e.pool = testenv.MigratedPG(t)
	s, err := sim.Open(sim.Config{DataDir: t.TempDir(), Clock: testenv.NewClock(tuesdayNoon), RNGSeed: 5,
		Sync: sim.SyncNone, Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e.sim = s
	e.execs = kafkatest.Follow(t, ctx, e.brokers, e.kcfg, events.TopicExecutions())
	e.cfg = executor.ExecutorConfig{Brokers: e.brokers, Group: e.kcfg.Topic(executor.ExecutorGroup),
		Topic: e.kcfg.Topic(events.TopicCommands().Name), Sarama: e.kcfg.ConsumerConfig(), Port: s, Out: out,
		Pool: e.pool, Now: e.clock.Now, Logger: testenv.Logger(),
		OnOutcome: func(kind, status string, took time.Duration) {
			e.mu.Lock()
			e.reported = append(e.reported, kind+" "+status)
			e.mu.Unlock()
		}}
	return e
}

// start runs a new executor over the environment's topics, database and simulator; stop
// cancels it and waits until Run has returned (nil).
func (e *exEnv) start() (stop func()) {
	e.t.Helper()
	x, err := executor.NewExecutor(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return testenv.Background(e.t, e.ctx, 15*time.Second, x.Run)
}

// op returns a fresh operation header of login: unique id and tag, attempt 1.
func (e *exEnv) op(login int64) events.Operation {
	e.n++
	return events.Operation{OperationID: fmt.Sprintf("op-%d", e.n), Login: login, ClientOrderID: fmt.Sprintf("coid-%d", e.n),
		Tag: fmt.Sprintf("#tg%04d", e.n), Attempt: 1,
		Requester: events.Requester{APIKeyID: 1, Method: "POST", Path: "/v1/order", ReceivedAt: e.clock.Now().UnixMilli()}}
}

// appendCmds appends commands as the gateway does, in one batch.
func (e *exEnv) appendCmds(evs ...events.Event) {
	e.t.Helper()
	if err := e.cmds.Append(e.ctx, events.TopicCommands(), evs...); err != nil {
		e.t.Fatal(err)
	}
}

// outcome waits for the outcome of (operation, attempt) on the executions topic.
func (e *exEnv) outcome(op events.Operation) *events.ExecutionOutcome {
	e.t.Helper()
	recs := e.execs.WaitFor(60*time.Second, "outcome of "+op.OperationID, func(r []kafkatest.Record) bool {
		return len(outcomesOf(r, op)) > 0
	})
	return outcomesOf(recs, op)[0]
}

func outcomesOf(recs []kafkatest.Record, op events.Operation) []*events.ExecutionOutcome {
	var out []*events.ExecutionOutcome
	for _, r := range recs {
		if o, ok := r.Event.(*events.ExecutionOutcome); ok && o.OperationID == op.OperationID && o.Attempt == op.Attempt {
			out = append(out, o)
		}
	}
	return out
}

// sentsOf are the outcomes of op that say it was sent.
func sentsOf(recs []kafkatest.Record, op events.Operation) []*events.ExecutionOutcome {
	var out []*events.ExecutionOutcome
	for _, r := range recs {
		if s, ok := r.Event.(*events.ExecutionOutcome); ok && s.OperationID == op.OperationID && s.Attempt == op.Attempt && s.SentAt != 0 {
			out = append(out, s)
		}
	}
	return out
}

// settle appends a harmless command of login (a cancel of an order that does not exist)
// and waits for its outcome. One login's commands are executed and their outcomes appended
// in order, so once it is there every earlier command of login has had all its outcomes.
func (e *exEnv) settle(login int64) {
	e.t.Helper()
	op := e.op(login)
	e.appendCmds(&events.OrderCancelRequested{Operation: op, OrderID: 999_999_999})
	e.outcome(op)
}

// row is login's cmd.executions row of (operation, attempt): whether it exists and its
// outcome's status ("" while undecided).
func (e *exEnv) row(op events.Operation) (exists bool, status string) {
	e.t.Helper()
	var st *string
	err := e.pool.QueryRow(e.ctx, `SELECT outcome->>'status' FROM cmd.executions WHERE operation_id = $1 AND attempt = $2`,
		op.OperationID, op.Attempt).Scan(&st)
	if err != nil {
		return false, ""
	}
	if st == nil {
		return true, ""
	}
	return true, *st
}

// waitRow waits until the outcome of op is stored in cmd.executions (it is stored right
// after it is appended) and returns its status.
func (e *exEnv) waitRow(op events.Operation) string {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ok, st := e.row(op); ok && st != "" {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("outcome of %s not stored in cmd.executions", op.OperationID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *exEnv) positions(login int64) []mt5.Position {
	e.t.Helper()
	ps, err := e.sim.Positions(e.ctx, login)
	if err != nil {
		e.t.Fatal(err)
	}
	return ps
}

func (e *exEnv) openOrders(login int64) []mt5.Order {
	e.t.Helper()
	os, err := e.sim.OpenOrders(e.ctx, login)
	if err != nil {
		e.t.Fatal(err)
	}
	return os
}

func (e *exEnv) dealsByTag(login int64, tag string) []mt5.Deal {
	e.t.Helper()
	ds, err := e.sim.DealsByTag(e.ctx, login, tag)
	if err != nil {
		e.t.Fatal(err)
	}
	return ds
}

func (e *exEnv) fault(f sim.Fault) {
	e.t.Helper()
	if err := e.sim.SetFault(f); err != nil {
		e.t.Fatal(err)
	}
}

func (e *exEnv) ask(symbol string) apd.Decimal {
	e.t.Helper()
	q, err := e.sim.Quote(e.ctx, symbol)
	if err != nil {
		e.t.Fatal(err)
	}
	return q.Ask
}

func (e *exEnv) reports() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.reported...)
}

func decPtr(s string) *apd.Decimal { d := dec.MustParse(s); return &d }

func marketCmd(op events.Operation, symbol, side, volume string) *events.OrderRequested {
	return &events.OrderRequested{Operation: op, Symbol: symbol, Side: side, Type: "MARKET", Volume: dec.MustParse(volume),
		Comment: "it"}
}

func limitCmd(op events.Operation, symbol, volume, price string) *events.OrderRequested {
	return &events.OrderRequested{Operation: op, Symbol: symbol, Side: "BUY", Type: "BUY_LIMIT",
		Volume: dec.MustParse(volume), OrderPrices: events.OrderPrices{Price: decPtr(price), TimeInForce: "GTC"}}
}

// checkOutcome asserts the fields every outcome must have right.
func checkOutcome(t *testing.T, got *events.ExecutionOutcome, op events.Operation, status trading.Status, code, retcode int) {
	t.Helper()
	if got.Login != op.Login || got.Tag != op.Tag || got.Attempt != op.Attempt || got.DecidedAt == 0 {
		t.Errorf("outcome %+v does not name operation %+v", got, op)
	}
	if got.Status != string(status) || got.Code != code || got.Retcode != retcode {
		t.Errorf("outcome of %s: status %s code %d retcode %d (%q), want %s %d %d", op.OperationID, got.Status, got.Code,
			got.Retcode, got.Msg, status, code, retcode)
	}
	if got.Msg == "" {
		t.Errorf("outcome of %s has no message", op.OperationID)
	}
}

// tuesdayNoon is Tuesday 2026-11-17 12:00 server time (UTC+3): every seed session is open.
// The simulator runs on a clock fixed there, because the seed's forex sessions are closed at
// weekends and the test must not depend on the wall clock.
var tuesdayNoon = time.Date(2026, 11, 17, 9, 0, 0, 0, time.UTC)

func decEq(t *testing.T, what string, got, want apd.Decimal) {
	t.Helper()
	if got.Cmp(&want) != 0 {
		t.Errorf("%s = %s, want %s", what, dec.String(got), dec.String(want))
	}
}
