package trading

// The platform's enumerations, numbered as MT5 numbers them (so that a Manager-API bridge maps
// them one to one), each with the spec's wire names. A value the spec does not name prints as
// UNKNOWN_<n>.

// Side is an order's side, a position's direction and a trading deal's action: BUY 0, SELL 1.
type Side int

// Sides.
const (
	Buy  Side = 0
	Sell Side = 1
)

var sideNames = enum[Side]{"BUY", "SELL"}

func (s Side) String() string { return sideNames.name(s) }

// Opposite is the other side (the side of a deal that closes a position of side s).
func (s Side) Opposite() Side { return 1 - s }

// ParseSide reads BUY or SELL.
func ParseSide(s string) (Side, bool) { return sideNames.parse(s) }

// OrderType is the platform's order type (ORDER_TYPE_*): even types buy, odd types sell.
type OrderType int

// Order types.
const (
	OrderBuy           OrderType = 0
	OrderSell          OrderType = 1
	OrderBuyLimit      OrderType = 2
	OrderSellLimit     OrderType = 3
	OrderBuyStop       OrderType = 4
	OrderSellStop      OrderType = 5
	OrderBuyStopLimit  OrderType = 6
	OrderSellStopLimit OrderType = 7
	OrderCloseBy       OrderType = 8
)

var orderTypeNames = enum[OrderType]{"BUY", "SELL", "BUY_LIMIT", "SELL_LIMIT", "BUY_STOP", "SELL_STOP", "BUY_STOP_LIMIT",
	"SELL_STOP_LIMIT", "CLOSE_BY"}

// TypeMarket is the sendable name of the two market types (0 buy, 1 sell): the side says which.
const TypeMarket = "MARKET"

// String is the name an ORDER_UPDATE's `ot` uses: BUY and SELL for the market types.
func (t OrderType) String() string { return orderTypeNames.name(t) }

// RecordName is the name order records and operations use: MARKET for the market types.
func (t OrderType) RecordName() string {
	if t.IsMarket() {
		return TypeMarket
	}
	return t.String()
}

// Side is the side the type implies.
func (t OrderType) Side() Side { return Side(t % 2) }

// IsBuy reports whether the order buys (even types).
func (t OrderType) IsBuy() bool { return t%2 == 0 }

// IsMarket reports whether the type is a market order (0, 1): it passes through the book and
// is never reported as an ORDER_UPDATE.
func (t OrderType) IsMarket() bool { return t == OrderBuy || t == OrderSell }

// IsPending reports whether the type rests on the book (2..7).
func (t OrderType) IsPending() bool { return t >= OrderBuyLimit && t <= OrderSellStopLimit }

// IsStopLimit reports whether the type places a limit order when its price is touched.
func (t OrderType) IsStopLimit() bool { return t == OrderBuyStopLimit || t == OrderSellStopLimit }

// Mode is the symbol order mode the type needs.
func (t OrderType) Mode() OrderMode {
	switch t {
	case OrderBuy, OrderSell:
		return ModeMarket
	case OrderBuyLimit, OrderSellLimit:
		return ModeLimit
	case OrderBuyStop, OrderSellStop:
		return ModeStop
	case OrderBuyStopLimit, OrderSellStopLimit:
		return ModeStopLimit
	case OrderCloseBy:
		return ModeCloseBy
	}
	return 0
}

// ParseSendable reads a sendable order type name: MARKET (the side picks 0 or 1) or one of the
// six pending types (their own side). ok is false for any other name, CLOSE_BY included.
func ParseSendable(name string, side Side) (OrderType, bool) {
	if name == TypeMarket {
		return OrderType(side), side == Buy || side == Sell
	}
	t, ok := orderTypeNames.parse(name)
	return t, ok && t.IsPending()
}

// IsPendingName reports whether name is one of the six pending order types.
func IsPendingName(name string) bool {
	t, ok := ParseSendable(name, Buy)
	return ok && t.IsPending()
}

// OrderState is the raw order state (ORDER_STATE_*, the wire's `mst`).
type OrderState int

// Raw order states.
const (
	StateStarted       OrderState = 0
	StatePlaced        OrderState = 1
	StateCanceled      OrderState = 2
	StatePartial       OrderState = 3
	StateFilled        OrderState = 4
	StateRejected      OrderState = 5
	StateExpired       OrderState = 6
	StateRequestAdd    OrderState = 7
	StateRequestModify OrderState = 8
	StateRequestCancel OrderState = 9
)

var orderStateNames = enum[OrderState]{"STARTED", "PLACED", "CANCELED", "PARTIAL", "FILLED", "REJECTED", "EXPIRED",
	"REQUEST_ADD", "REQUEST_MODIFY", "REQUEST_CANCEL"}

func (s OrderState) String() string { return orderStateNames.name(s) }

// Status maps a raw state to the pending-order status (the spec's raw-state mapping): 0, 1,
// 7, 8, 9 NEW (7 to 9 are transient, the order is live); 3 PARTIALLY_FILLED; 4 FILLED;
// 2 CANCELED; 6 EXPIRED; 5 REJECTED.
func (s OrderState) Status() Status {
	switch s {
	case StateStarted, StatePlaced, StateRequestAdd, StateRequestModify, StateRequestCancel:
		return StatusNew
	case StateCanceled:
		return StatusCanceled
	case StatePartial:
		return StatusPartiallyFilled
	case StateFilled:
		return StatusFilled
	case StateRejected:
		return StatusRejected
	case StateExpired:
		return StatusExpired
	}
	return Status(unknown(int(s)))
}

// TimeType is the platform's time type (ORDER_TIME_*), the spec's timeInForce.
type TimeType int

// Times in force.
const (
	TimeGTC          TimeType = 0
	TimeDay          TimeType = 1
	TimeSpecified    TimeType = 2 // GTD
	TimeSpecifiedDay TimeType = 3 // GTD_DAY
)

var timeTypeNames = enum[TimeType]{"GTC", "DAY", "GTD", "GTD_DAY"}

func (t TimeType) String() string { return timeTypeNames.name(t) }

// NeedsExpiration reports whether the time type runs until an expiration (GTD, GTD_DAY).
func (t TimeType) NeedsExpiration() bool { return t == TimeSpecified || t == TimeSpecifiedDay }

// ParseTimeInForce reads GTC, DAY, GTD or GTD_DAY.
func ParseTimeInForce(s string) (TimeType, bool) { return timeTypeNames.parse(s) }

// FillPolicy is the platform's fill policy (ORDER_FILLING_*).
type FillPolicy int

// Fill policies.
const (
	FillFOK    FillPolicy = 0
	FillIOC    FillPolicy = 1
	FillReturn FillPolicy = 2
	FillBOC    FillPolicy = 3
)

// DealEntry is DEAL_ENTRY_*.
type DealEntry int

// Deal entries.
const (
	EntryIn    DealEntry = 0
	EntryOut   DealEntry = 1
	EntryInOut DealEntry = 2
	EntryOutBy DealEntry = 3
)

var entryNames = enum[DealEntry]{"IN", "OUT", "INOUT", "OUT_BY"}

func (e DealEntry) String() string { return entryNames.name(e) }

// DealAction is DEAL_TYPE_*; only buy (0) and sell (1) are trades, the only deals exposed.
type DealAction int

// Deal actions.
const (
	DealBuy                  DealAction = 0
	DealSell                 DealAction = 1
	DealBalance              DealAction = 2
	DealCredit               DealAction = 3
	DealCharge               DealAction = 4
	DealCorrection           DealAction = 5
	DealBonus                DealAction = 6
	DealCommission           DealAction = 7
	DealCommissionDaily      DealAction = 8
	DealCommissionMonthly    DealAction = 9
	DealAgentDaily           DealAction = 10
	DealAgentMonthly         DealAction = 11
	DealInterest             DealAction = 12
	DealBuyCanceled          DealAction = 13
	DealSellCanceled         DealAction = 14
	DealDividend             DealAction = 15
	DealDividendFranked      DealAction = 16
	DealTax                  DealAction = 17
	DealAgent                DealAction = 18
	DealSOCompensation       DealAction = 19
	DealSOCompensationCredit DealAction = 20
)

// IsTrade reports whether the deal is a buy or sell.
func (a DealAction) IsTrade() bool { return a == DealBuy || a == DealSell }

// Side is the side of a trading deal.
func (a DealAction) Side() Side { return Side(a) }

// DealReason is DEAL_REASON_* (also a position's and an order's reason): who or what
// produced it.
type DealReason int

// Deal reasons.
const (
	ReasonClient   DealReason = 0
	ReasonMobile   DealReason = 1
	ReasonWeb      DealReason = 2
	ReasonExpert   DealReason = 3
	ReasonSL       DealReason = 4
	ReasonTP       DealReason = 5
	ReasonSO       DealReason = 6
	ReasonRollover DealReason = 7
	ReasonVMargin  DealReason = 8
	ReasonSplit    DealReason = 9
)

var reasonNames = enum[DealReason]{"CLIENT", "MOBILE", "WEB", "EXPERT", "SL", "TP", "SO", "ROLLOVER", "VMARGIN", "SPLIT"}

func (r DealReason) String() string { return reasonNames.name(r) }

// ChangeAction is the `x` of an entity change: orders and accounts NEW, UPDATE, DELETE;
// positions NEW, UPDATE, CLOSE.
type ChangeAction int

// Change actions.
const (
	ChangeNew    ChangeAction = 0
	ChangeUpdate ChangeAction = 1
	ChangeDelete ChangeAction = 2
	ChangeClose  ChangeAction = 3
)

var changeNames = enum[ChangeAction]{"NEW", "UPDATE", "DELETE", "CLOSE"}

func (c ChangeAction) String() string { return changeNames.name(c) }
