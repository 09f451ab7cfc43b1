package query

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

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
	// Deals is how many distinct trading deals confirm the fill (market orders and closes).
	Deals int
	// Decided: the executor's outcome of this attempt is in (an answer, a refusal, or word
	// that the trade server gave none).
	Decided bool
}

// Answered reports whether an operation has its answer, the point where a wait for it ends:
// its status moved from the queued one, or it carries a code or a trade server's return code;
// and a fill (of a market order or a close) is confirmed by its deals, so that a client that
// reads its positions next sees the position the fill made, and has the executor's outcome.
func Answered(op Operation, queued string) bool {
	if op.Status == queued && op.Code == 0 && op.Retcode == 0 {
		return false
	}
	fill := op.Status == "FILLED" || op.Status == "PARTIALLY_FILLED"
	if fill && (op.Kind == KindClosePosition || op.Kind == KindPlaceOrder && op.Type == "MARKET") {
		// Confirmed by its deals, and the executor's word is in too (the deals can come
		// first: the answer then also carries the trade server's return code).
		return op.Deals > 0 && op.Decided
	}
	return true
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
	// ClientOrderID, APIKeyID and OperationID are resolved from the operation whose tag the
	// order's comment carries; empty / 0 for orders not placed through the API.
	ClientOrderID string
	APIKeyID      int64
	OperationID   string
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

// OrdersWindow selects the orders of GET /v1/allOrders: setup time in [From, To] (inclusive,
// Unix ms), of one symbol when Symbol is set, with an id of at least FromOrderID (0: any), the
// oldest Limit by setup time.
type OrdersWindow struct {
	Symbol      string
	FromOrderID int64
	From, To    int64
	Limit       int
}

// TradesWindow selects the deals of GET /v1/userTrades: deal time in [From, To], or, when
// FromID is set, every deal with an id of at least *FromID whatever its time; of one symbol
// when Symbol is set; the first Limit by deal id.
type TradesWindow struct {
	Symbol   string
	FromID   *int64
	From, To int64
	Limit    int
}

// Platform enumerations as the wire names them. A value the spec does not name is
// "UNKNOWN_<n>", so a new platform value never crashes a reader.

func unknownEnum(n int) string { return "UNKNOWN_" + strconv.Itoa(n) }

var platformOrderTypes = []string{"BUY", "SELL", "BUY_LIMIT", "SELL_LIMIT", "BUY_STOP", "SELL_STOP",
	"BUY_STOP_LIMIT", "SELL_STOP_LIMIT", "CLOSE_BY"}

// PlatformOrderType names a platform order type as an ORDER_UPDATE's `ot` does: BUY and SELL
// for the market types 0 and 1.
func PlatformOrderType(t int) string {
	if t >= 0 && t < len(platformOrderTypes) {
		return platformOrderTypes[t]
	}
	return unknownEnum(t)
}

// OrderRecordType names a platform order type as order records do: MARKET for 0 and 1.
func OrderRecordType(t int) string {
	if t == 0 || t == 1 {
		return "MARKET"
	}
	return PlatformOrderType(t)
}

// OrderSide is the side of a platform order type: even types buy, odd types sell.
func OrderSide(t int) string {
	if t%2 == 0 {
		return "BUY"
	}
	return "SELL"
}

// IsMarketType reports whether a platform order type is a market order (0 buy, 1 sell):
// such orders pass through the book and are never reported as ORDER_UPDATE.
func IsMarketType(t int) bool { return t == 0 || t == 1 }

// StatusOfState maps a raw order state (mst) to the pending-order status: 0, 1, 7, 8, 9 NEW
// (7 to 9 are transient, the order is live); 3 PARTIALLY_FILLED; 4 FILLED; 2 CANCELED;
// 6 EXPIRED; 5 REJECTED.
func StatusOfState(state int) string {
	switch state {
	case 0, 1, 7, 8, 9:
		return "NEW"
	case 2:
		return "CANCELED"
	case 3:
		return "PARTIALLY_FILLED"
	case 4:
		return "FILLED"
	case 5:
		return "REJECTED"
	case 6:
		return "EXPIRED"
	}
	return unknownEnum(state)
}

// TimeInForceName names a platform time type: GTC 0, DAY 1, GTD 2, GTD_DAY 3.
func TimeInForceName(t int) string {
	switch t {
	case 0:
		return "GTC"
	case 1:
		return "DAY"
	case 2:
		return "GTD"
	case 3:
		return "GTD_DAY"
	}
	return unknownEnum(t)
}

// EntryName names a deal entry: IN 0, OUT 1, INOUT 2, OUT_BY 3.
func EntryName(e int) string {
	switch e {
	case 0:
		return "IN"
	case 1:
		return "OUT"
	case 2:
		return "INOUT"
	case 3:
		return "OUT_BY"
	}
	return unknownEnum(e)
}

// DirectionName names a position direction or a trading deal's action: BUY 0, SELL 1.
func DirectionName(d int) string {
	switch d {
	case 0:
		return "BUY"
	case 1:
		return "SELL"
	}
	return unknownEnum(d)
}

// QueuedStatus is the status an operation of kind shows until it is answered: ACCEPTED,
// except NEW for a pending placement (typ is not MARKET) and for an order modification.
func QueuedStatus(kind, typ string) string {
	switch {
	case kind == KindPlaceOrder && typ != "" && typ != "MARKET":
		return "NEW"
	case kind == KindModifyOrder:
		return "NEW"
	}
	return "ACCEPTED"
}
