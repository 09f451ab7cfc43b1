package query

import (
	"context"
)

// Tick-buffer limits of GET /v1/ticks.
const (
	TicksDefaultLimit = 100
	TicksMaxLimit     = 1000
)

// TicksQuery asks for the latest buffered ticks of a symbol. Limit 0 means the default.
type TicksQuery struct {
	Symbol string
	Limit  int
}

// TicksHandler answers GET /v1/ticks from the in-memory tick buffer.
type TicksHandler struct{ withSymbols[QuoteReader] }

// Handle returns up to Limit ticks, oldest first; an empty array when the symbol is not
// streamed. An unknown symbol is -1121, a limit outside 1..1000 is -1130.
func (h TicksHandler) Handle(ctx context.Context, q TicksQuery) ([]Tick, error) {
	limit, err := pageLimit(q.Limit, TicksDefaultLimit, TicksMaxLimit)
	if err != nil {
		return nil, err
	}
	spec, err := lookupSymbol(ctx, h.symbols, q.Symbol)
	if err != nil {
		return nil, err
	}
	ticks := h.read.Ticks(q.Symbol, limit)
	if len(ticks) > limit {
		ticks = ticks[len(ticks)-limit:]
	}
	out := make([]Tick, len(ticks))
	d := spec.Digits
	for i, t := range ticks {
		out[i] = Tick{Symbol: t.Symbol, Bid: price(t.Bid, d), Ask: price(t.Ask, d), Last: price(t.Last, d),
			Volume: t.Volume, BidDirection: t.BidDirection, AskDirection: t.AskDirection, Time: t.Time}
	}
	return out, nil
}
