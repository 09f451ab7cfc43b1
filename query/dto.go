package query

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
)

// Wire shapes returned by the handlers. Decimals are strings: prices at the symbol's digits,
// money at 4 places, marginLevel at 2. They marshal with encoding/json as values.

// moneyPlaces is the precision of money on the wire.
const moneyPlaces = 4

// PriceTicker is the price ticker resource.
type PriceTicker struct {
	Symbol string `json:"symbol"`
	Bid    string `json:"bid"`
	Ask    string `json:"ask"`
	Last   string `json:"last"`
	Time   int64  `json:"time"`
}

// BookTicker is the book ticker resource; the quantities are always "0".
type BookTicker struct {
	Symbol   string `json:"symbol"`
	BidPrice string `json:"bidPrice"`
	BidQty   string `json:"bidQty"`
	AskPrice string `json:"askPrice"`
	AskQty   string `json:"askQty"`
	Time     int64  `json:"time"`
}

// Ticker24hr is the 24-hour (trading day) ticker resource.
type Ticker24hr struct {
	Symbol             string `json:"symbol"`
	OpenPrice          string `json:"openPrice"`
	HighPrice          string `json:"highPrice"`
	LowPrice           string `json:"lowPrice"`
	LastPrice          string `json:"lastPrice"`
	BidPrice           string `json:"bidPrice"`
	AskPrice           string `json:"askPrice"`
	BidHigh            string `json:"bidHigh"`
	BidLow             string `json:"bidLow"`
	AskHigh            string `json:"askHigh"`
	AskLow             string `json:"askLow"`
	PriceChange        string `json:"priceChange"`
	PriceChangePercent string `json:"priceChangePercent"`
	Volatility         string `json:"volatility"`
	TradeDeals         int64  `json:"tradeDeals"`
	Volume             string `json:"volume"`
	BuyOrders          int64  `json:"buyOrders"`
	SellOrders         int64  `json:"sellOrders"`
	Time               int64  `json:"time"`
}

// Tick is the REST tick resource.
type Tick struct {
	Symbol       string `json:"symbol"`
	Bid          string `json:"bid"`
	Ask          string `json:"ask"`
	Last         string `json:"last"`
	Volume       int64  `json:"volume"`
	BidDirection int32  `json:"bidDirection"`
	AskDirection int32  `json:"askDirection"`
	Time         int64  `json:"time"`
}

// Kline is one positional kline row:
// [openTime, "o", "h", "l", "c", count, closeTime, 0].
type Kline [8]any

// AccountRecord is the account resource.
type AccountRecord struct {
	Login        int64  `json:"login"`
	Group        string `json:"group"`
	Currency     string `json:"currency"`
	Leverage     int32  `json:"leverage"`
	Balance      string `json:"balance"`
	Credit       string `json:"credit"`
	Equity       string `json:"equity"`
	Margin       string `json:"margin"`
	FreeMargin   string `json:"freeMargin"`
	Profit       string `json:"profit"`
	MarginLevel  string `json:"marginLevel"`
	TradeAllowed bool   `json:"tradeAllowed"`
	UpdateTime   int64  `json:"updateTime"`
}

// AccountItem is one item of GET /v1/accounts.
type AccountItem struct {
	Login int64 `json:"login"`
	Demo  bool  `json:"demo"`
}

// RateLimit is one item of exchangeInfo.rateLimits.
type RateLimit struct {
	RateLimitType string `json:"rateLimitType"`
	Interval      string `json:"interval"`
	IntervalNum   int    `json:"intervalNum"`
	Limit         int    `json:"limit"`
}

// SymbolInfo is the wire form of a symbol specification: its decimals as text, its sessions
// by weekday name.
type SymbolInfo struct {
	events.SymbolSpecOf[string]
	Sessions map[string][]events.Session `json:"sessions"`
}

// ExchangeInfo is the exchange information resource.
type ExchangeInfo struct {
	ServerTime                  int64        `json:"serverTime"`
	ServerTimeZoneOffsetMinutes int          `json:"serverTimeZoneOffsetMinutes"`
	RateLimits                  []RateLimit  `json:"rateLimits"`
	Symbols                     []SymbolInfo `json:"symbols"`
}

// price formats a price at the symbol's digits.
func price(d apd.Decimal, digits int32) string { return dec.Fixed(d, digits) }

// money formats an amount of money at 4 places.
func money(d apd.Decimal) string { return dec.Fixed(d, moneyPlaces) }

// plain formats a decimal whose precision the spec does not fix (lots, steps, swaps)
// with its own precision, never in exponent form.
func plain(d apd.Decimal) string { return dec.String(d) }
