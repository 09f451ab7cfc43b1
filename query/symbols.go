package query

import (
	"context"
	"fmt"

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
