// Package mt5 is the trade-server port: what the service needs from an MT5 trade server in
// hedging mode, as plain request/response calls that a Manager-API bridge, a network client
// or the simulator (package sim) can all implement. Every call is remotable: arguments and
// results are plain values, and the feeds are long polls from a cursor.
package mt5

import (
	"context"
	"errors"
)

// TradeServer is the port.
type TradeServer interface {
	// Send submits one trade request. A nil error means the server answered in-band and
	// the TradeResult says how (Retcode) and what it caused (Facts). A non-nil error means there was no in-band
	// answer (ErrNoAnswer, ErrTimeout, context end, transport failure): the request may or
	// may not have executed, and the caller must reconcile by its correlation tag.
	Send(ctx context.Context, req TradeRequest) (TradeResult, error)

	// OrdersByTag returns the login's orders, open and historical, whose comment carries tag.
	OrdersByTag(ctx context.Context, login int64, tag string) ([]Order, error)
	// DealsByTag returns the login's deals whose comment carries tag.
	DealsByTag(ctx context.Context, login int64, tag string) ([]Deal, error)

	// Facts returns up to max trade facts with Seq > after, in Seq order, blocking until at
	// least one exists or ctx ends. Seq starts at 1 and increases by one per fact; facts
	// are durable before they are returned, so a reader resuming from its last Seq after
	// any restart (its own or the server's) misses nothing and sees nothing twice.
	Facts(ctx context.Context, after uint64, max int) ([]Fact, error)
	// Ticks returns up to max ticks with Seq > after, blocking like Facts. Ticks are not
	// durable: an implementation may keep a bounded window, and a cursor older than the
	// window resumes at the oldest tick still held (the Seq gap shows what was lost). Tick
	// Seq increases across server restarts; a cursor ahead of the feed resumes at the
	// oldest tick held.
	Ticks(ctx context.Context, after uint64, max int) ([]Tick, error)

	ServerInfo(ctx context.Context) (ServerInfo, error)
	Symbols(ctx context.Context) ([]Symbol, error)
	Groups(ctx context.Context) ([]Group, error)
	Accounts(ctx context.Context) ([]Account, error)
	// Account returns ErrUnknownLogin for a login the server does not have.
	Account(ctx context.Context, login int64) (Account, error)
	OpenOrders(ctx context.Context, login int64) ([]Order, error)
	Positions(ctx context.Context, login int64) ([]Position, error)
	// OrderHistory returns finished orders with TimeSetup in [from, to] (Unix ms, inclusive).
	OrderHistory(ctx context.Context, login int64, from, to int64) ([]Order, error)
	// DealHistory returns deals with Time in [from, to].
	DealHistory(ctx context.Context, login int64, from, to int64) ([]Deal, error)
	// DayStats returns the trading-day statistics; ErrUnknownSymbol for an unknown symbol.
	DayStats(ctx context.Context, symbol string) (DayStats, error)
	// Quote returns the latest tick; ErrNoQuote when the symbol has none yet.
	Quote(ctx context.Context, symbol string) (Tick, error)
}

// Errors of the port. ErrNoAnswer and ErrTimeout mean the outcome of a Send is unknown.
var (
	ErrNoAnswer      = errors.New("mt5: no in-band answer from the trade server")
	ErrTimeout       = errors.New("mt5: trade server timeout")
	ErrDisconnected  = errors.New("mt5: not connected to the trade server")
	ErrUnknownLogin  = errors.New("mt5: unknown login")
	ErrUnknownSymbol = errors.New("mt5: unknown symbol")
	ErrNoQuote       = errors.New("mt5: no quote for the symbol")
	ErrClosed        = errors.New("mt5: trade server closed")
	// ErrCursorAhead: a Facts cursor beyond the newest fact; the server lost history
	// (its data was wiped) and the reader must not silently wait for sequences that may
	// now mean other facts.
	ErrCursorAhead = errors.New("mt5: fact cursor is ahead of the trade server's feed")
)
