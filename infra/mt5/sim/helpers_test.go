package sim

import (
	"context"
	"testing"
	"time"
	"tradesvc/infra/testenv"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// tuesdayNoon is Tuesday 2026-11-17 12:00 server time (09:00 UTC): every seed session is open.
var tuesdayNoon = time.Date(2026, 11, 17, 9, 0, 0, 0, time.UTC)

// serverTime builds a UTC instant from a server-zone (UTC+3) wall time.
func serverTime(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, time.UTC).Add(-3 * time.Hour)
}

type harness struct {
	t     *testing.T
	s     *Sim
	clock *testenv.Clock
	dir   string
	ctx   context.Context
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, clock: testenv.NewClock(tuesdayNoon), dir: t.TempDir(), ctx: context.Background()}
	h.open()
	t.Cleanup(func() { h.s.Close() })
	return h
}

func (h *harness) open() {
	h.t.Helper()
	s, err := Open(Config{DataDir: h.dir, Clock: h.clock, RNGSeed: 7, Sync: SyncNone})
	if err != nil {
		h.t.Fatal(err)
	}
	h.s = s
}

func (h *harness) reopen() {
	h.t.Helper()
	if err := h.s.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
}

func D(s string) apd.Decimal { return dec.MustParse(s) }

func (h *harness) quote(sym, bid, ask string) {
	h.t.Helper()
	if err := h.s.SetQuote(sym, D(bid), D(ask)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) send(r mt5.TradeRequest) mt5.TradeResult {
	h.t.Helper()
	res, err := h.s.Send(h.ctx, r)
	if err != nil {
		h.t.Fatalf("send %+v: %v", r, err)
	}
	return res
}

func (h *harness) mustCode(want trading.Retcode, r mt5.TradeRequest) mt5.TradeResult {
	h.t.Helper()
	res := h.send(r)
	if res.Retcode != want {
		h.t.Fatalf("retcode %v (%d), want %v (%d)", res.Retcode, int(res.Retcode), want, int(want))
	}
	return res
}

func market(login int64, sym string, t trading.OrderType, vol string) mt5.TradeRequest {
	return mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Symbol: sym, Type: t, Volume: D(vol), Comment: "test   TAG0001"}
}

func closeReq(login, pos int64, vol string) mt5.TradeRequest {
	r := mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Position: pos, Comment: "close  TAG0002"}
	if vol != "" {
		r.Volume = D(vol)
	}
	return r
}

func pending(login int64, sym string, t trading.OrderType, vol, price string) mt5.TradeRequest {
	return mt5.TradeRequest{Login: login, Action: mt5.ActionPending, Symbol: sym, Type: t, Volume: D(vol), Price: D(price), Comment: "pend   TAG0003"}
}

func (h *harness) account(login int64) mt5.Account {
	h.t.Helper()
	a, err := h.s.Account(h.ctx, login)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func (h *harness) positions(login int64) []mt5.Position {
	h.t.Helper()
	p, err := h.s.Positions(h.ctx, login)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) openOrders(login int64) []mt5.Order {
	h.t.Helper()
	o, err := h.s.OpenOrders(h.ctx, login)
	if err != nil {
		h.t.Fatal(err)
	}
	return o
}

func (h *harness) deals(login int64) []mt5.Deal {
	h.t.Helper()
	d, err := h.s.DealHistory(h.ctx, login, 0, 1<<62)
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

func (h *harness) history(login int64) []mt5.Order {
	h.t.Helper()
	o, err := h.s.OrderHistory(h.ctx, login, 0, 1<<62)
	if err != nil {
		h.t.Fatal(err)
	}
	return o
}

// factsAfter returns every durable fact after seq (non-blocking: there must be at least one).
func (h *harness) factsAfter(seq uint64) []mt5.Fact {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
	defer cancel()
	var out []mt5.Fact
	for {
		f, err := h.s.Facts(ctx, seq, 1000)
		if err != nil {
			if len(out) > 0 {
				return out
			}
			h.t.Fatalf("facts after %d: %v", seq, err)
		}
		out = append(out, f...)
		seq = f[len(f)-1].Seq
		if seq >= h.lastSeq() {
			return out
		}
	}
}

func (h *harness) lastSeq() uint64 {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.lastSeq
}

func eqDec(t *testing.T, what string, got apd.Decimal, want string) {
	t.Helper()
	w := D(want)
	if got.Cmp(&w) != 0 {
		t.Errorf("%s = %s, want %s", what, dec.String(got), want)
	}
}

// kinds summarises facts as "order:DELETE:4 deal position:NEW account".
func kinds(fs []mt5.Fact) []string {
	var out []string
	for _, f := range fs {
		switch f.Kind {
		case mt5.FactOrder:
			out = append(out, "order:"+f.Action.String()+":"+f.Order.State.String())
		case mt5.FactDeal:
			out = append(out, "deal:"+f.Deal.Entry.String())
		case mt5.FactPosition:
			out = append(out, "position:"+f.Action.String())
		case mt5.FactAccount:
			out = append(out, "account")
		}
	}
	return out
}

func eqStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// housekeep runs Housekeep and fails the test when its facts were not made durable.
func (h *harness) housekeep() {
	h.t.Helper()
	if err := h.s.Housekeep(); err != nil {
		h.t.Fatal(err)
	}
}
