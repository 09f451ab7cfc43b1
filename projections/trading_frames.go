package projections

import (
	"encoding/json"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/query"
)

// User data stream frames as docs/streams.md specifies them, without C (the pusher adds it
// for the key that owns the client order id). Field order follows the doc; decimals are
// strings: prices at the symbol's digits, volumes as the trade server keeps them, money at 4
// places.

// Change-feed kinds (rm.changes.kind).
const (
	ChangeDeal           = "DEAL"
	ChangeOrderUpdate    = "ORDER_UPDATE"
	ChangePositionUpdate = "POSITION_UPDATE"
	ChangeAccountUpdate  = "ACCOUNT_UPDATE"
	ChangeOperation      = "OPERATION"
)

type dealFrame struct {
	E          string `json:"e"`
	EventTime  int64  `json:"E"`
	Login      int64  `json:"L"`
	DealID     int64  `json:"d"`
	OrderID    int64  `json:"o"`
	PositionID int64  `json:"P"`
	Symbol     string `json:"s"`
	Side       string `json:"S"`
	Entry      string `json:"en"`
	Volume     string `json:"q"`
	Price      string `json:"p"`
	Profit     string `json:"rp"`
	Commission string `json:"n"`
	Swap       string `json:"sw"`
	Comment    string `json:"c"`
	Time       int64  `json:"T"`
}

type orderFrame struct {
	E              string `json:"e"`
	EventTime      int64  `json:"E"`
	Login          int64  `json:"L"`
	Change         string `json:"x"`
	OrderID        int64  `json:"o"`
	Symbol         string `json:"s"`
	Type           string `json:"ot"`
	Status         string `json:"X"`
	State          int    `json:"mst"`
	Volume         string `json:"q"`
	Remaining      string `json:"qr"`
	Price          string `json:"p"`
	StopLimitPrice string `json:"sp"`
	SL             string `json:"sl"`
	TP             string `json:"tp"`
	TimeInForce    string `json:"tif"`
	TimeSetup      int64  `json:"ts"`
	Expiration     int64  `json:"ex"`
}

type positionFrame struct {
	E          string `json:"e"`
	EventTime  int64  `json:"E"`
	Login      int64  `json:"L"`
	Change     string `json:"x"`
	PositionID int64  `json:"i"`
	Symbol     string `json:"s"`
	Side       string `json:"S"`
	Volume     string `json:"q"`
	PriceOpen  string `json:"p"`
	SL         string `json:"sl"`
	TP         string `json:"tp"`
	Profit     string `json:"pr"`
	Swap       string `json:"sw"`
	Comment    string `json:"c"`
	TimeOpen   int64  `json:"T"`
}

type accountFrame struct {
	E         string `json:"e"`
	EventTime int64  `json:"E"`
	Login     int64  `json:"L"`
	Change    string `json:"x"`
	Balance   string `json:"b"`
	Credit    string `json:"cr"`
}

// operationFrame wakes RESULT waiters; version orders the states of one operation.
type operationFrame struct {
	Status   string `json:"status"`
	Version  int64  `json:"version"`
	Answered bool   `json:"answered"`
}

// digitsFunc returns a symbol's digits; ok is false when the symbol is unknown.
type digitsFunc func(symbol string) (int32, bool)

// framePrice formats a price at the symbol's digits, or at its own precision when the
// symbol is unknown.
func framePrice(d apd.Decimal, digits int32, ok bool) string {
	if !ok {
		return dec.String(d)
	}
	return dec.Fixed(d, digits)
}

// frameStop formats a stop level: "0" when none.
func frameStop(d apd.Decimal, digits int32, ok bool) string {
	if d.IsZero() {
		return "0"
	}
	return framePrice(d, digits, ok)
}

func frameMoney(d apd.Decimal) string { return dec.Fixed(d, 4) }

func dealFrameOf(d *events.DealAdded, digits digitsFunc) ([]byte, error) {
	dg, ok := digits(d.Symbol)
	return json.Marshal(dealFrame{E: ChangeDeal, EventTime: d.Time, Login: d.Login, DealID: d.DealID,
		OrderID: d.OrderID, PositionID: d.PositionID, Symbol: d.Symbol, Side: query.DirectionName(d.Action),
		Entry: query.EntryName(d.Entry), Volume: dec.String(d.Volume), Price: framePrice(d.Price, dg, ok),
		Profit: frameMoney(d.Profit), Commission: frameMoney(d.Commission), Swap: frameMoney(d.Swap),
		Comment: d.Comment, Time: d.Time})
}

func orderFrameOf(o *events.OrderChanged, digits digitsFunc) ([]byte, error) {
	dg, ok := digits(o.Symbol)
	tif := "GTC" // the spec's inference: DAY and GTD_DAY cannot be told apart on the stream
	if o.Expiration != 0 {
		tif = "GTD"
	}
	return json.Marshal(orderFrame{E: ChangeOrderUpdate, EventTime: o.Time, Login: o.Login, Change: o.Change,
		OrderID: o.OrderID, Symbol: o.Symbol, Type: query.PlatformOrderType(o.Type),
		Status: query.StatusOfState(o.State), State: o.State, Volume: dec.String(o.VolumeInitial),
		Remaining: dec.String(o.VolumeCurrent), Price: framePrice(o.Price, dg, ok), StopLimitPrice: "0",
		SL: frameStop(o.SL, dg, ok), TP: frameStop(o.TP, dg, ok), TimeInForce: tif, TimeSetup: o.TimeSetup,
		Expiration: o.Expiration})
}

func positionFrameOf(p *events.PositionChanged, digits digitsFunc) ([]byte, error) {
	dg, ok := digits(p.Symbol)
	return json.Marshal(positionFrame{E: ChangePositionUpdate, EventTime: p.Time, Login: p.Login, Change: p.Change,
		PositionID: p.PositionID, Symbol: p.Symbol, Side: query.DirectionName(p.Direction),
		Volume: dec.String(p.Volume), PriceOpen: framePrice(p.PriceOpen, dg, ok), SL: frameStop(p.SL, dg, ok),
		TP: frameStop(p.TP, dg, ok), Profit: frameMoney(p.Profit), Swap: frameMoney(p.Swap), Comment: p.Comment,
		TimeOpen: p.TimeOpen})
}

func accountFrameOf(a *events.AccountChanged) ([]byte, error) {
	return json.Marshal(accountFrame{E: ChangeAccountUpdate, EventTime: a.Time, Login: a.Login, Change: a.Change,
		Balance: frameMoney(a.Balance), Credit: frameMoney(a.Credit)})
}

// tagOf returns the correlation tag a platform comment ends with ("#" and 6 letters or
// digits), or "" when it carries none.
func tagOf(comment string) string {
	if len(comment) < 7 {
		return ""
	}
	tag := comment[len(comment)-7:]
	if tag[0] != '#' {
		return ""
	}
	for i := 1; i < 7; i++ {
		c := tag[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return ""
		}
	}
	return strings.Clone(tag)
}
