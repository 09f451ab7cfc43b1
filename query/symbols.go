package query

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// SymbolLookup finds one symbol specification by its exact, case-sensitive name. It is on
// the hot path of every market-data read, so implementations serve it from memory.
type SymbolLookup interface {
	Symbol(ctx context.Context, name string) (trading.SymbolSpec, bool, error)
}

// errInvalidSymbol is the rejection for a nonexistent symbol or one differing in case.
func errInvalidSymbol() error { return events.Reject(events.CodeInvalidSymbol, "Invalid symbol.") }

// lookupSymbol resolves name or answers -1121.
func lookupSymbol(ctx context.Context, r SymbolLookup, name string) (trading.SymbolSpec, error) {
	spec, ok, err := r.Symbol(ctx, name)
	if err != nil {
		return trading.SymbolSpec{}, fmt.Errorf("look up symbol %q: %w", name, err)
	}
	if !ok || spec.Symbol != name {
		return trading.SymbolSpec{}, errInvalidSymbol()
	}
	return spec, nil
}

// digitsOf returns the digits of a symbol, or ok=false when it is unknown (skipped in lists).
func digitsOf(ctx context.Context, r SymbolLookup, name string) (int32, bool, error) {
	spec, ok, err := r.Symbol(ctx, name)
	if err != nil {
		return 0, false, fmt.Errorf("look up symbol %q: %w", name, err)
	}
	return spec.Digits, ok, nil
}

// withSymbols is what a read that formats prices and volumes stands on: its read model and
// the symbol lookup that gives their precision.
type withSymbols[R any] struct {
	read    R
	symbols SymbolLookup
}

// NewSymbolsHandler builds a handler H whose read model is R and which formats with the
// symbols' specifications (KlinesHandler, TicksHandler, OrderHandler, OpenOrdersHandler,
// AllOrdersHandler, UserTradesHandler), checking that both are set: a handler built without
// them would fail on its first request instead of at start.
func NewSymbolsHandler[H ~struct{ withSymbols[R] }, R any](read R, symbols SymbolLookup) (H, error) {
	if any(read) == nil || symbols == nil {
		return H{}, errors.New("query: nil " + reflect.TypeFor[R]().Name() + " or SymbolLookup")
	}
	return H{withSymbols[R]{read: read, symbols: symbols}}, nil
}

// knownSymbol checks the symbol a list is narrowed to: none lists every symbol, an unknown
// one is -1121.
func (w withSymbols[R]) knownSymbol(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	_, err := lookupSymbol(ctx, w.symbols, name)
	return err
}

// openOf reads the login's open records (orders, positions) through read, of one symbol when
// symbol is set (an unknown one is -1121); what names them in a read error.
func openOf[R, T any](ctx context.Context, w withSymbols[R], login int64, symbol, what string,
	read func(ctx context.Context, login int64, symbol string) ([]T, error)) ([]T, error) {
	if err := w.knownSymbol(ctx, symbol); err != nil {
		return nil, err
	}
	rows, err := read(ctx, login, symbol)
	if err != nil {
		return nil, fmt.Errorf("read %s of %d: %w", what, login, err)
	}
	return rows, nil
}

// symbolSpec is the specification of a record's symbol; ok is false when the symbol is no
// longer listed (its records are still shown, their prices at their own precision).
type symbolSpec struct {
	trading.SymbolSpec
	ok bool
}

func (s symbolSpec) digits() symbolDigits { return symbolDigits{digits: s.Digits, known: s.ok} }

// renderWithSpecs renders each record with the specification of its symbol, looked up once
// per symbol: a list of one login's records names few symbols, many times.
func renderWithSpecs[T, R any](ctx context.Context, symbols SymbolLookup, records []T, symbolOf func(T) string,
	render func(T, symbolSpec) R) ([]R, error) {
	out := make([]R, 0, len(records))
	specs := map[string]symbolSpec{}
	for _, rec := range records {
		name := symbolOf(rec)
		s, seen := specs[name]
		if !seen {
			spec, ok, err := symbols.Symbol(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("look up symbol %q: %w", name, err)
			}
			s = symbolSpec{SymbolSpec: spec, ok: ok}
			specs[name] = s
		}
		out = append(out, render(rec, s))
	}
	return out, nil
}
