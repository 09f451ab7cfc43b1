package trading

import "github.com/cockroachdb/apd/v3"

// The models the command side and the query side share: what the read models hold, with
// decimals as apd.Decimal (a nil pointer is a value the read model does not have yet).

// Operation is one client operation: its request (the newest attempt's command) and what
// became of it (the derived columns of rm.operations).
type Operation struct {
	OperationID   string
	Login         int64
	Tag           string
	Kind          Kind // "" until the command event is projected
	APIKeyID      int64
	ClientOrderID string
	Attempt       int
	RequestedAt   int64

	Symbol           string
	Side             string // BUY / SELL
	Type             string // MARKET, BUY_LIMIT, ...
	Volume           *apd.Decimal
	Price            *apd.Decimal
	StopLimitPrice   *apd.Decimal
	SL               *apd.Decimal
	TP               *apd.Decimal
	TimeInForce      string
	Expiration       int64
	Comment          string
	TargetOrderID    int64
	TargetPositionID int64
	SweepID          string

	// Derived: what readers show.
	Status         Status
	Code           int // service error code of a rejection (negative), 0 otherwise
	Retcode        int // the trade server's return code when it answered
	Msg            string
	OrderID        int64
	DealID         int64
	PositionID     int64
	ExecPrice      *apd.Decimal // volume-weighted fill price
	ExecutedVolume *apd.Decimal
	UpdatedAt      int64
	Version        int64
	// Deals is how many distinct trading deals confirm the fill (market orders and closes).
	Deals int
	// Decided: the executor's outcome of this attempt is in (an answer, a refusal, or word
	// that the trade server gave none).
	Decided bool
}

// Queued is the status the operation shows until it is answered.
func (op *Operation) Queued() Status { return op.Kind.Queued(op.Type) }

// Answered reports whether the operation has its answer, the point where a wait for it ends
// (Kind.Answered).
func (op *Operation) Answered() bool { return op.Kind.Answered(op) }

// Order is an order as the trade server reports it (rm.orders).
type Order struct {
	OrderID        int64
	Login          int64
	Symbol         string
	Type           OrderType
	State          OrderState
	VolumeInitial  apd.Decimal
	VolumeCurrent  apd.Decimal
	Price          apd.Decimal
	StopLimitPrice apd.Decimal
	SL             apd.Decimal
	TP             apd.Decimal
	TypeTime       TimeType
	Expiration     int64
	Comment        string
	Tag            string
	PositionID     int64
	TimeSetup      int64
	TimeDone       int64
	UpdateTime     int64
	Open           bool
	// ClientOrderID, APIKeyID and OperationID are resolved from the operation whose tag the
	// order's comment carries; empty / 0 for orders not placed through the API.
	ClientOrderID string
	APIKeyID      int64
	OperationID   string
}

// Status is the order's status from its raw state (OrderState.Status).
func (o *Order) Status() Status { return o.State.Status() }

// Position is a position as the trade server reports it (rm.positions).
type Position struct {
	PositionID int64
	Login      int64
	Symbol     string
	Direction  Side
	Volume     apd.Decimal
	PriceOpen  apd.Decimal
	SL         apd.Decimal
	TP         apd.Decimal
	Profit     apd.Decimal // as last reported by the trade server
	Swap       apd.Decimal
	Comment    string
	TimeOpen   int64
	UpdateTime int64
	Open       bool
}

// Deal is one trading deal (the deal history).
type Deal struct {
	DealID     int64
	Login      int64
	OrderID    int64
	PositionID int64
	Symbol     string
	Action     DealAction
	Entry      DealEntry
	Volume     apd.Decimal
	Price      apd.Decimal
	Profit     apd.Decimal
	Commission apd.Decimal
	Swap       apd.Decimal
	Comment    string
	Time       int64
}
