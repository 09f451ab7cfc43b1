package sim

import (
	"context"
	"fmt"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// Every state change is emitted as a fact carrying a full snapshot of the entity, queued
// under the engine lock and handed to the journal by flushLocked. Replaying the facts
// (apply) rebuilds the state, which is why a snapshot is never mutated after emission.

func (s *Sim) emitFact(f mt5.Fact) {
	s.lastSeq++
	f.Seq = s.lastSeq
	f.Time = s.nowMs()
	s.pendingRecs = append(s.pendingRecs, record{Fact: &f})
}

func (s *Sim) emitMeta(m meta) { s.pendingRecs = append(s.pendingRecs, record{Meta: &m}) }

func (s *Sim) emitOrder(o mt5.Order, x trading.ChangeAction) {
	s.emitFact(mt5.Fact{Kind: mt5.FactOrder, Login: o.Login, Action: x, Order: &o})
}

func (s *Sim) emitDeal(d *mt5.Deal) {
	c := *d
	s.emitFact(mt5.Fact{Kind: mt5.FactDeal, Login: d.Login, Action: trading.ChangeNew, Deal: &c})
}

// emitPosition and emitAccount publish snapshots with live figures. Every operation that
// changes an account first checks that its figures can be computed (checkRates) and refuses
// otherwise, so a failure here is a broken invariant: it panics rather than publish a zero.
func (s *Sim) emitPosition(p *position, x trading.ChangeAction) {
	snap, err := s.positionSnapshot(p)
	if err != nil {
		panic(fmt.Sprintf("sim: position %d changed after checkRates but cannot be valued: %v", p.Ticket, err))
	}
	s.emitFact(mt5.Fact{Kind: mt5.FactPosition, Login: p.Login, Action: x, Position: &snap})
}

func (s *Sim) emitAccount(a *account, x trading.ChangeAction) {
	a.UpdateTime = s.tradeTime()
	snap, err := s.accountSnapshot(a)
	if err != nil {
		panic(fmt.Sprintf("sim: account %d changed after checkRates but cannot be valued: %v", a.Login, err))
	}
	s.emitFact(mt5.Fact{Kind: mt5.FactAccount, Login: a.Login, Action: x, Account: &snap})
}

// pendingFacts copies the facts queued by the operation in progress (its in-band facts).
func (s *Sim) pendingFacts() []mt5.Fact {
	var out []mt5.Fact
	for _, r := range s.pendingRecs {
		if r.Fact != nil {
			out = append(out, *r.Fact)
		}
	}
	return out
}

// flushLocked hands the queued records to the journal and returns the last fact sequence
// queued (0 when nothing was).
func (s *Sim) flushLocked() uint64 {
	if len(s.pendingRecs) == 0 {
		return 0
	}
	var last uint64
	for i := len(s.pendingRecs) - 1; i >= 0; i-- {
		if f := s.pendingRecs[i].Fact; f != nil {
			last = f.Seq
			break
		}
	}
	s.jr.enqueue(s.pendingRecs)
	s.pendingRecs = nil
	return last
}

// commitAndWait flushes under the lock, releases it, and waits until the facts are durable.
func (s *Sim) commitAndWait(ctx context.Context) error {
	seq := s.flushLocked()
	s.mu.Unlock()
	if seq == 0 {
		return nil
	}
	return s.jr.waitDurable(ctx, seq)
}

// apply replays one journal record into the state (at Open, before the journal accepts writes).
func (s *Sim) apply(rec record) error {
	if m := rec.Meta; m != nil {
		if m.RolloverDay > s.rolloverDay {
			s.rolloverDay = m.RolloverDay
		}
		return nil
	}
	f := rec.Fact
	if f == nil {
		return nil
	}
	s.lastSeq = f.Seq
	a := s.accounts[f.Login]
	if a == nil {
		return nil // a login removed from the seed: its history is no longer served
	}
	switch f.Kind {
	case mt5.FactOrder:
		o := *f.Order
		s.bumpOrder(o.Ticket)
		if a.orders[o.Ticket] == nil && a.histByTkt[o.Ticket] == nil {
			a.addOrderTag(&o)
		}
		terminal := f.Action == trading.ChangeDelete
		if terminal {
			delete(a.orders, o.Ticket)
			a.addHist(&o)
			return nil
		}
		if cur, ok := a.orders[o.Ticket]; ok {
			cur.Order = o
		} else {
			a.orders[o.Ticket] = &order{Order: o}
		}
	case mt5.FactDeal:
		d := *f.Deal
		if d.Ticket >= s.nextDeal {
			s.nextDeal = d.Ticket + 1
		}
		s.bumpOrder(d.Order)
		a.addDeal(&d)
	case mt5.FactPosition:
		p := *f.Position
		s.bumpOrder(p.Ticket)
		if f.Action == trading.ChangeClose {
			delete(a.positions, p.Ticket)
			a.closedPos[p.Ticket] = true
			return nil
		}
		p.Profit, p.PriceCurrent = mt5.Position{}.Profit, mt5.Position{}.PriceCurrent
		if cur, ok := a.positions[p.Ticket]; ok {
			cur.Position = p
		} else {
			a.positions[p.Ticket] = &position{Position: p}
		}
	case mt5.FactAccount:
		a.Balance, a.Credit = f.Account.Balance, f.Account.Credit
		a.TradeAllowed, a.UpdateTime = f.Account.TradeAllowed, f.Account.UpdateTime
	}
	return nil
}

// dropUnknownSymbols forgets open orders and positions on symbols the seed no longer has
// (a journal written under another seed): nothing could price, trigger or close them.
func (s *Sim) dropUnknownSymbols(a *account) {
	for t, o := range a.orders {
		if s.symbols[o.Symbol] == nil {
			s.log.Warn("sim: dropping an open order on a symbol the seed lacks", "login", a.Login, "order", t, "symbol", o.Symbol)
			delete(a.orders, t)
		}
	}
	for t, p := range a.positions {
		if s.symbols[p.Symbol] == nil {
			s.log.Warn("sim: dropping a position on a symbol the seed lacks", "login", a.Login, "position", t, "symbol", p.Symbol)
			delete(a.positions, t)
		}
	}
}

func (s *Sim) bumpOrder(t int64) {
	if t >= s.nextOrder {
		s.nextOrder = t + 1
	}
}

// replay loads the journal and rebuilds the derived indexes (trigger heaps, expiries).
func (s *Sim) replay(path string) error {
	end, idx, err := scanJournal(path, s.apply)
	if err != nil {
		return err
	}
	s.replayEnd, s.replayIdx = end, idx
	for _, login := range s.loginList {
		a := s.accounts[login]
		s.dropUnknownSymbols(a)
		for _, o := range a.orders {
			s.orderOwner[o.Ticket] = a
			o.deadline = s.deadline(o.TypeTime, o.Expiration, o.TimeSetup)
			s.indexOrder(o)
		}
		for _, p := range a.positions {
			s.posOwner[p.Ticket] = a
			s.aggAdd(a, p, 1)
			y := s.symbols[p.Symbol]
			y.holders[a.Login]++
			s.indexPosition(y, p)
		}
	}
	return nil
}
