package query

import "github.com/cockroachdb/apd/v3"

// Trading read models (Postgres, built by projection.trading; see
// infra/postgres/migrations/0102_trading_read_models.sql). Decimals are apd.Decimal; a nil
// pointer is a value the read model does not have (yet).

// Operation kinds: what a client operation asked for. A different kind under a client order
// id already used by the key is -1133.
const (
	KindPlaceOrder     = "PLACE_ORDER"
	KindModifyOrder    = "MODIFY_ORDER"
	KindCancelOrder    = "CANCEL_ORDER"
	KindClosePosition  = "CLOSE_POSITION"
	KindModifyPosition = "MODIFY_POSITION"
	KindCloseAll       = "CLOSE_ALL"
)

// Operation is one client operation (rm.operations) with its derived status.
type Operation struct {
	OperationID   string
	Login         int64
	Tag           string
	Kind          string // "" until the command event is projected
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
	Status         string
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
}

// Order is an order as the trade server reports it (rm.orders).
type Order struct {
	OrderID        int64
	Login          int64
	Symbol         string
	Type           int // platform order type 0..8
	State          int // raw state (mst) 0..9
	VolumeInitial  apd.Decimal
	VolumeCurrent  apd.Decimal
	Price          apd.Decimal
	StopLimitPrice apd.Decimal
	SL             apd.Decimal
	TP             apd.Decimal
	TypeTime       int // 0 GTC, 1 DAY, 2 GTD, 3 GTD_DAY
	Expiration     int64
	Comment        string
	Tag            string
	PositionID     int64
	TimeSetup      int64
	TimeDone       int64
	UpdateTime     int64
	Open           bool
	// ClientOrderID and APIKeyID are resolved from the operation whose tag the order's
	// comment carries; empty / 0 for orders not placed through the API.
	ClientOrderID string
	APIKeyID      int64
}

// Position is a position as the trade server reports it (rm.positions).
type Position struct {
	PositionID int64
	Login      int64
	Symbol     string
	Direction  int // 0 BUY, 1 SELL
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

// Deal is one trading deal (ClickHouse deal history).
type Deal struct {
	DealID     int64
	Login      int64
	OrderID    int64
	PositionID int64
	Symbol     string
	Action     int // 0 buy, 1 sell
	Entry      int // 0 IN, 1 OUT, 2 INOUT, 3 OUT_BY
	Volume     apd.Decimal
	Price      apd.Decimal
	Profit     apd.Decimal
	Commission apd.Decimal
	Swap       apd.Decimal
	Comment    string
	Time       int64
}
