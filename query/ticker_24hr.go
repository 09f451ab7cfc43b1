package query

import (
	"errors"

	"tradesvc/events/dec"
)

// DayStatsReader is the in-memory market projection's view of trading-day statistics.
type DayStatsReader interface {
	// DayStats returns the statistics of symbol; ok is false when none arrived yet.
	DayStats(symbol string) (DayStats, bool)
	// AllDayStats returns the statistics of every symbol that has some.
	AllDayStats() []DayStats
}

// Ticker24hrHandler answers GET /v1/ticker/24hr.
type Ticker24hrHandler = SnapshotHandler[DayStats, Ticker24hr]

// NewTicker24hrHandler builds the handler.
func NewTicker24hrHandler(stats DayStatsReader, symbols SymbolLookup) (Ticker24hrHandler, error) {
	if stats == nil || symbols == nil {
		return Ticker24hrHandler{}, errors.New("query: nil DayStatsReader or SymbolLookup")
	}
	return Ticker24hrHandler{latest: stats.DayStats, all: stats.AllDayStats,
		symbolOf: func(s DayStats) string { return s.Symbol }, symbols: symbols, render: toTicker24hr}, nil
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
