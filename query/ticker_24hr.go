package query

import (
	"context"
	"errors"
	"sort"

	"tradesvc/events"
	"tradesvc/events/dec"
)

// DayStatsReader is the in-memory market projection's view of trading-day statistics.
type DayStatsReader interface {
	// DayStats returns the statistics of symbol; ok is false when none arrived yet.
	DayStats(symbol string) (DayStats, bool)
	// AllDayStats returns the statistics of every symbol that has some.
	AllDayStats() []DayStats
}

// Ticker24hrQuery asks for the day ticker of one symbol, or of all when Symbol is empty.
type Ticker24hrQuery struct {
	Symbol string
}

// Ticker24hrHandler answers GET /v1/ticker/24hr.
type Ticker24hrHandler struct {
	stats   DayStatsReader
	symbols SymbolLookup
}

// NewTicker24hrHandler builds the handler.
func NewTicker24hrHandler(stats DayStatsReader, symbols SymbolLookup) (Ticker24hrHandler, error) {
	if stats == nil || symbols == nil {
		return Ticker24hrHandler{}, errors.New("query: nil DayStatsReader or SymbolLookup")
	}
	return Ticker24hrHandler{stats: stats, symbols: symbols}, nil
}

// Handle returns one ticker when q.Symbol is set (-1121 if unknown, -5003 without
// statistics) or the tickers of every symbol with statistics, sorted by symbol.
func (h Ticker24hrHandler) Handle(ctx context.Context, q Ticker24hrQuery) ([]Ticker24hr, error) {
	if q.Symbol != "" {
		spec, err := lookupSymbol(ctx, h.symbols, q.Symbol)
		if err != nil {
			return nil, err
		}
		st, ok := h.stats.DayStats(q.Symbol)
		if !ok {
			return nil, events.Reject(events.CodeNoPrice, "No price for the symbol.")
		}
		return []Ticker24hr{toTicker24hr(st, spec.Digits)}, nil
	}
	all := h.stats.AllDayStats()
	sort.Slice(all, func(i, j int) bool { return all[i].Symbol < all[j].Symbol })
	out := make([]Ticker24hr, 0, len(all))
	for _, st := range all {
		d, ok, err := digitsOf(ctx, h.symbols, st.Symbol)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, toTicker24hr(st, d))
		}
	}
	return out, nil
}

// toTicker24hr formats prices at digits, percentages at 2 places and volume as stored.
func toTicker24hr(s DayStats, d int32) Ticker24hr {
	return Ticker24hr{
		Symbol: s.Symbol, OpenPrice: price(s.Open, d), HighPrice: price(s.High, d), LowPrice: price(s.Low, d),
		LastPrice: price(s.Last, d), BidPrice: price(s.Bid, d), AskPrice: price(s.Ask, d),
		BidHigh: price(s.BidHigh, d), BidLow: price(s.BidLow, d), AskHigh: price(s.AskHigh, d), AskLow: price(s.AskLow, d),
		PriceChange: price(s.PriceChange, d), PriceChangePercent: dec.Fixed(s.PriceChangePercent, 2),
		Volatility: dec.Fixed(s.Volatility, 2), TradeDeals: s.TradeDeals, Volume: plain(s.Volume),
		BuyOrders: s.BuyOrders, SellOrders: s.SellOrders, Time: s.Time,
	}
}
