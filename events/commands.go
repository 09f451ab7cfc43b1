package events

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// Requester records who asked for an operation and what exactly they sent, so that an auditor
// replaying the command topic can answer who did what, from where, and when.
type Requester struct {
	// APIKeyID is the stored id of the API key (never the key or its secret).
	APIKeyID int64 `json:"apiKeyId"`
	// SourceAddr is the client's address as the gateway saw it.
	SourceAddr string `json:"sourceAddr"`
	// Method and Path of the HTTP request.
	Method string `json:"method"`
	Path   string `json:"path"`
	// Params is the request as received: the raw query string followed by the raw body,
	// without the signature.
	Params string `json:"params"`
	// ReceivedAt is when the gateway received the request, Unix ms.
	ReceivedAt int64 `json:"receivedAt"`
}

// Operation identifies one state-changing client operation end to end.
type Operation struct {
	// OperationID is the service's id of the operation (also the envelope correlation id).
	OperationID string `json:"operationId"`
	// Login is the trading account.
	Login int64 `json:"login"`
	// ClientOrderID is the client's idempotency key (given or generated).
	ClientOrderID string `json:"clientOrderId"`
	// Tag is the 7-character correlation tag appended to the platform comment.
	Tag string `json:"tag"`
	// Attempt numbers the sends of one operation, from 1. A retry of an operation whose
	// attempt certainly did not execute (REJECTED without retcode: -1000, the dispatch window
	// passed or the trade server confirmed it did not execute; -5015, never sent) is queued
	// again as the next attempt; every other retry re-appends the same attempt (for an
	// unsettled one, to ask the executor to settle it), which consumers deduplicate on
	// (operationId, attempt).
	Attempt int `json:"attempt"`
	// Requester says who asked.
	Requester Requester `json:"requester"`
}

func loginKey(login int64) string { return strconv.FormatInt(login, 10) }

// OrderRequested is a new market or pending order (POST /v1/order, one item of a batch).
type OrderRequested struct {
	Operation
	Symbol string      `json:"symbol"`
	Side   string      `json:"side"` // BUY or SELL
	Type   string      `json:"type"` // MARKET, BUY_LIMIT, ...
	Volume apd.Decimal `json:"volume"`
	OrderPrices
	Comment string `json:"comment,omitempty"`
	// QuotedPrice is the price of the quote the gateway validated a MARKET order against
	// (ask for a buy, bid for a sell); the executor sends it to symbols in REQUEST or INSTANT
	// execution, where the trade server requotes when the market has moved from it.
	QuotedPrice *apd.Decimal `json:"quotedPrice,omitempty"`
	// QuoteBid, QuoteAsk and QuoteTime are the quote the gateway validated the order against
	// (both sides and its tick time, Unix ms), absent when no fresh quote was known: the
	// arrival price of execution-quality analysis.
	QuoteBid  *apd.Decimal `json:"quoteBid,omitempty"`
	QuoteAsk  *apd.Decimal `json:"quoteAsk,omitempty"`
	QuoteTime int64        `json:"quoteTime,omitempty"`
}

// OrderModifyRequested changes a pending order (PUT /v1/order).
type OrderModifyRequested struct {
	Operation
	OrderID int64 `json:"orderId"`
	// Symbol, Side and Type are the order's, as the read model knew them (for the response).
	Symbol string `json:"symbol"`
	Side   string `json:"side"`
	Type   string `json:"type"`
	OrderPrices
}

// OrderPrices are the prices, stops and time in force of an order: what a placement
// (OrderRequested) and a modification (OrderModifyRequested) both set. Embedded, its fields
// stand in the event's JSON where the struct stands, as they did before it was declared once.
type OrderPrices struct {
	Price          *apd.Decimal `json:"price,omitempty"`
	StopLimitPrice *apd.Decimal `json:"stopLimitPrice,omitempty"`
	SL             *apd.Decimal `json:"sl,omitempty"`
	TP             *apd.Decimal `json:"tp,omitempty"`
	TimeInForce    string       `json:"timeInForce,omitempty"`
	Expiration     int64        `json:"expiration,omitempty"`
}

// OrderCancelRequested removes a pending order (DELETE /v1/order).
type OrderCancelRequested struct {
	Operation
	OrderID int64 `json:"orderId"`
	// Symbol, Side and Type are the order's, as the read model knew them (for the response).
	Symbol string `json:"symbol"`
	Side   string `json:"side"`
	Type   string `json:"type"`
}

// PositionCloseRequested closes a position fully or partly (DELETE /v1/position, each leg
// of DELETE /v1/allOpenPositions).
type PositionCloseRequested struct {
	Operation
	PositionID int64 `json:"positionId"`
	// Symbol is the position's; Side is the side of the closing deal (opposite the position's).
	Symbol string `json:"symbol"`
	Side   string `json:"side"`
	// Volume is absent for a full close.
	Volume *apd.Decimal `json:"volume,omitempty"`
	// SweepID is set when the close is a leg of a close-all sweep.
	SweepID string `json:"sweepId,omitempty"`
}

// PositionModifyRequested changes a position's SL/TP (PUT /v1/position); zero removes a stop.
type PositionModifyRequested struct {
	Operation
	PositionID int64 `json:"positionId"`
	// Symbol and Side are the position's (Side is its direction).
	Symbol string       `json:"symbol"`
	Side   string       `json:"side"`
	SL     *apd.Decimal `json:"sl,omitempty"`
	TP     *apd.Decimal `json:"tp,omitempty"`
}

// SweepRequested is DELETE /v1/allOpenPositions: the snapshot of the login's open positions
// when the sweep was asked for, and the close operation queued for each (appended in the
// same batch as the legs' PositionCloseRequested events).
type SweepRequested struct {
	Operation
	Legs []SweepLeg `json:"legs"`
}

// SweepLeg is one position of a sweep's snapshot and the operation that closes it.
type SweepLeg struct {
	PositionID    int64  `json:"positionId"`
	OperationID   string `json:"operationId"`
	ClientOrderID string `json:"clientOrderId"`
	Tag           string `json:"tag"`
	// Volume is the position's volume when the sweep took its snapshot (what the leg asks to
	// close; absent in sweeps recorded before the field was added).
	Volume *apd.Decimal `json:"volume,omitempty"`
}

// EventType implements Event.
func (*SweepRequested) EventType() string { return "SweepRequested_v1" }

// EventType implements Event.
func (*OrderRequested) EventType() string { return "OrderRequested_v1" }

// EventType implements Event.
func (*OrderModifyRequested) EventType() string { return "OrderModifyRequested_v1" }

// EventType implements Event.
func (*OrderCancelRequested) EventType() string { return "OrderCancelRequested_v1" }

// EventType implements Event.
func (*PositionCloseRequested) EventType() string { return "PositionCloseRequested_v1" }

// EventType implements Event.
func (*PositionModifyRequested) EventType() string { return "PositionModifyRequested_v1" }

// PartitionKey implements Event: commands are ordered per login.
func (o *Operation) PartitionKey() string { return loginKey(o.Login) }

// AccountLogin implements AccountEvent.
func (o *Operation) AccountLogin() int64 { return o.Login }

func init() {
	register(func() Event { return &OrderRequested{} })
	register(func() Event { return &OrderModifyRequested{} })
	register(func() Event { return &OrderCancelRequested{} })
	register(func() Event { return &PositionCloseRequested{} })
	register(func() Event { return &PositionModifyRequested{} })
	register(func() Event { return &SweepRequested{} })
}

// OperationHeader gives every command event's Operation header to code that reads or
// re-stamps it (a retry's next attempt).
func (o *Operation) OperationHeader() *Operation { return o }

// Command is implemented by every command event: it carries an Operation header.
type Command interface {
	Event
	OperationHeader() *Operation
}
