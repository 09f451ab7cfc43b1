package streams

import (
	"strconv"

	json "github.com/goccy/go-json"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/query"
)

// Market stream payloads (docs/streams.md). Field names are short, like the spec's tick
// payload: e kind, E event time (when the gateway sent it), s symbol, T the source time.
// Decimals are strings at the symbol's digits.

// tickPayload is <SYMBOL>@tick, exactly the spec's fields.
type tickPayload struct {
	Event     string `json:"e"`
	EventTime int64  `json:"E"`
	Symbol    string `json:"s"`
	Bid       string `json:"b"`
	Ask       string `json:"a"`
	Last      string `json:"l"`
	Volume    int64  `json:"v"`
	BidDir    int32  `json:"bd"`
	AskDir    int32  `json:"ad"`
	Time      int64  `json:"T"`
}

// bookTickerPayload is <SYMBOL>@bookTicker: the best bid and ask; quantities are always "0"
// (the trade server publishes no sizes), as on GET /v1/ticker/bookTicker.
type bookTickerPayload struct {
	Event     string `json:"e"`
	EventTime int64  `json:"E"`
	Symbol    string `json:"s"`
	Bid       string `json:"b"`
	BidQty    string `json:"B"`
	Ask       string `json:"a"`
	AskQty    string `json:"A"`
	Time      int64  `json:"T"`
}

// klinePayload is <SYMBOL>@kline_<interval>: the current bar, sent on every change.
type klinePayload struct {
	Event     string   `json:"e"`
	EventTime int64    `json:"E"`
	Symbol    string   `json:"s"`
	K         klineBar `json:"k"`
}

type klineBar struct {
	OpenTime  int64  `json:"t"`
	CloseTime int64  `json:"T"`
	Interval  string `json:"i"`
	Open      string `json:"o"`
	High      string `json:"h"`
	Low       string `json:"l"`
	Close     string `json:"c"`
	Count     int64  `json:"n"`
	// Closed is true on the bar's final frame, sent when the next bucket's first tick arrives.
	Closed bool `json:"x"`
}

// tickerPayload is <SYMBOL>@ticker: the trade server's statistics of its trading day.
type tickerPayload struct {
	Event              string `json:"e"`
	EventTime          int64  `json:"E"`
	Symbol             string `json:"s"`
	Open               string `json:"o"`
	High               string `json:"h"`
	Low                string `json:"l"`
	Last               string `json:"c"`
	Bid                string `json:"b"`
	Ask                string `json:"a"`
	BidHigh            string `json:"bh"`
	BidLow             string `json:"bl"`
	AskHigh            string `json:"ah"`
	AskLow             string `json:"al"`
	PriceChange        string `json:"p"`
	PriceChangePercent string `json:"P"`
	Volatility         string `json:"vt"`
	TradeDeals         int64  `json:"n"`
	Volume             string `json:"v"`
	BuyOrders          int64  `json:"bo"`
	SellOrders         int64  `json:"so"`
	Time               int64  `json:"T"`
}

// depthPayload is <SYMBOL>@depth on a symbol enabled by configuration: the top of the book
// as [price, quantity] levels (one level each side; quantities "0" as the server has none).
type depthPayload struct {
	Event     string      `json:"e"`
	EventTime int64       `json:"E"`
	Symbol    string      `json:"s"`
	Bids      [][2]string `json:"b"`
	Asks      [][2]string `json:"a"`
	Time      int64       `json:"T"`
}

// formatPrice renders a price at digits; digits < 0 (unknown) keeps its own precision.
func formatPrice(d apd.Decimal, digits int32) string {
	if digits < 0 {
		return dec.String(d)
	}
	return dec.Fixed(d, digits)
}

func encodeTick(q *query.Quote, digits int32, now int64) []byte {
	return mustJSON(tickPayload{Event: "tick", EventTime: now, Symbol: q.Symbol, Bid: formatPrice(q.Bid, digits),
		Ask: formatPrice(q.Ask, digits), Last: formatPrice(q.Last, digits), Volume: q.Volume,
		BidDir: q.BidDirection, AskDir: q.AskDirection, Time: q.Time})
}

func encodeBookTicker(q *query.Quote, digits int32, now int64) []byte {
	return mustJSON(bookTickerPayload{Event: "bookTicker", EventTime: now, Symbol: q.Symbol,
		Bid: formatPrice(q.Bid, digits), BidQty: "0", Ask: formatPrice(q.Ask, digits), AskQty: "0", Time: q.Time})
}

func encodeDepth(q *query.Quote, digits int32, now int64) []byte {
	return mustJSON(depthPayload{Event: "depth", EventTime: now, Symbol: q.Symbol,
		Bids: [][2]string{{formatPrice(q.Bid, digits), "0"}}, Asks: [][2]string{{formatPrice(q.Ask, digits), "0"}}, Time: q.Time})
}

func encodeKline(symbol string, iv int, b *bar, closed bool, digits int32, now int64) []byte {
	return mustJSON(klinePayload{Event: "kline", EventTime: now, Symbol: symbol, K: klineBar{
		OpenTime: b.openTime, CloseTime: b.openTime + KlineIntervals[iv].Ms - 1, Interval: KlineIntervals[iv].Name,
		Open: formatPrice(b.o, digits), High: formatPrice(b.h, digits), Low: formatPrice(b.l, digits),
		Close: formatPrice(b.c, digits), Count: b.n, Closed: closed}})
}

// encodeTicker renders day statistics. The percentage change is derived from open and last
// (the spec: derived on the streamed path, agreeing with the server's statistic to rounding).
func encodeTicker(s *query.DayStats, digits int32, now int64) []byte {
	return mustJSON(tickerPayload{Event: "ticker", EventTime: now, Symbol: s.Symbol,
		Open: formatPrice(s.Open, digits), High: formatPrice(s.High, digits), Low: formatPrice(s.Low, digits),
		Last: formatPrice(s.Last, digits), Bid: formatPrice(s.Bid, digits), Ask: formatPrice(s.Ask, digits),
		BidHigh: formatPrice(s.BidHigh, digits), BidLow: formatPrice(s.BidLow, digits),
		AskHigh: formatPrice(s.AskHigh, digits), AskLow: formatPrice(s.AskLow, digits),
		PriceChange: formatPrice(s.PriceChange, digits), PriceChangePercent: changePercent(s.Open, s.Last),
		Volatility: dec.Fixed(s.Volatility, 2), TradeDeals: s.TradeDeals, Volume: dec.String(s.Volume),
		BuyOrders: s.BuyOrders, SellOrders: s.SellOrders, Time: s.Time})
}

// pctContext computes percentages exactly enough for two places.
var pctContext = apd.BaseContext.WithPrecision(34)

// changePercent is (last - open) / open * 100 at 2 places, "0.00" without an open price.
func changePercent(open, last apd.Decimal) string {
	if open.IsZero() || open.Form != apd.Finite || last.Form != apd.Finite {
		return "0.00"
	}
	var diff, q, p apd.Decimal
	_, _ = pctContext.Sub(&diff, &last, &open)
	_, _ = pctContext.Quo(&q, &diff, &open)
	_, _ = pctContext.Mul(&p, &q, apd.New(100, 0))
	return dec.Fixed(p, 2)
}

// wrapCombined wraps a payload for the combined endpoint: {"stream":name,"data":payload}.
func wrapCombined(name string, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+len(name)+24)
	b = append(b, `{"stream":`...)
	b = strconv.AppendQuote(b, name) // names are printable ASCII without quotes (validSymbol)
	b = append(b, `,"data":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// mustJSON encodes v; the payload types hold only strings, integers and booleans, which
// always encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("streams: encode payload: " + err.Error())
	}
	return b
}
