package events

import "github.com/cockroachdb/apd/v3"

// TickReceived is one quote of a symbol from the trade server's feed.
type TickReceived struct {
	// Seq is the trade server's tick-feed sequence (per server, increasing).
	Seq          uint64      `json:"seq"`
	Symbol       string      `json:"symbol"`
	Bid          apd.Decimal `json:"bid"`
	Ask          apd.Decimal `json:"ask"`
	Last         apd.Decimal `json:"last"`
	Volume       int64       `json:"volume"`
	BidDirection int         `json:"bidDirection"`
	AskDirection int         `json:"askDirection"`
	// Time is the tick time, Unix ms.
	Time int64 `json:"time"`
	// Held marks a quote an operator set and holds: it counts as fresh until a newer tick.
	Held bool `json:"held,omitempty"`
}

// DayStatsUpdated carries the trade server's statistics of the current trading day of a
// symbol (the 24-hour ticker): published when they change, at most about once a second.
type DayStatsUpdated struct {
	Symbol             string      `json:"symbol"`
	OpenPrice          apd.Decimal `json:"openPrice"`
	HighPrice          apd.Decimal `json:"highPrice"`
	LowPrice           apd.Decimal `json:"lowPrice"`
	LastPrice          apd.Decimal `json:"lastPrice"`
	BidPrice           apd.Decimal `json:"bidPrice"`
	AskPrice           apd.Decimal `json:"askPrice"`
	BidHigh            apd.Decimal `json:"bidHigh"`
	BidLow             apd.Decimal `json:"bidLow"`
	AskHigh            apd.Decimal `json:"askHigh"`
	AskLow             apd.Decimal `json:"askLow"`
	PriceChange        apd.Decimal `json:"priceChange"`
	PriceChangePercent apd.Decimal `json:"priceChangePercent"`
	Volatility         apd.Decimal `json:"volatility"`
	TradeDeals         int64       `json:"tradeDeals"`
	Volume             apd.Decimal `json:"volume"`
	BuyOrders          int64       `json:"buyOrders"`
	SellOrders         int64       `json:"sellOrders"`
	Time               int64       `json:"time"`
}

// EventType implements Event.
func (*TickReceived) EventType() string { return "TickReceived_v1" }

// PartitionKey implements Event.
func (e *TickReceived) PartitionKey() string { return e.Symbol }

// EventType implements Event.
func (*DayStatsUpdated) EventType() string { return "DayStatsUpdated_v1" }

// PartitionKey implements Event.
func (e *DayStatsUpdated) PartitionKey() string { return e.Symbol }

func init() {
	register(func() Event { return &TickReceived{} })
	register(func() Event { return &DayStatsUpdated{} })
}
