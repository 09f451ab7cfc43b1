package relay_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/kafkatest"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/relay"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"
)

// riTuesdayNoon is Tuesday 2026-11-17 12:00 server time (UTC+3): every seed session is open.
// The simulator runs on a clock fixed there, because the seed's forex sessions are closed at
// weekends and the test must not depend on the wall clock.
var riTuesdayNoon = time.Date(2026, 11, 17, 9, 0, 0, 0, time.UTC)

// riFactSeqs returns the Seq of every trade fact read, and how many times each came.
func riFactSeqs(recs []kafkatest.Record) map[uint64]int {
	out := map[uint64]int{}
	for _, r := range recs {
		if s, ok := riSeq(r.Event); ok {
			out[s]++
		}
	}
	return out
}

func riSeq(e events.Event) (uint64, bool) {
	switch e := e.(type) {
	case *events.DealAdded:
		return e.Seq, true
	case *events.OrderChanged:
		return e.Seq, true
	case *events.PositionChanged:
		return e.Seq, true
	case *events.AccountChanged:
		return e.Seq, true
	}
	return 0, false
}

func riHasAll(seqs map[uint64]int, n uint64) bool {
	for s := uint64(1); s <= n; s++ {
		if seqs[s] == 0 {
			return false
		}
	}
	return true
}

// riEnv is one relay's world: a simulator, the topics, the cursor store.
type riEnv struct {
	t       *testing.T
	ctx     context.Context
	sim     *sim.Sim
	kcfg    kafka.Config
	brokers []string
	pub     *kafka.Publisher
	out     *kafka.Appender
	pool    *pgxpool.Pool
	cursors *relay.PGCursors
	cfg     relay.RelayConfig
}

func riSetup(t *testing.T) *riEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	e := &riEnv{t: t, ctx: ctx, brokers: testenv.Brokers(t)}
	e.kcfg = kafka.Config{Brokers: e.brokers, TopicPrefix: testenv.TopicPrefix(t), ClientID: "relay-test"}
	if err := kafka.EnsureTopics(ctx, e.kcfg, []events.Topic{events.TopicTrades(), events.TopicTicks(), events.TopicReference()}); err != nil {
		t.Fatal(err)
	}
	pub, err := kafka.NewPublisher(e.kcfg, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	e.pub = pub
	if e.out, err = kafka.NewAppender(pub, "relay-test", time.Now); err != nil {
		t.Fatal(err)
	}

	pool := testenv.MigratedPG(t)
	e.pool = pool
	if e.cursors, err = relay.NewPGCursors(pool); err != nil {
		t.Fatal(err)
	}

	s, err := sim.Open(sim.Config{DataDir: t.TempDir(), Clock: testenv.NewClock(riTuesdayNoon), RNGSeed: 11,
		Sync: sim.SyncNone, Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e.sim = s
	// Small batches so a handful of facts spans several appends; fast polls so the test is quick.
	e.cfg = relay.RelayConfig{Batch: 4, AccountsEvery: 40 * time.Millisecond,
		ReferenceEvery: 80 * time.Millisecond, StatsEvery: 40 * time.Millisecond}
	return e
}

// start runs a new relay over the same simulator, topics and cursor store; the returned
// function stops it and waits until Run has returned.
func (e *riEnv) start() (stop func()) {
	e.t.Helper()
	r, err := relay.NewRelay(e.cfg, e.sim, e.out, e.cursors, testenv.Logger(), time.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	return testenv.Background(e.t, e.ctx, 10*time.Second, r.Run)
}

func (e *riEnv) send(req mt5.TradeRequest) mt5.TradeResult {
	e.t.Helper()
	res, err := e.sim.Send(e.ctx, req)
	if err != nil {
		e.t.Fatalf("send %+v: %v", req, err)
	}
	if res.Retcode != trading.RetDone {
		e.t.Fatalf("send %+v: retcode %d", req, res.Retcode)
	}
	return res
}

func (e *riEnv) deposit(login int64, amount string) {
	e.t.Helper()
	if _, err := e.sim.Deposit(login, dec.MustParse(amount)); err != nil {
		e.t.Fatal(err)
	}
}

// highWater is the number of messages ever appended to topic (the sum of its partitions'
// newest offsets).
func (e *riEnv) highWater(topic events.Topic) int64 {
	e.t.Helper()
	client, err := sarama.NewClient(e.brokers, e.kcfg.ConsumerConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	defer client.Close()
	var sum int64
	for p := int32(0); p < topic.Partitions; p++ {
		off, err := client.GetOffset(e.kcfg.Topic(topic.Name), p, sarama.OffsetNewest)
		if err != nil {
			e.t.Fatal(err)
		}
		sum += off
	}
	return sum
}

// simFacts returns every fact the simulator has, 1..last.
func (e *riEnv) simFacts() []mt5.Fact { return allFacts(e.ctx, e.sim) }

// allFacts returns every fact s has, 1..last (a read that finds none for 300 ms ends it).
func allFacts(ctx context.Context, s *sim.Sim) []mt5.Fact {
	var out []mt5.Fact
	var after uint64
	for {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs, err := s.Facts(rctx, after, 1000)
		cancel()
		if err != nil || len(fs) == 0 {
			return out
		}
		out = append(out, fs...)
		after = fs[len(fs)-1].Seq
	}
}

func riMarket(login int64, symbol string, typ trading.OrderType, volume string) mt5.TradeRequest {
	return mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Symbol: symbol, Type: typ,
		Volume: dec.MustParse(volume), Comment: "relay  TAG" + strconv.FormatInt(login%10000, 10)}
}

func riDecEq(t *testing.T, what string, got, want apd.Decimal) {
	t.Helper()
	if got.Cmp(&want) != 0 {
		t.Errorf("%s = %s, want %s", what, dec.String(got), dec.String(want))
	}
}

// riCheckFact asserts that ev carries exactly what fact f says.
func riCheckFact(t *testing.T, rec kafkatest.Record, f mt5.Fact) {
	t.Helper()
	wantKey := strconv.FormatInt(f.Login, 10)
	if rec.Key != wantKey || rec.Env.Key != wantKey {
		t.Errorf("fact %d: kafka key %q, envelope key %q, want login %s", f.Seq, rec.Key, rec.Env.Key, wantKey)
	}
	switch f.Kind {
	case mt5.FactDeal:
		e, ok := rec.Event.(*events.DealAdded)
		if !ok {
			t.Fatalf("fact %d is a deal, relayed as %T", f.Seq, rec.Event)
		}
		d := f.Deal
		if e.Login != d.Login || e.DealID != d.Ticket || e.OrderID != d.Order || e.PositionID != d.Position ||
			e.Symbol != d.Symbol || e.Action != int(d.Action) || e.Entry != int(d.Entry) || e.Reason != int(d.Reason) ||
			e.Comment != d.Comment || e.Time != d.Time {
			t.Errorf("fact %d: DealAdded %+v does not match deal %+v", f.Seq, e, d)
		}
		riDecEq(t, fmt.Sprintf("deal %d volume", d.Ticket), e.Volume, d.Volume)
		riDecEq(t, fmt.Sprintf("deal %d price", d.Ticket), e.Price, d.Price)
		riDecEq(t, fmt.Sprintf("deal %d profit", d.Ticket), e.Profit, d.Profit)
		riDecEq(t, fmt.Sprintf("deal %d commission", d.Ticket), e.Commission, d.Commission)
		riDecEq(t, fmt.Sprintf("deal %d swap", d.Ticket), e.Swap, d.Swap)
	case mt5.FactOrder:
		e, ok := rec.Event.(*events.OrderChanged)
		if !ok {
			t.Fatalf("fact %d is an order, relayed as %T", f.Seq, rec.Event)
		}
		o := f.Order
		if e.Login != o.Login || e.OrderID != o.Ticket || e.PositionID != o.PositionID || e.Symbol != o.Symbol ||
			e.Type != int(o.Type) || e.State != int(o.State) || e.Change != f.Action.String() ||
			e.TypeTime != int(o.TypeTime) || e.Expiration != o.Expiration || e.Comment != o.Comment ||
			e.TimeSetup != o.TimeSetup || e.TimeDone != o.TimeDone || e.Time != f.Time {
			t.Errorf("fact %d: OrderChanged %+v does not match order %+v (%s)", f.Seq, e, o, f.Action)
		}
		riDecEq(t, fmt.Sprintf("order %d volumeInitial", o.Ticket), e.VolumeInitial, o.VolumeInitial)
		riDecEq(t, fmt.Sprintf("order %d volumeCurrent", o.Ticket), e.VolumeCurrent, o.VolumeCurrent)
		riDecEq(t, fmt.Sprintf("order %d price", o.Ticket), e.Price, o.Price)
		riDecEq(t, fmt.Sprintf("order %d sl", o.Ticket), e.SL, o.SL)
		riDecEq(t, fmt.Sprintf("order %d tp", o.Ticket), e.TP, o.TP)
	case mt5.FactPosition:
		e, ok := rec.Event.(*events.PositionChanged)
		if !ok {
			t.Fatalf("fact %d is a position, relayed as %T", f.Seq, rec.Event)
		}
		p := f.Position
		if e.Login != p.Login || e.PositionID != p.Ticket || e.Symbol != p.Symbol || e.Direction != int(p.Type) ||
			e.Change != f.Action.String() || e.Comment != p.Comment || e.TimeOpen != p.TimeCreate || e.Time != f.Time {
			t.Errorf("fact %d: PositionChanged %+v does not match position %+v (%s)", f.Seq, e, p, f.Action)
		}
		riDecEq(t, fmt.Sprintf("position %d volume", p.Ticket), e.Volume, p.Volume)
		riDecEq(t, fmt.Sprintf("position %d priceOpen", p.Ticket), e.PriceOpen, p.PriceOpen)
		riDecEq(t, fmt.Sprintf("position %d profit", p.Ticket), e.Profit, p.Profit)
		riDecEq(t, fmt.Sprintf("position %d swap", p.Ticket), e.Swap, p.Swap)
	case mt5.FactAccount:
		e, ok := rec.Event.(*events.AccountChanged)
		if !ok {
			t.Fatalf("fact %d is an account change, relayed as %T", f.Seq, rec.Event)
		}
		a := f.Account
		if e.Login != a.Login || e.Change != f.Action.String() || e.Time != f.Time {
			t.Errorf("fact %d: AccountChanged %+v does not match account %+v (%s)", f.Seq, e, a, f.Action)
		}
		riDecEq(t, fmt.Sprintf("account %d balance", a.Login), e.Balance, a.Balance)
		riDecEq(t, fmt.Sprintf("account %d credit", a.Login), e.Credit, a.Credit)
	default:
		t.Errorf("fact %d has kind %d", f.Seq, f.Kind)
	}
}

// The relay appends every trade fact of the simulator to the trades topic, converted field
// for field; a new relay over the same cursor store resumes where the first stopped, so the
// distinct Seq read back are exactly 1..M with at most one batch appended twice.
func TestRelayFactsReachTradesTopicAndResumeFromCursor(t *testing.T) {
	e := riSetup(t)
	trades := kafkatest.Follow(t, e.ctx, e.brokers, e.kcfg, events.TopicTrades())
	stop := e.start()

	e.deposit(1001, "250.50")
	buy := e.send(riMarket(1001, "EURUSD", trading.OrderBuy, "0.10"))
	e.send(riMarket(1002, "GBPUSD", trading.OrderSell, "0.20"))
	e.deposit(1003, "-10.25")
	facts := e.simFacts()
	n := uint64(len(facts))
	if n < 8 || facts[n-1].Seq != n {
		t.Fatalf("simulator facts: %d, last seq %d; want Seq 1..N with at least 8", n, facts[n-1].Seq)
	}
	kinds := map[mt5.FactKind]bool{}
	for _, f := range facts {
		kinds[f.Kind] = true
	}
	for _, k := range []mt5.FactKind{mt5.FactDeal, mt5.FactOrder, mt5.FactPosition, mt5.FactAccount} {
		if !kinds[k] {
			t.Fatalf("scenario produced no fact of kind %d; it must exercise every kind", k)
		}
	}

	recs := trades.WaitFor(15*time.Second, fmt.Sprintf("facts 1..%d", n), func(r []kafkatest.Record) bool {
		return riHasAll(riFactSeqs(r), n)
	})
	bySeq := map[uint64]kafkatest.Record{}
	for _, r := range recs {
		if r.Event == nil {
			t.Fatalf("trades topic: undecodable message at %d/%d (type %q)", r.Partition, r.Offset, r.Env.Type)
		}
		s, ok := riSeq(r.Event)
		if !ok {
			t.Fatalf("trades topic: unexpected %T", r.Event)
		}
		bySeq[s] = r
	}
	for _, f := range facts {
		riCheckFact(t, bySeq[f.Seq], f)
	}
	// Within one partition (one login) the facts keep the simulator's order.
	last := map[int32]uint64{}
	for _, r := range recs {
		s, _ := riSeq(r.Event)
		if s <= last[r.Partition] {
			t.Errorf("partition %d: seq %d after %d", r.Partition, s, last[r.Partition])
		}
		last[r.Partition] = s
	}
	// A burst of facts, and the relay stopped while it is still relaying them.
	for i := range 10 {
		e.deposit(1003+int64(i%2), strconv.Itoa(i+1))
	}
	stop()
	before := e.highWater(events.TopicTrades())

	// Facts produced while no relay runs.
	e.send(mt5.TradeRequest{Login: 1001, Action: mt5.ActionDeal, Position: buy.Position, Comment: "close  TAGCLOSE"})
	e.deposit(1002, "1000")
	e.send(riMarket(1002, "XAUUSD", trading.OrderBuy, "0.01"))
	facts = e.simFacts()
	m := uint64(len(facts))
	if m <= n || facts[m-1].Seq != m {
		t.Fatalf("simulator facts after the pause: %d (was %d)", m, n)
	}
	if got := e.highWater(events.TopicTrades()); got != before {
		t.Fatalf("%d messages appended while no relay ran", got-before)
	}

	e.start()
	recs = trades.WaitFor(15*time.Second, fmt.Sprintf("facts 1..%d", m), func(r []kafkatest.Record) bool {
		return riHasAll(riFactSeqs(r), m)
	})
	seqs := riFactSeqs(recs)
	var distinct []uint64
	dups := 0
	for s, c := range seqs {
		distinct = append(distinct, s)
		dups += c - 1
	}
	sort.Slice(distinct, func(i, j int) bool { return distinct[i] < distinct[j] })
	if uint64(len(distinct)) != m || distinct[0] != 1 || distinct[len(distinct)-1] != m {
		t.Fatalf("distinct seqs %v, want exactly 1..%d", distinct, m)
	}
	if dups > e.cfg.Batch {
		t.Errorf("%d facts appended twice; at most one batch (%d) may repeat", dups, e.cfg.Batch)
	}
	bySeq = map[uint64]kafkatest.Record{}
	for _, r := range recs {
		s, _ := riSeq(r.Event)
		bySeq[s] = r
	}
	for _, f := range facts {
		riCheckFact(t, bySeq[f.Seq], f)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pos, err := e.cursors.Load(e.ctx, relay.CursorFacts)
		if err != nil {
			t.Fatal(err)
		}
		if pos == m {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("facts cursor = %d, want %d", pos, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var riHHMM = regexp.MustCompile(`^([01][0-9]|2[0-4]):[0-5][0-9]$`)

// At start the relay publishes the server, every symbol (enumerations as the spec's names)
// and every account to the reference topic; afterwards only what changed.
func TestRelayReferenceDataPublishedOnceAndOnChange(t *testing.T) {
	e := riSetup(t)
	ref := kafkatest.Follow(t, e.ctx, e.brokers, e.kcfg, events.TopicReference())
	symbols, err := e.sim.Symbols(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := e.sim.Accounts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(symbols) == 0 || len(accounts) == 0 {
		t.Fatalf("seed has %d symbols and %d accounts", len(symbols), len(accounts))
	}
	initial := 1 + len(symbols) + len(accounts)
	e.start()
	recs := ref.WaitFor(15*time.Second, "initial reference data", func(r []kafkatest.Record) bool { return len(r) >= initial })

	gotSym := map[string]*events.SymbolSpecified{}
	gotAcc := map[int64]*events.AccountSnapshot{}
	var server *events.ServerSpecified
	for _, r := range recs {
		switch ev := r.Event.(type) {
		case *events.SymbolSpecified:
			if gotSym[ev.Symbol] != nil {
				t.Errorf("symbol %s published twice", ev.Symbol)
			}
			gotSym[ev.Symbol] = ev
			if r.Key != "symbol:"+ev.Symbol {
				t.Errorf("symbol %s keyed %q", ev.Symbol, r.Key)
			}
		case *events.AccountSnapshot:
			if gotAcc[ev.Login] != nil {
				t.Errorf("account %d published twice", ev.Login)
			}
			gotAcc[ev.Login] = ev
			if r.Key != "account:"+strconv.FormatInt(ev.Login, 10) {
				t.Errorf("account %d keyed %q", ev.Login, r.Key)
			}
		case *events.ServerSpecified:
			if server != nil {
				t.Errorf("server published twice")
			}
			server = ev
			if r.Key != "server" {
				t.Errorf("server keyed %q", r.Key)
			}
		default:
			t.Errorf("reference topic: unexpected %T (type %q)", r.Event, r.Env.Type)
		}
	}
	if server == nil || server.Name != "TradeSim-Server" || server.TimeZoneOffsetMinutes != 180 || server.Time == 0 {
		t.Errorf("ServerSpecified = %+v, want TradeSim-Server at offset 180", server)
	}
	wantMode := map[string]string{"EURUSD": "FULL", "SOLUSD": "DISABLED", "ADAUSD": "LONG_ONLY", "DOGEUSD": "SHORT_ONLY", "DOTUSD": "CLOSE_ONLY"}
	for _, s := range symbols {
		ev := gotSym[s.Name]
		if ev == nil {
			t.Errorf("no SymbolSpecified for %s", s.Name)
			continue
		}
		if w, ok := wantMode[s.Name]; ok && ev.TradeMode != w {
			t.Errorf("%s tradeMode %q, want %q", s.Name, ev.TradeMode, w)
		}
		if ev.TradeMode != s.TradeMode.String() || ev.ExecutionMode != s.ExecutionMode.String() ||
			ev.SwapMode != s.SwapMode.String() || ev.Swap3Days != s.Swap3Days.String() {
			t.Errorf("%s enumerations %q/%q/%q/%q, want %v/%v/%v/%v", s.Name, ev.TradeMode, ev.ExecutionMode,
				ev.SwapMode, ev.Swap3Days, s.TradeMode, s.ExecutionMode, s.SwapMode, s.Swap3Days)
		}
		for _, names := range [][]string{{ev.TradeMode, ev.ExecutionMode, ev.SwapMode, ev.Swap3Days}, ev.FillModes, ev.ExpirationModes, ev.OrderModes} {
			for _, n := range names {
				if n == "" || regexp.MustCompile(`^UNKNOWN|^[0-9]`).MatchString(n) {
					t.Errorf("%s: enumeration %q is not a spec name", s.Name, n)
				}
			}
		}
		if len(ev.FillModes) == 0 || len(ev.OrderModes) == 0 {
			t.Errorf("%s: fill modes %v, order modes %v", s.Name, ev.FillModes, ev.OrderModes)
		}
		if ev.Digits != int32(s.Digits) || ev.Description != s.Description || ev.CurrencyProfit != s.CurrencyProfit {
			t.Errorf("%s: digits/description/currency %d/%q/%q", s.Name, ev.Digits, ev.Description, ev.CurrencyProfit)
		}
		riDecEq(t, s.Name+" tickSize", ev.TickSize, s.TickSize)
		riDecEq(t, s.Name+" contractSize", ev.ContractSize, s.ContractSize)
		riDecEq(t, s.Name+" volumeStep", ev.VolumeStep, s.VolumeStep)
		for day := range 7 {
			if len(ev.Sessions[day]) != len(s.Sessions[day]) {
				t.Errorf("%s day %d: %d sessions, want %d", s.Name, day, len(ev.Sessions[day]), len(s.Sessions[day]))
				continue
			}
			for i, ss := range ev.Sessions[day] {
				if !riHHMM.MatchString(ss.Open) || !riHHMM.MatchString(ss.Close) ||
					ss.Open != fmt.Sprintf("%02d:%02d", s.Sessions[day][i].Open/60, s.Sessions[day][i].Open%60) {
					t.Errorf("%s day %d session %+v (from %+v)", s.Name, day, ss, s.Sessions[day][i])
				}
			}
		}
	}
	if eur := gotSym["EURUSD"]; eur != nil && len(eur.Sessions[2]) == 0 {
		t.Errorf("EURUSD has no Tuesday session")
	}
	for _, a := range accounts {
		ev := gotAcc[a.Login]
		if ev == nil {
			t.Errorf("no AccountSnapshot for %d", a.Login)
			continue
		}
		if ev.Group != a.Group || ev.Currency != a.Currency || ev.Leverage != a.Leverage || ev.Demo != a.Demo ||
			ev.TradeAllowed != a.TradeAllowed || !ev.Active || ev.Time != a.UpdateTime || ev.ObservedAt == 0 {
			t.Errorf("snapshot %+v does not match account %+v", ev, a)
		}
		riDecEq(t, fmt.Sprintf("%d balance", a.Login), ev.Balance, a.Balance)
		riDecEq(t, fmt.Sprintf("%d equity", a.Login), ev.Equity, a.Equity)
	}
	if len(recs) != initial {
		t.Fatalf("%d reference messages at start, want %d", len(recs), initial)
	}

	// Nothing changes: many account polls and several reference polls append nothing.
	time.Sleep(15 * e.cfg.AccountsEvery)
	if got := len(ref.Snapshot()); got != initial {
		t.Fatalf("%d reference messages appended with nothing changed", got-initial)
	}

	// One account changes: exactly its new snapshot follows.
	e.deposit(1004, "123.45")
	want, err := e.sim.Account(e.ctx, 1004)
	if err != nil {
		t.Fatal(err)
	}
	ref.WaitFor(10*time.Second, "snapshot of 1004 after a deposit", func(r []kafkatest.Record) bool { return len(r) > initial })
	time.Sleep(10 * e.cfg.AccountsEvery)
	recs = ref.Snapshot()
	if len(recs) != initial+1 {
		t.Fatalf("%d reference messages after one deposit, want exactly 1", len(recs)-initial)
	}
	snap, ok := recs[initial].Event.(*events.AccountSnapshot)
	if !ok || snap.Login != 1004 {
		t.Fatalf("after the deposit: %T %+v, want the snapshot of 1004", recs[initial].Event, recs[initial].Event)
	}
	riDecEq(t, "1004 balance after deposit", snap.Balance, want.Balance)
	if first := gotAcc[1004]; first != nil && snap.ObservedAt <= first.ObservedAt {
		t.Errorf("the new snapshot of 1004 is observed at %d, not after the first (%d)", snap.ObservedAt, first.ObservedAt)
	}
}

// Ticks of the simulator (held quotes and generated ones) reach the ticks topic as
// TickReceived, every tick of the feed once, with Seq increasing within each partition.
func TestRelayTicksReachTicksTopic(t *testing.T) {
	e := riSetup(t)
	ticks := kafkatest.Follow(t, e.ctx, e.brokers, e.kcfg, events.TopicTicks())
	e.start()
	if err := e.sim.SetQuote("EURUSD", dec.MustParse("1.10000"), dec.MustParse("1.10012")); err != nil {
		t.Fatal(err)
	}
	e.sim.GenerateTicks(3)

	var held []mt5.Tick
	var after uint64
	for {
		ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		ts, err := e.sim.Ticks(ctx, after, 1000)
		cancel()
		if err != nil || len(ts) == 0 {
			break
		}
		held = append(held, ts...)
		after = ts[len(ts)-1].Seq
	}
	if len(held) < 4 {
		t.Fatalf("simulator holds %d ticks", len(held))
	}
	want := map[uint64]mt5.Tick{}
	for _, tk := range held {
		want[tk.Seq] = tk
	}
	tickSeqs := func(r []kafkatest.Record) map[uint64]*events.TickReceived {
		out := map[uint64]*events.TickReceived{}
		for _, rec := range r {
			if tk, ok := rec.Event.(*events.TickReceived); ok {
				out[tk.Seq] = tk
			}
		}
		return out
	}
	recs := ticks.WaitFor(15*time.Second, fmt.Sprintf("%d ticks", len(want)), func(r []kafkatest.Record) bool {
		got := tickSeqs(r)
		for s := range want {
			if got[s] == nil {
				return false
			}
		}
		return true
	})
	got := tickSeqs(recs)
	if len(got) != len(want) {
		t.Errorf("%d distinct ticks on the topic, the simulator made %d", len(got), len(want))
	}
	sawHeld := false
	for s, w := range want {
		g := got[s]
		if g.Symbol != w.Symbol || g.Time != w.Time || g.Volume != w.Volume || g.BidDirection != w.BidDirection || g.AskDirection != w.AskDirection {
			t.Errorf("tick %d: %+v, want %+v", s, g, w)
		}
		riDecEq(t, fmt.Sprintf("tick %d bid", s), g.Bid, w.Bid)
		riDecEq(t, fmt.Sprintf("tick %d ask", s), g.Ask, w.Ask)
		if w.Symbol == "EURUSD" && dec.String(w.Bid) == "1.10000" && dec.String(g.Ask) == "1.10012" {
			sawHeld = true
		}
	}
	if !sawHeld {
		t.Errorf("the held EURUSD quote 1.10000/1.10012 is not on the ticks topic")
	}
	last := map[int32]uint64{}
	for _, r := range recs {
		tk, ok := r.Event.(*events.TickReceived)
		if !ok {
			continue
		}
		if r.Key != tk.Symbol {
			t.Errorf("tick %d of %s keyed %q", tk.Seq, tk.Symbol, r.Key)
		}
		if tk.Seq <= last[r.Partition] {
			t.Errorf("partition %d: tick seq %d after %d", r.Partition, tk.Seq, last[r.Partition])
		}
		last[r.Partition] = tk.Seq
	}
}
