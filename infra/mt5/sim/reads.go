package sim

import (
	"context"
	"fmt"
	"sort"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/infra/mt5"
)

var _ mt5.TradeServer = (*Sim)(nil)

// lockRead takes the engine lock for a read, refusing while disconnected or closed.
func (s *Sim) lockRead() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return mt5.ErrClosed
	}
	if s.fault.Mode == FaultDisconnect {
		s.mu.Unlock()
		return mt5.ErrDisconnected
	}
	return nil
}

func (s *Sim) account(login int64) (*account, error) {
	a := s.accounts[login]
	if a == nil {
		return nil, mt5.ErrUnknownLogin
	}
	return a, nil
}

// lockAccount takes the engine lock for a read of login's account and finds it; on an error
// the lock is not held.
func (s *Sim) lockAccount(login int64) (*account, error) {
	if err := s.lockRead(); err != nil {
		return nil, err
	}
	a, err := s.account(login)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return a, nil
}

// Facts implements mt5.TradeServer.
func (s *Sim) Facts(ctx context.Context, after uint64, max int) ([]mt5.Fact, error) {
	if err := s.lockRead(); err != nil {
		return nil, err
	}
	s.mu.Unlock()
	return s.jr.read(ctx, after, max)
}

// Ticks implements mt5.TradeServer.
func (s *Sim) Ticks(ctx context.Context, after uint64, max int) ([]mt5.Tick, error) {
	if err := s.lockRead(); err != nil {
		return nil, err
	}
	s.mu.Unlock()
	return s.ticks.read(ctx, after, max)
}

// locked runs read under the engine lock, refusing while disconnected or closed.
func locked[T any](s *Sim, read func() (T, error)) (T, error) {
	if err := s.lockRead(); err != nil {
		var zero T
		return zero, err
	}
	defer s.mu.Unlock()
	return read()
}

// withAccount runs read on login's account under the engine lock.
func withAccount[T any](s *Sim, login int64, read func(a *account) (T, error)) (T, error) {
	a, err := s.lockAccount(login)
	if err != nil {
		var zero T
		return zero, err
	}
	defer s.mu.Unlock()
	return read(a)
}

// ServerInfo implements mt5.TradeServer.
func (s *Sim) ServerInfo(ctx context.Context) (mt5.ServerInfo, error) {
	return locked(s, func() (mt5.ServerInfo, error) {
		out := s.server
		out.Time = s.nowMs()
		return out, nil
	})
}

// Symbols implements mt5.TradeServer.
func (s *Sim) Symbols(ctx context.Context) ([]mt5.Symbol, error) {
	return locked(s, func() ([]mt5.Symbol, error) {
		out := make([]mt5.Symbol, 0, len(s.symbolList))
		for _, y := range s.symbolList {
			out = append(out, y.spec)
		}
		return out, nil
	})
}

// Groups implements mt5.TradeServer.
func (s *Sim) Groups(ctx context.Context) ([]mt5.Group, error) {
	return locked(s, func() ([]mt5.Group, error) { return append([]mt5.Group(nil), s.groupList...), nil })
}

// Accounts implements mt5.TradeServer.
func (s *Sim) Accounts(ctx context.Context) ([]mt5.Account, error) {
	return locked(s, func() ([]mt5.Account, error) {
		out := make([]mt5.Account, 0, len(s.loginList))
		for _, l := range s.loginList {
			snap, err := s.accountSnapshot(s.accounts[l])
			if err != nil {
				return nil, err
			}
			out = append(out, snap)
		}
		return out, nil
	})
}

// Account implements mt5.TradeServer.
func (s *Sim) Account(ctx context.Context, login int64) (mt5.Account, error) {
	return withAccount(s, login, s.accountSnapshot)
}

// OpenOrders implements mt5.TradeServer.
func (s *Sim) OpenOrders(ctx context.Context, login int64) ([]mt5.Order, error) {
	return withAccount(s, login, func(a *account) ([]mt5.Order, error) {
		out := make([]mt5.Order, 0, len(a.orders))
		for _, o := range a.orders {
			out = append(out, o.Order)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Ticket < out[j].Ticket })
		return out, nil
	})
}

// Positions implements mt5.TradeServer.
func (s *Sim) Positions(ctx context.Context, login int64) ([]mt5.Position, error) {
	return withAccount(s, login, func(a *account) ([]mt5.Position, error) {
		out := make([]mt5.Position, 0, len(a.positions))
		for _, p := range a.positions {
			snap, err := s.positionSnapshot(p)
			if err != nil {
				return nil, err
			}
			out = append(out, snap)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Ticket < out[j].Ticket })
		return out, nil
	})
}

// OrderHistory implements mt5.TradeServer.
func (s *Sim) OrderHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Order, error) {
	return withAccount(s, login, func(a *account) ([]mt5.Order, error) {
		var out []mt5.Order
		for _, o := range a.hist {
			if o.TimeSetup >= from && o.TimeSetup <= to {
				out = append(out, *o)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].TimeSetup < out[j].TimeSetup })
		return out, nil
	})
}

// DealHistory implements mt5.TradeServer. Under the shortfalls fault it is empty, as the
// staging server's deal history is.
func (s *Sim) DealHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Deal, error) {
	return withAccount(s, login, func(a *account) ([]mt5.Deal, error) {
		out := []mt5.Deal{}
		if s.fault.Mode == FaultShortfalls {
			return out, nil
		}
		for _, d := range a.deals {
			if d.Time >= from && d.Time <= to {
				out = append(out, *d)
			}
		}
		return out, nil
	})
}

// OrdersByTag implements mt5.TradeServer: the tag is the last seven characters of the comment.
// Under the shortfalls fault it is empty: the staging server cannot look orders up by tag
// (which is why a pending order there is only ever known from the facts).
func (s *Sim) OrdersByTag(ctx context.Context, login int64, tag string) ([]mt5.Order, error) {
	return withAccount(s, login, func(a *account) ([]mt5.Order, error) {
		var out []mt5.Order
		if s.fault.Mode == FaultShortfalls {
			return out, nil
		}
		for _, t := range a.orderTags[tag] {
			if o := a.orders[t]; o != nil {
				out = append(out, o.Order)
			} else if h := a.histByTkt[t]; h != nil {
				out = append(out, *h)
			}
		}
		return out, nil
	})
}

// DealsByTag implements mt5.TradeServer.
func (s *Sim) DealsByTag(ctx context.Context, login int64, tag string) ([]mt5.Deal, error) {
	return withAccount(s, login, func(a *account) ([]mt5.Deal, error) {
		var out []mt5.Deal
		for _, d := range a.dealTags[tag] {
			out = append(out, *d)
		}
		return out, nil
	})
}

// Quote implements mt5.TradeServer.
func (s *Sim) Quote(ctx context.Context, symbol string) (mt5.Tick, error) {
	return locked(s, func() (mt5.Tick, error) {
		y := s.symbols[symbol]
		if y == nil {
			return mt5.Tick{}, mt5.ErrUnknownSymbol
		}
		if !y.hasQuote {
			return mt5.Tick{}, mt5.ErrNoQuote
		}
		return mt5.Tick{Seq: y.lastSeq, Symbol: symbol, Bid: y.bid, Ask: y.ask, Last: y.bid, Volume: 0,
			BidDirection: y.bidDir, AskDirection: y.askDir, Time: y.tickTime, Held: y.held}, nil
	})
}

// DayStats implements mt5.TradeServer.
func (s *Sim) DayStats(ctx context.Context, symbol string) (mt5.DayStats, error) {
	return locked(s, func() (mt5.DayStats, error) { return s.dayStats(symbol) })
}

// dayStats computes a symbol's statistics of the day; the engine lock is held.
func (s *Sim) dayStats(symbol string) (mt5.DayStats, error) {
	y := s.symbols[symbol]
	if y == nil {
		return mt5.DayStats{}, mt5.ErrUnknownSymbol
	}
	d := y.day
	out := mt5.DayStats{Symbol: symbol, Open: d.open, High: d.high, Low: d.low, Last: y.bid, Bid: y.bid, Ask: y.ask,
		BidHigh: d.bidHigh, BidLow: d.bidLow, AskHigh: d.askHigh, AskLow: d.askLow, Deals: d.deals,
		Volume: d.volume, BuyOrders: d.buyOrders, SellOrders: d.sellOrders, Time: y.tickTime}
	out.PriceChange = dec.Sub(out.Last, d.open)
	if !d.open.IsZero() { // no trade yet today: no change to speak of
		pct, err := dec.Quo(dec.Mul(out.PriceChange, hundred), d.open)
		if err != nil {
			return mt5.DayStats{}, fmt.Errorf("sim: %s price change: %w", symbol, err)
		}
		out.PriceChangePercent = dec.Round(pct, 2)
	}
	if !d.low.IsZero() {
		vol, err := dec.Quo(dec.Mul(dec.Sub(d.high, d.low), hundred), d.low)
		if err != nil {
			return mt5.DayStats{}, fmt.Errorf("sim: %s volatility: %w", symbol, err)
		}
		out.Volatility = dec.Round(vol, 2)
	}
	if out.Volume.IsZero() {
		out.Volume = apd.Decimal{}
	}
	return out, nil
}
