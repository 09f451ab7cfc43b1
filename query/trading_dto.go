package query

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// Wire shapes of the trading reads. Fields whose value is unknown or inapplicable are
// omitted (never null); sl, tp and stopLimitPrice are always present, "0" when none.

// OrderRecord is the order record (GET /v1/openOrders, items of GET /v1/allOrders) and, with
// the fields after UpdateTime, the answer of GET /v1/order.
type OrderRecord struct {
	Login           int64  `json:"login"`
	OrderID         int64  `json:"orderId,omitempty"`
	ClientOrderID   string `json:"clientOrderId,omitempty"`
	Symbol          string `json:"symbol"`
	Side            string `json:"side,omitempty"`
	Type            string `json:"type,omitempty"`
	Status          string `json:"status"`
	Volume          string `json:"volume,omitempty"`
	RemainingVolume string `json:"remainingVolume,omitempty"`
	Price           string `json:"price,omitempty"`
	StopLimitPrice  string `json:"stopLimitPrice"`
	SL              string `json:"sl"`
	TP              string `json:"tp"`
	TimeInForce     string `json:"timeInForce,omitempty"`
	Expiration      int64  `json:"expiration"`
	Comment         string `json:"comment"`
	Time            int64  `json:"time"`
	UpdateTime      int64  `json:"updateTime"`
	// GET /v1/order only.
	ExecutedVolume string `json:"executedVolume,omitempty"`
	DealID         int64  `json:"dealId,omitempty"`
	PositionID     int64  `json:"positionId,omitempty"`
	Code           int    `json:"code,omitempty"`
	Msg            string `json:"msg,omitempty"`
	MT5RetCode     int    `json:"mt5RetCode,omitempty"`
}

// PositionRecord is one item of GET /v1/positions.
type PositionRecord struct {
	PositionID   int64  `json:"positionId"`
	Login        int64  `json:"login"`
	Symbol       string `json:"symbol"`
	Side         string `json:"side"`
	Volume       string `json:"volume"`
	OpenPrice    string `json:"openPrice"`
	CurrentPrice string `json:"currentPrice,omitempty"`
	SL           string `json:"sl"`
	TP           string `json:"tp"`
	Profit       string `json:"profit"`
	Swap         string `json:"swap"`
	Comment      string `json:"comment"`
	OpenTime     int64  `json:"openTime"`
	UpdateTime   int64  `json:"updateTime"`
}

// DealRecord is one item of GET /v1/userTrades.
type DealRecord struct {
	Login      int64  `json:"login"`
	DealID     int64  `json:"dealId"`
	OrderID    int64  `json:"orderId"`
	PositionID int64  `json:"positionId"`
	Symbol     string `json:"symbol"`
	Side       string `json:"side"`
	Entry      string `json:"entry"`
	Volume     string `json:"volume"`
	Price      string `json:"price"`
	Profit     string `json:"profit"`
	Commission string `json:"commission"`
	Swap       string `json:"swap"`
	Comment    string `json:"comment"`
	Time       int64  `json:"time"`
}

// symbolDigits formats prices of one symbol: at its digits when the symbol is known, else at
// the decimal's own precision (an order on a symbol since removed).
type symbolDigits struct {
	digits int32
	known  bool
}

func (s symbolDigits) price(d apd.Decimal) string {
	if !s.known {
		return plain(d)
	}
	return price(d, s.digits)
}

// stop formats an optional level: "0" when none.
func (s symbolDigits) stop(d apd.Decimal) string {
	if d.IsZero() {
		return "0"
	}
	return s.price(d)
}

func (s symbolDigits) stopPtr(d *apd.Decimal) string {
	if d == nil {
		return "0"
	}
	return s.stop(*d)
}

// orderRecord renders an order of the read model; ClientOrderID only for the key that owns it.
func orderRecord(o trading.Order, apiKeyID int64, sd symbolDigits) OrderRecord {
	r := OrderRecord{Login: o.Login, OrderID: o.OrderID, Symbol: o.Symbol, Side: o.Type.Side().String(),
		Type: o.Type.RecordName(), Status: string(o.Status()), Volume: plain(o.VolumeInitial),
		RemainingVolume: plain(o.VolumeCurrent), Price: sd.price(o.Price), StopLimitPrice: sd.stop(o.StopLimitPrice),
		SL: sd.stop(o.SL), TP: sd.stop(o.TP), Expiration: o.Expiration, Comment: o.Comment, Time: o.TimeSetup,
		UpdateTime: o.UpdateTime}
	if !o.Type.IsMarket() {
		r.TimeInForce = o.TypeTime.String()
	}
	if o.APIKeyID != 0 && o.APIKeyID == apiKeyID {
		r.ClientOrderID = o.ClientOrderID
	}
	return r
}

// volumePlaces is the precision of a symbol's volume step (0.01 → 2), or -1 when unknown.
func volumePlaces(spec trading.SymbolSpec, ok bool) int32 {
	if !ok || spec.VolumeStep.Form != apd.Finite || spec.VolumeStep.IsZero() {
		return -1
	}
	var r apd.Decimal
	r.Reduce(&spec.VolumeStep)
	if r.Exponent >= 0 {
		return 0
	}
	return -r.Exponent
}

// volumeAt formats lots at places (-1: reduced to their significant digits).
func volumeAt(d apd.Decimal, places int32) string {
	if places < 0 {
		var r apd.Decimal
		r.Reduce(&d)
		return plain(r)
	}
	return dec.Fixed(d, places)
}
