package command

import (
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// The commands, as the gateway decodes them from a request's parameters: typed values only.
// Parameter names, their syntax and the -11xx codes stay at the edge; a handler checks the
// rules that need the read models (the symbol's rules, the order or position addressed, the
// market) and answers with typed results or *events.Rejection.

// Caller is who sends an operation: the API key (its stored id is the idempotency scope)
// and what the gateway saw of the request, for the command log's audit trail.
type Caller struct {
	APIKeyID  int64
	Requester events.Requester
	// Received is when the gateway received the request (the stage timings count from it).
	Received time.Time
}

// ClientID is the client's idempotency key: the newClientOrderId it sent, or one the gateway
// generated (Given false), which no retry can name.
type ClientID struct {
	ID    string
	Given bool
}

// Base is what every operation carries: who asks, for which account, under which client
// order id, and whether the account may trade (false: -2024 for every new operation).
type Base struct {
	Caller       Caller
	Login        int64
	ClientID     ClientID
	TradeAllowed bool
}

// OrderRequest is a new order: a market order (Type 0 or 1) or one of the six pending types.
type OrderRequest struct {
	Symbol string
	Type   trading.OrderType
	Volume apd.Decimal
	// Price is the pending order's price; StopLimitPrice a stop-limit's limit price.
	Price, StopLimitPrice *apd.Decimal
	// SL and TP are nil when none.
	SL, TP *apd.Decimal
	// TimeInForce and Expiration apply to pending orders (Expiration for GTD, GTD_DAY).
	TimeInForce trading.TimeType
	Expiration  int64
	Comment     string
}

// PlaceOrder is POST /v1/order, or one item of POST /v1/batchOrders.
type PlaceOrder struct {
	Base
	Order OrderRequest
}

// OrderRef names a pending order: by its id, or by the client order id of the caller's
// placement when OrderID is nil.
type OrderRef struct {
	OrderID           *int64
	OrigClientOrderID string
}

// Stop is a stop level a modification may set: not Sent keeps the current one; Value nil
// (sent as 0) removes it.
type Stop struct {
	Sent  bool
	Value *apd.Decimal
}

// ModifyOrder is PUT /v1/order: change a pending order's price, stop-limit price, stops or
// expiration. A value not sent keeps the order's current one.
type ModifyOrder struct {
	Base
	Target OrderRef
	// Price is the new price (nil: keep).
	Price *apd.Decimal
	// StopLimitPrice is the new limit price of a stop-limit order: Sent with Value nil (an
	// empty value) is refused like a price of zero.
	StopLimitPrice Stop
	SL, TP         Stop
	// TimeInForce is the new time in force (nil: keep); Expiration the new expiration (nil:
	// keep the order's when its time type stays).
	TimeInForce *trading.TimeType
	Expiration  *int64
}

// CancelOrder is DELETE /v1/order: remove a pending order.
type CancelOrder struct {
	Base
	Target OrderRef
}

// ClosePosition is DELETE /v1/position: close a position fully (Volume nil) or partly.
type ClosePosition struct {
	Base
	PositionID int64
	Volume     *apd.Decimal
}

// ModifyPosition is PUT /v1/position: change a position's SL/TP in place.
type ModifyPosition struct {
	Base
	PositionID int64
	SL, TP     Stop
}

// CloseAll is DELETE /v1/allOpenPositions: close every open position of the login.
type CloseAll struct {
	Base
}

// Result is what a command handler answers: the operation as known when it answered.
type Result struct {
	// Op is the operation: from the read model when Known (a retry of an operation the read
	// model has seen), else as the request describes it, in its queued status.
	Op    trading.Operation
	Known bool
	// Fresh: this call recorded and queued the operation (not a retry of a recorded one).
	Fresh bool
	// Digits is the symbol's price precision, for rendering.
	Digits int32
	// OrigClientOrderID is, for a cancel, the client order id of the order it cancels when the
	// caller's key placed it.
	OrigClientOrderID string
}

// Outcome is one operation's answer among several (the items of a batch): its Result, or
// why it was refused.
type Outcome struct {
	Result Result
	Err    error
}

// SweepLeg is one position of a sweep's snapshot and its close operation as known now.
type SweepLeg struct {
	PositionID int64
	Op         trading.Operation
	Digits     int32
}

// SweepResult is a sweep's answer: its snapshot, leg by leg.
type SweepResult struct {
	Login         int64
	ClientOrderID string
	Legs          []SweepLeg
}

// Limits of the spec ("Request and parameter limits") the gateway's decoder applies.
const (
	MaxClientOrderIDLen = trading.MaxClientOrderIDLen
	MaxCommentLen       = 24
	// MaxBatchItems is the most orders one POST /v1/batchOrders carries.
	MaxBatchItems = 100
)
