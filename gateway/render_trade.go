package gateway

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/command"
	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// OrderResponse is the order operation response of POST /v1/order and, in the same shape,
// of PUT/DELETE /v1/order, PUT/DELETE /v1/position and each slot of a batch. Fields whose
// value is unknown or inapplicable are omitted, never null.
type OrderResponse struct {
	Login             int64  `json:"login"`
	ClientOrderID     string `json:"clientOrderId"`
	OrigClientOrderID string `json:"origClientOrderId,omitempty"`
	Symbol            string `json:"symbol,omitempty"`
	Side              string `json:"side,omitempty"`
	Type              string `json:"type,omitempty"`
	Volume            string `json:"volume,omitempty"`
	Status            string `json:"status"`
	OrderID           int64  `json:"orderId,omitempty"`
	DealID            int64  `json:"dealId,omitempty"`
	PositionID        int64  `json:"positionId,omitempty"`
	Price             string `json:"price,omitempty"`
	ExecutedVolume    string `json:"executedVolume,omitempty"`
	SL                string `json:"sl,omitempty"`
	TP                string `json:"tp,omitempty"`
	TimeInForce       string `json:"timeInForce,omitempty"`
	Expiration        int64  `json:"expiration,omitempty"`
	MT5RetCode        int    `json:"mt5RetCode,omitempty"`
	TransactTime      int64  `json:"transactTime"`
}

// RejectedOperation is the answer for an operation that was recorded and then rejected (or
// is in doubt): the error envelope plus status, clientOrderId and login.
type RejectedOperation struct {
	Code          events.Code
	Msg           string
	Retcode       int
	Status        string
	ClientOrderID string
	Login         int64
}

// Error implements error.
func (e *RejectedOperation) Error() string {
	return "operation " + e.ClientOrderID + " " + e.Status + ": code " + e.Code.String() + ": " + e.Msg
}

// HTTPStatus is the status of the rejection's code.
func (e *RejectedOperation) HTTPStatus() int { return e.Code.HTTPStatus() }

// The responses of the trading endpoints, rendered from the command handlers' typed results.

// RenderCoverage is what the responses handle: the kind of each TRADE route (a sweep renders
// as RenderSweep, its legs as Render). Render itself asks the kind table, never the kind.
func RenderCoverage() trading.Coverage {
	return trading.Coverage{Place: "responses (gateway)", KindsDeclared: true,
		Kinds: []trading.Kind{trading.KindPlaceOrder, trading.KindModifyOrder, trading.KindCancelOrder,
			trading.KindClosePosition, trading.KindModifyPosition, trading.KindCloseAll}}
}

// Render turns a Result into the response body, or the RejectedOperation to answer instead.
// A fresh answer to ACK (Known false) carries no orderId, dealId, positionId, price or
// executedVolume: nothing is confirmed yet.
func Render(res command.Result, transactTime int64) (OrderResponse, *RejectedOperation) {
	op := res.Op
	if op.Status.IsRefusal() {
		code, msg := events.Code(op.Code), op.Msg
		if code == 0 {
			code = events.CodeNewOrderRejected
			if op.Status == trading.StatusInDoubt {
				code = events.CodeStatusUnknown
			}
		}
		if msg == "" {
			msg = defaultMsg(op.Status)
		}
		return OrderResponse{}, &RejectedOperation{Code: code, Msg: msg, Retcode: op.Retcode, Status: string(op.Status),
			ClientOrderID: op.ClientOrderID, Login: op.Login}
	}
	r := OrderResponse{Login: op.Login, ClientOrderID: op.ClientOrderID, OrigClientOrderID: res.OrigClientOrderID,
		Symbol: op.Symbol, Side: op.Side, Type: op.Type, Status: string(op.Status), MT5RetCode: op.Retcode, TransactTime: transactTime}
	px := func(d *apd.Decimal) string {
		if d == nil || d.IsZero() {
			return ""
		}
		return dec.Fixed(*d, res.Digits)
	}
	if op.Volume != nil {
		r.Volume = dec.String(*op.Volume)
	}
	r.SL, r.TP = px(op.SL), px(op.TP)
	pending := op.Kind.Rests(op.Type)
	if pending {
		r.TimeInForce, r.Expiration = op.TimeInForce, op.Expiration
	}
	// An operation on an existing order or position answers with it; one that executes (a
	// close) goes on to its fill.
	switch op.Kind.Target() {
	case trading.TargetOrder:
		r.OrderID = op.TargetOrderID
		r.Price = px(op.Price)
	case trading.TargetPosition:
		r.PositionID = op.TargetPositionID
		r.Type = ""
	}
	if op.Kind.Target() != trading.TargetNone && !op.Kind.DealsFill() {
		return r, nil
	}
	if !res.Known {
		return r, nil
	}
	r.OrderID, r.DealID = op.OrderID, op.DealID
	if op.PositionID != 0 {
		r.PositionID = op.PositionID
	}
	if pending {
		r.DealID, r.PositionID = 0, 0
		r.Price = px(op.Price)
	} else {
		r.Price = px(op.ExecPrice)
	}
	if op.ExecutedVolume != nil && !op.ExecutedVolume.IsZero() {
		r.ExecutedVolume = dec.String(*op.ExecutedVolume)
	}
	return r, nil
}

func defaultMsg(status trading.Status) string {
	if status == trading.StatusInDoubt {
		return "Execution status unknown; retry only with the same newClientOrderId."
	}
	return "The operation was rejected."
}

// SweepResponse is the answer of DELETE /v1/allOpenPositions: the snapshot the sweep took,
// one leg per position, with each leg's status as known now.
type SweepResponse struct {
	Login         int64              `json:"login"`
	ClientOrderID string             `json:"clientOrderId"`
	Requested     int                `json:"requested"`
	Legs          []SweepLegResponse `json:"legs"`
	TransactTime  int64              `json:"transactTime"`
}

// SweepLegResponse is one leg: the position, and its close as an order response or a refusal.
type SweepLegResponse struct {
	PositionID     int64  `json:"positionId"`
	Symbol         string `json:"symbol,omitempty"`
	Side           string `json:"side,omitempty"`
	Volume         string `json:"volume,omitempty"`
	Status         string `json:"status"`
	OrderID        int64  `json:"orderId,omitempty"`
	DealID         int64  `json:"dealId,omitempty"`
	Price          string `json:"price,omitempty"`
	ExecutedVolume string `json:"executedVolume,omitempty"`
	Code           int    `json:"code,omitempty"`
	Msg            string `json:"msg,omitempty"`
	MT5RetCode     int    `json:"mt5RetCode,omitempty"`
}

// RenderSweep renders a sweep's answer.
func RenderSweep(res command.SweepResult, transactTime int64) SweepResponse {
	out := SweepResponse{Login: res.Login, ClientOrderID: res.ClientOrderID, Requested: len(res.Legs),
		Legs: make([]SweepLegResponse, 0, len(res.Legs)), TransactTime: transactTime}
	for _, leg := range res.Legs {
		body, rej := Render(command.Result{Op: leg.Op, Known: true, Digits: leg.Digits}, transactTime)
		l := SweepLegResponse{PositionID: leg.PositionID, Symbol: leg.Op.Symbol, Side: leg.Op.Side, Status: string(leg.Op.Status)}
		if rej != nil {
			l.Code, l.Msg, l.MT5RetCode = int(rej.Code), rej.Msg, rej.Retcode
		} else {
			l.Volume, l.OrderID, l.DealID, l.Price, l.ExecutedVolume, l.MT5RetCode =
				body.Volume, body.OrderID, body.DealID, body.Price, body.ExecutedVolume, body.MT5RetCode
		}
		out.Legs = append(out.Legs, l)
	}
	return out
}
