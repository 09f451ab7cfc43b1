package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// The admin hooks below are what `tradesvc sim ...` and the tests drive. Each returns once
// the facts it caused are durable (except PushTick, a feed path that never waits on disk).

func (s *Sim) lockAdmin() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return mt5.ErrClosed
	}
	return nil
}

func (s *Sim) quoteArgs(symbol string, bid, ask apd.Decimal) (*symbol, error) {
	y := s.symbols[symbol]
	if y == nil {
		return nil, mt5.ErrUnknownSymbol
	}
	if !priceOK(y, bid) || !priceOK(y, ask) {
		return nil, fmt.Errorf("sim: bid %s / ask %s must be positive multiples of tick size %s",
			dec.String(bid), dec.String(ask), dec.String(y.spec.TickSize))
	}
	if bid.Cmp(&ask) > 0 {
		return nil, fmt.Errorf("sim: bid %s above ask %s", dec.String(bid), dec.String(ask))
	}
	return y, nil
}

// SetQuote sets symbol's quote now and holds it (the generator leaves the symbol alone)
// until ResumeFeed. Pending orders, SL/TP and stop-outs are checked against it.
func (s *Sim) SetQuote(symbol string, bid, ask apd.Decimal) error {
	if err := s.lockAdmin(); err != nil {
		return err
	}
	y, err := s.quoteArgs(symbol, bid, ask)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	y.held = true
	s.applyTickLocked(y, bid, ask, 1, true)
	return s.commitAndWait(context.Background())
}

// setSymbol changes a simulation setting of symbol under the engine lock.
func (s *Sim) setSymbol(name string, set func(y *symbol) error) error {
	if err := s.lockAdmin(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	y := s.symbols[name]
	if y == nil {
		return mt5.ErrUnknownSymbol
	}
	return set(y)
}

// ResumeFeed releases a held symbol back to the generator.
func (s *Sim) ResumeFeed(name string) error {
	return s.setSymbol(name, func(y *symbol) error {
		y.held = false
		return nil
	})
}

// PushTick processes one tick as if it came from the price feed (no hold). It does not wait
// for the journal: facts it causes become visible when their batch is committed.
func (s *Sim) PushTick(symbol string, bid, ask apd.Decimal) error {
	if err := s.lockAdmin(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	y, err := s.quoteArgs(symbol, bid, ask)
	if err != nil {
		return err
	}
	s.applyTickLocked(y, bid, ask, 1, true)
	s.flushLocked()
	return nil
}

// Deposit books a balance deal (negative amount: withdrawal) and returns its ticket.
func (s *Sim) Deposit(login int64, amount apd.Decimal) (int64, error) {
	return s.balanceOp(login, amount, trading.DealBalance)
}

// Credit books a credit deal (negative amount: credit removed) and returns its ticket.
func (s *Sim) Credit(login int64, amount apd.Decimal) (int64, error) {
	return s.balanceOp(login, amount, trading.DealCredit)
}

func (s *Sim) balanceOp(login int64, amount apd.Decimal, act trading.DealAction) (int64, error) {
	if err := s.lockAdmin(); err != nil {
		return 0, err
	}
	a := s.accounts[login]
	if a == nil {
		s.mu.Unlock()
		return 0, mt5.ErrUnknownLogin
	}
	amount = round2(amount)
	if amount.IsZero() {
		s.mu.Unlock()
		return 0, errors.New("sim: amount must not be zero")
	}
	target := &a.Balance
	comment := "deposit"
	if act == trading.DealCredit {
		target, comment = &a.Credit, "credit"
	} else if amount.Sign() < 0 {
		comment = "withdrawal"
	}
	if after := dec.Add(*target, amount); amount.Sign() < 0 && after.Sign() < 0 {
		s.mu.Unlock()
		return 0, fmt.Errorf("sim: %s would become negative", comment)
	}
	if err := s.checkRates(a); err != nil { // the account update carries its figures
		s.mu.Unlock()
		return 0, fmt.Errorf("sim: %s of %d: %w", comment, login, err)
	}
	*target = dec.Add(*target, amount)
	d := &mt5.Deal{Ticket: s.nextDeal, Login: login, Action: act, Entry: trading.EntryIn, Profit: amount,
		Comment: comment, Time: s.tradeTime()}
	s.nextDeal++
	a.addDeal(d)
	s.emitDeal(d)
	s.emitAccount(a, trading.ChangeUpdate)
	return d.Ticket, s.commitAndWait(context.Background())
}

// SetAccountTradeAllowed switches trading on or off for one account (10027 while off).
func (s *Sim) SetAccountTradeAllowed(login int64, allowed bool) error {
	if err := s.lockAdmin(); err != nil {
		return err
	}
	a := s.accounts[login]
	if a == nil {
		s.mu.Unlock()
		return mt5.ErrUnknownLogin
	}
	if err := s.checkRates(a); err != nil { // the account update carries its figures
		s.mu.Unlock()
		return fmt.Errorf("sim: account %d: %w", login, err)
	}
	a.TradeAllowed = allowed
	s.emitAccount(a, trading.ChangeUpdate)
	return s.commitAndWait(context.Background())
}

// SetFault sets the injected fault (FaultNone clears it).
func (s *Sim) SetFault(f Fault) error {
	switch f.Mode {
	case "", FaultNone, FaultNoAnswer, FaultTimeout, FaultDisconnect, FaultRequote, FaultLatency, FaultShortfalls:
	case FaultRefuse:
		if f.Retcode < 10004 || f.Retcode > 10046 || f.Retcode.Success() {
			return fmt.Errorf("sim: refuse needs a refusal return code, got %d", f.Retcode)
		}
	default:
		return fmt.Errorf("sim: unknown fault mode %q", f.Mode)
	}
	if f.Latency < 0 {
		return errors.New("sim: latency must not be negative")
	}
	if f.AnswerDelay < 0 {
		return errors.New("sim: answer delay must not be negative")
	}
	if f.Mode == "" {
		f.Mode = FaultNone
	}
	if err := s.lockAdmin(); err != nil {
		return err
	}
	s.fault = f
	s.mu.Unlock()
	return nil
}

// CurrentFault returns the injected fault.
func (s *Sim) CurrentFault() Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault.Mode == "" {
		return Fault{Mode: FaultNone}
	}
	return s.fault
}

// SetSlippage makes market executions on the symbol name fill ticks ticks worse than the quote.
func (s *Sim) SetSlippage(name string, ticks int) error {
	return s.setSymbol(name, func(y *symbol) error {
		if ticks < 0 {
			return errors.New("sim: slippage must not be negative")
		}
		y.slippage = ticks
		return nil
	})
}

// SetLiquidity limits market executions on the symbol name to levels deals of at most lots each
// (zero lots: unlimited).
func (s *Sim) SetLiquidity(name string, lots apd.Decimal, levels int) error {
	return s.setSymbol(name, func(y *symbol) error {
		if lots.Sign() < 0 || levels < 0 {
			return errors.New("sim: liquidity must not be negative")
		}
		y.liqLots, y.liqLevels = lots, levels
		return nil
	})
}
