package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/sim"
)

// simStack is a simulator served over a real loopback listener with a client for it.
type simStack struct {
	sim    *sim.Sim
	srv    *httptest.Server
	client *Client
}

func startSim(t *testing.T) *simStack {
	t.Helper()
	s, err := sim.Open(sim.Config{DataDir: t.TempDir(), Sync: sim.SyncNone, RNGSeed: 7,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	srv := httptest.NewServer(NewServer(ServerConfig{Port: s, Admin: s, Token: testToken}))
	t.Cleanup(srv.Close)
	c, err := NewClient(ClientConfig{Addr: srv.URL, Token: testToken, PollWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &simStack{sim: s, srv: srv, client: c}
}

// sameJSON asserts that a value read over the wire marshals exactly like the one read
// directly from the simulator: every field, every decimal's digits and exponent.
func sameJSON[T any](t *testing.T, what string, remote, direct T, rerr, derr error) {
	t.Helper()
	if derr != nil || rerr != nil {
		if !errors.Is(rerr, derr) && !(derr == nil && rerr == nil) {
			t.Errorf("%s: remote err %v, direct err %v", what, rerr, derr)
		}
		return
	}
	rb, _ := json.Marshal(&remote)
	db, _ := json.Marshal(&direct)
	if string(rb) != string(db) {
		t.Errorf("%s differs over the wire:\nremote %s\ndirect %s", what, rb, db)
	}
}

func TestSimOverWireMirrorsDirectReads(t *testing.T) {
	st := startSim(t)
	ctx := context.Background()
	c, s := st.client, st.sim
	if err := s.SetQuote("BTCUSD", dec.MustParse("60000.00"), dec.MustParse("60000.50")); err != nil {
		t.Fatal(err)
	}
	res, err := c.Send(ctx, mt5.TradeRequest{Login: 1001, Action: mt5.ActionDeal, Symbol: "BTCUSD",
		Type: trading.OrderBuy, Volume: dec.MustParse("0.10"), Comment: "wire#TAG0001"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Retcode != trading.RetDone || res.Deal == 0 || dec.Cmp(res.Price, dec.MustParse("60000.50")) != 0 {
		t.Fatalf("market buy over the wire: %+v", res)
	}
	if _, err := c.Send(ctx, mt5.TradeRequest{Login: 1001, Action: mt5.ActionPending, Symbol: "BTCUSD",
		Type: trading.OrderBuyLimit, Volume: dec.MustParse("0.01"), Price: dec.MustParse("55000.00"), Comment: "wire#TAG0002"}); err != nil {
		t.Fatal(err)
	}

	{
		r, re := c.Symbols(ctx)
		d, de := s.Symbols(ctx)
		sameJSON(t, "Symbols", r, d, re, de)
	}
	{
		r, re := c.Groups(ctx)
		d, de := s.Groups(ctx)
		sameJSON(t, "Groups", r, d, re, de)
	}
	{
		r, re := c.Accounts(ctx)
		d, de := s.Accounts(ctx)
		sameJSON(t, "Accounts", r, d, re, de)
	}
	{
		r, re := c.Account(ctx, 1001)
		d, de := s.Account(ctx, 1001)
		sameJSON(t, "Account", r, d, re, de)
	}
	{
		r, re := c.Positions(ctx, 1001)
		d, de := s.Positions(ctx, 1001)
		sameJSON(t, "Positions", r, d, re, de)
		if len(r) != 1 {
			t.Errorf("positions: %d", len(r))
		}
	}
	{
		r, re := c.OpenOrders(ctx, 1001)
		d, de := s.OpenOrders(ctx, 1001)
		sameJSON(t, "OpenOrders", r, d, re, de)
	}
	{
		r, re := c.OrderHistory(ctx, 1001, 0, 1<<62)
		d, de := s.OrderHistory(ctx, 1001, 0, 1<<62)
		sameJSON(t, "OrderHistory", r, d, re, de)
	}
	{
		r, re := c.DealHistory(ctx, 1001, 0, 1<<62)
		d, de := s.DealHistory(ctx, 1001, 0, 1<<62)
		sameJSON(t, "DealHistory", r, d, re, de)
	}
	{
		r, re := c.OrdersByTag(ctx, 1001, "TAG0001")
		d, de := s.OrdersByTag(ctx, 1001, "TAG0001")
		sameJSON(t, "OrdersByTag", r, d, re, de)
	}
	{
		r, re := c.DealsByTag(ctx, 1001, "TAG0001")
		d, de := s.DealsByTag(ctx, 1001, "TAG0001")
		sameJSON(t, "DealsByTag", r, d, re, de)
		if len(r) != 1 || r[0].Ticket != res.Deal {
			t.Errorf("deals by tag: %+v", r)
		}
	}
	{
		r, re := c.DayStats(ctx, "BTCUSD")
		d, de := s.DayStats(ctx, "BTCUSD")
		sameJSON(t, "DayStats", r, d, re, de)
	}
	{
		r, re := c.Quote(ctx, "BTCUSD")
		d, de := s.Quote(ctx, "BTCUSD")
		sameJSON(t, "Quote", r, d, re, de)
	}
	{
		r, re := c.Facts(ctx, 0, 1000)
		d, de := s.Facts(ctx, 0, 1000)
		sameJSON(t, "Facts", r, d, re, de)
	}
	{
		r, re := c.Ticks(ctx, 0, 1000)
		d, de := s.Ticks(ctx, 0, 1000)
		sameJSON(t, "Ticks", r, d, re, de)
	}
	info, err := c.ServerInfo(ctx)
	if err != nil || info.Name == "" {
		t.Errorf("ServerInfo: %+v, %v", info, err)
	}
	// Sentinels from the real simulator.
	if _, err := c.Account(ctx, 999999); !errors.Is(err, mt5.ErrUnknownLogin) {
		t.Errorf("unknown login: %v", err)
	}
	if _, err := c.DayStats(ctx, "NOPE"); !errors.Is(err, mt5.ErrUnknownSymbol) {
		t.Errorf("unknown symbol: %v", err)
	}
}

func TestSimFactsResumeAcrossClientRestart(t *testing.T) {
	st := startSim(t)
	ctx := context.Background()
	// Executor #1 reads the feed up to some cursor, then dies.
	if _, err := st.sim.Deposit(1002, dec.MustParse("1.00")); err != nil {
		t.Fatal(err)
	}
	all, err := st.client.Facts(ctx, 0, 1000)
	if err != nil || len(all) == 0 {
		t.Fatalf("facts: %v, %v", all, err)
	}
	cursor := all[len(all)-1].Seq
	_ = st.client.Close()
	st.srv.CloseClientConnections()

	// While no executor runs, the trade server keeps working.
	if _, err := st.sim.Deposit(1002, dec.MustParse("2.50")); err != nil {
		t.Fatal(err)
	}
	// Executor #2 resumes from its stored cursor: exactly the new facts, in order.
	c2, err := NewClient(ClientConfig{Addr: st.srv.URL, Token: testToken, PollWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	got, err := c2.Facts(ctx, cursor, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Seq != cursor+1 {
		t.Fatalf("resumed at seq %d, want %d", got[0].Seq, cursor+1)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq != got[i-1].Seq+1 {
			t.Fatalf("gap or repeat: %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	var deal *mt5.Deal
	var acct *mt5.Account
	for _, f := range got {
		if f.Deal != nil {
			deal = f.Deal
		}
		if f.Account != nil && f.Kind == mt5.FactAccount {
			acct = f.Account
		}
	}
	if deal == nil || dec.String(deal.Profit) != "2.50" || deal.Action != trading.DealBalance {
		t.Fatalf("balance deal fact: %+v", deal)
	}
	if acct == nil || dec.String(acct.Balance) != "10003.50" {
		t.Fatalf("account update fact: %+v", acct)
	}
	// A poll waiting at the head wakes up on the next fact.
	head := got[len(got)-1].Seq
	done := make(chan []mt5.Fact, 1)
	go func() { fs, _ := c2.Facts(ctx, head, 10); done <- fs }()
	time.Sleep(50 * time.Millisecond)
	if err := st.sim.SetAccountTradeAllowed(1002, false); err != nil {
		t.Fatal(err)
	}
	select {
	case fs := <-done:
		if len(fs) == 0 || fs[0].Seq != head+1 || fs[0].Account == nil || fs[0].Account.TradeAllowed {
			t.Fatalf("woken poll: %+v", fs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiting poll never woke up")
	}
}

func TestSimFaultsOverWire(t *testing.T) {
	st := startSim(t)
	ctx := context.Background()
	a := st.client.Admin()
	buy := func(tag string) (mt5.TradeResult, error) {
		return st.client.Send(ctx, mt5.TradeRequest{Login: 1001, Action: mt5.ActionDeal, Symbol: "BTCUSD",
			Type: trading.OrderBuy, Volume: dec.MustParse("0.01"), Comment: "f#" + tag})
	}
	if _, err := a.SetFault(ctx, FaultState{Mode: "no-answer"}); err != nil {
		t.Fatal(err)
	}
	res, err := buy("NOANSW1")
	if !errors.Is(err, mt5.ErrNoAnswer) || res.Retcode != 0 {
		t.Fatalf("no-answer: %+v, %v", res, err)
	}
	// ...yet it executed: reconciliation by tag finds the deal.
	if deals, err := st.client.DealsByTag(ctx, 1001, "NOANSW1"); err != nil || len(deals) != 1 {
		t.Fatalf("deal of the unanswered send: %v, %v", deals, err)
	}
	if _, err := a.SetFault(ctx, FaultState{Mode: "timeout"}); err != nil {
		t.Fatal(err)
	}
	if _, err := buy("TIMEOUT"); !errors.Is(err, mt5.ErrTimeout) {
		t.Fatalf("timeout: %v", err)
	}
	if _, err := a.SetFault(ctx, FaultState{Mode: "disconnect"}); err != nil {
		t.Fatal(err)
	}
	if res, err := buy("DISCONN"); err != nil || res.Retcode != trading.RetConnection {
		t.Fatalf("disconnect send: %+v, %v", res, err)
	}
	if _, err := st.client.Account(ctx, 1001); !errors.Is(err, mt5.ErrDisconnected) {
		t.Fatalf("read while disconnected: %v", err)
	}
	if _, err := a.SetFault(ctx, FaultState{Mode: "refuse", Retcode: int(trading.RetNoMoney), LatencyMs: 20}); err != nil {
		t.Fatal(err)
	}
	if res, err := buy("REFUSE1"); err != nil || res.Retcode != trading.RetNoMoney {
		t.Fatalf("refuse: %+v, %v", res, err)
	}
	f, err := a.CurrentFault(ctx)
	if err != nil || f != (FaultState{Mode: "refuse", Retcode: int(trading.RetNoMoney), LatencyMs: 20}) {
		t.Fatalf("current fault: %+v, %v", f, err)
	}
	if _, err := a.SetFault(ctx, FaultState{Mode: "bogus"}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("bogus mode: %v", err)
	}
	if _, err := a.SetFault(ctx, FaultState{Mode: "none"}); err != nil {
		t.Fatal(err)
	}
	if res, err := buy("NORMAL1"); err != nil || res.Retcode != trading.RetDone {
		t.Fatalf("after none: %+v, %v", res, err)
	}
}
