package streams

import (
	json "github.com/goccy/go-json"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// User data stream frames as docs/streams.md specifies them, rendered from the facts the
// change feed carries, without C (userConn.frame adds it for the key that owns the client
// order id). Field order follows the doc; decimals are strings: prices at the symbol's
// digits (their own precision when the symbol is unknown), volumes as the trade server keeps
// them, money at 4 places.

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

// frameStop formats a stop level: "0" when none.
func frameStop(d apd.Decimal, digits int32) string {
	if d.IsZero() {
		return "0"
	}
	return formatPrice(d, digits)
}

func frameMoney(d apd.Decimal) string { return dec.Fixed(d, 4) }

// userFrame renders a fact as its user-stream frame; digits gives a symbol's digits (-1 when
// unknown). ok is false for a fact the user stream does not carry.
func userFrame(fact events.Event, digits func(symbol string) int32) ([]byte, bool) {
	var v any
	switch x := fact.(type) {
	case *events.DealAdded:
		v = dealFrame{E: "DEAL", EventTime: x.Time, Login: x.Login, DealID: x.DealID, OrderID: x.OrderID,
			PositionID: x.PositionID, Symbol: x.Symbol, Side: trading.DealAction(x.Action).Side().String(),
			Entry: trading.DealEntry(x.Entry).String(), Volume: dec.String(x.Volume),
			Price: formatPrice(x.Price, digits(x.Symbol)), Profit: frameMoney(x.Profit),
			Commission: frameMoney(x.Commission), Swap: frameMoney(x.Swap), Comment: x.Comment, Time: x.Time}
	case *events.OrderChanged:
		dg := digits(x.Symbol)
		tif := "GTC" // the spec's inference: DAY and GTD_DAY cannot be told apart on the stream
		if x.Expiration != 0 {
			tif = "GTD"
		}
		v = orderFrame{E: "ORDER_UPDATE", EventTime: x.Time, Login: x.Login, Change: x.Change, OrderID: x.OrderID,
			Symbol: x.Symbol, Type: trading.OrderType(x.Type).String(), Status: string(trading.OrderState(x.State).Status()),
			State: x.State, Volume: dec.String(x.VolumeInitial), Remaining: dec.String(x.VolumeCurrent),
			Price: formatPrice(x.Price, dg), StopLimitPrice: "0", SL: frameStop(x.SL, dg), TP: frameStop(x.TP, dg),
			TimeInForce: tif, TimeSetup: x.TimeSetup, Expiration: x.Expiration}
	case *events.PositionChanged:
		dg := digits(x.Symbol)
		v = positionFrame{E: "POSITION_UPDATE", EventTime: x.Time, Login: x.Login, Change: x.Change,
			PositionID: x.PositionID, Symbol: x.Symbol, Side: trading.Side(x.Direction).String(),
			Volume: dec.String(x.Volume), PriceOpen: formatPrice(x.PriceOpen, dg), SL: frameStop(x.SL, dg),
			TP: frameStop(x.TP, dg), Profit: frameMoney(x.Profit), Swap: frameMoney(x.Swap), Comment: x.Comment,
			TimeOpen: x.TimeOpen}
	case *events.AccountChanged:
		v = accountFrame{E: "ACCOUNT_UPDATE", EventTime: x.Time, Login: x.Login, Change: x.Change,
			Balance: frameMoney(x.Balance), Credit: frameMoney(x.Credit)}
	default:
		return nil, false
	}
	b, err := json.Marshal(v)
	return b, err == nil
}
