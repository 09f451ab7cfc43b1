// Package query holds the read side of the REST API: one file per query handler, each
// declaring the narrow read-model interface it needs. Read models (rows with apd.Decimal
// fields) are defined here or, when the command side shares them, in the domain package
// (events/trading); handlers turn them into wire shapes (dto.go) with decimals as
// strings at the right precision. Handlers never read the command side or the trade server.
package query

import "github.com/cockroachdb/apd/v3"

// Quote is the latest (or a buffered) tick of a symbol from the in-memory market projection.
type Quote struct {
	Symbol       string
	Bid          apd.Decimal
	Ask          apd.Decimal
	Last         apd.Decimal
	Volume       int64
	BidDirection int32
	AskDirection int32
	// Time is the tick time, Unix ms.
	Time int64
	// Held: an operator set and holds this quote; it is fresh until a newer tick.
	Held bool
	// Seq is the trade server's tick-feed sequence (0: unknown). The stored 1-minute bars
	// record the Seq of the last tick they count, so the kline streams can tell which ticks
	// a bar seeded from them already holds.
	Seq uint64
}

// DayStats are the trade server's statistics of the current trading day for one symbol.
type DayStats struct {
	Symbol             string
	Open               apd.Decimal
	High               apd.Decimal
	Low                apd.Decimal
	Last               apd.Decimal
	Bid                apd.Decimal
	Ask                apd.Decimal
	BidHigh            apd.Decimal
	BidLow             apd.Decimal
	AskHigh            apd.Decimal
	AskLow             apd.Decimal
	PriceChange        apd.Decimal
	PriceChangePercent apd.Decimal
	Volatility         apd.Decimal
	TradeDeals         int64
	Volume             apd.Decimal
	BuyOrders          int64
	SellOrders         int64
	Time               int64
}

// Bar is one 1-minute bar (ClickHouse). OpenTime is a multiple of 60000.
type Bar struct {
	OpenTime int64
	Open     apd.Decimal
	High     apd.Decimal
	Low      apd.Decimal
	Close    apd.Decimal
	Count    int64
}

// Account is the account read model. Readers return only active accounts: a nonexistent,
// archived or inactive account is "not found" (the API answers -2022 for all of them).
type Account struct {
	Login        int64
	Group        string
	Currency     string
	Leverage     int32
	Balance      apd.Decimal
	Credit       apd.Decimal
	Equity       apd.Decimal
	Margin       apd.Decimal
	FreeMargin   apd.Decimal
	Profit       apd.Decimal
	MarginLevel  apd.Decimal
	TradeAllowed bool
	Demo         bool
	UpdateTime   int64
}
