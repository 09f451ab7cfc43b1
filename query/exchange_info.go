package query

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"tradesvc/events"
	"tradesvc/events/trading"
)

// SymbolReader lists and finds symbol specifications (reference-data projection).
type SymbolReader interface {
	// Symbols returns every instrument on the trade server.
	Symbols(ctx context.Context) ([]trading.SymbolSpec, error)
	// Symbol finds one by exact name.
	Symbol(ctx context.Context, name string) (trading.SymbolSpec, bool, error)
}

// ServerInfo tells facts about the trade server itself.
type ServerInfo interface {
	// TimeZoneOffsetMinutes is the offset of the trade server's zone from UTC (sessions use it).
	TimeZoneOffsetMinutes() int
}

// ExchangeInfoQuery asks for the exchange information. Symbols nil lists every symbol;
// otherwise only the named ones (each must exist: -1121). RateLimits are the caller's limits
// (the key's, or the defaults) and Now the server time; the gateway provides both.
type ExchangeInfoQuery struct {
	Symbols    []string
	RateLimits []RateLimit
	Now        int64
}

// ExchangeInfoHandler answers GET /v1/exchangeInfo.
type ExchangeInfoHandler struct {
	symbols SymbolReader
	server  ServerInfo
}

// NewExchangeInfoHandler builds the handler.
func NewExchangeInfoHandler(symbols SymbolReader, server ServerInfo) (ExchangeInfoHandler, error) {
	if symbols == nil || server == nil {
		return ExchangeInfoHandler{}, errors.New("query: nil SymbolReader or ServerInfo")
	}
	return ExchangeInfoHandler{symbols: symbols, server: server}, nil
}

// Handle builds the resource. Symbols are sorted by name when all are listed, and in the
// requested order (duplicates dropped) otherwise.
func (h ExchangeInfoHandler) Handle(ctx context.Context, q ExchangeInfoQuery) (ExchangeInfo, error) {
	var specs []trading.SymbolSpec
	if q.Symbols == nil {
		all, err := h.symbols.Symbols(ctx)
		if err != nil {
			return ExchangeInfo{}, fmt.Errorf("list symbols: %w", err)
		}
		specs = all
		sort.Slice(specs, func(i, j int) bool { return specs[i].Symbol < specs[j].Symbol })
	} else {
		seen := make(map[string]bool, len(q.Symbols))
		for _, name := range q.Symbols {
			if seen[name] {
				continue
			}
			seen[name] = true
			spec, err := lookupSymbol(ctx, h.symbols, name)
			if err != nil {
				return ExchangeInfo{}, err
			}
			specs = append(specs, spec)
		}
	}
	out := ExchangeInfo{
		ServerTime:                  q.Now,
		ServerTimeZoneOffsetMinutes: h.server.TimeZoneOffsetMinutes(),
		RateLimits:                  q.RateLimits,
		Symbols:                     make([]SymbolInfo, len(specs)),
	}
	if out.RateLimits == nil {
		out.RateLimits = []RateLimit{}
	}
	for i, s := range specs {
		out.Symbols[i] = toSymbolInfo(s)
	}
	return out, nil
}

// toSymbolInfo renders a specification; every weekday key is present, empty days as [].
func toSymbolInfo(s trading.SymbolSpec) SymbolInfo {
	sessions := make(map[string][]events.Session, len(s.Sessions))
	for d, ss := range s.Sessions {
		if ss == nil {
			ss = []events.Session{}
		}
		sessions[trading.Weekday(d).String()] = ss
	}
	info := SymbolInfo{SymbolSpecOf: events.MapSymbolSpec(s.SymbolSpecOf, plain), Sessions: sessions}
	info.FillModes, info.ExpirationModes, info.OrderModes = nonNil(s.FillModes), nonNil(s.ExpirationModes), nonNil(s.OrderModes)
	return info
}

// nonNil makes an absent list an empty JSON array.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
