package mt5

import "strconv"

// The platform integers below keep MT5's own numbering so that a Manager-API bridge maps
// them one to one. String methods give the spec's names; a value the spec does not name
// prints as UNKNOWN_<n> so that new platform values never crash a consumer.

func unknown(n int) string { return "UNKNOWN_" + strconv.Itoa(n) }

// OrderType is ORDER_TYPE_*.
type OrderType int

// Order types (spec "Order type").
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

var orderTypeNames = []string{"BUY", "SELL", "BUY_LIMIT", "SELL_LIMIT", "BUY_STOP", "SELL_STOP", "BUY_STOP_LIMIT", "SELL_STOP_LIMIT", "CLOSE_BY"}

func (t OrderType) String() string {
	if t >= 0 && int(t) < len(orderTypeNames) {
		return orderTypeNames[t]
	}
	return unknown(int(t))
}

// IsBuy reports whether the order buys (even types).
func (t OrderType) IsBuy() bool { return t%2 == 0 }

// IsPending reports whether the type rests on the book (2..7).
func (t OrderType) IsPending() bool { return t >= OrderBuyLimit && t <= OrderSellStopLimit }

// OrderState is ORDER_STATE_*, reported raw as `mst`.
type OrderState int

// Raw order states (spec "Raw order state").
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

var orderStateNames = []string{"STARTED", "PLACED", "CANCELED", "PARTIAL", "FILLED", "REJECTED", "EXPIRED", "REQUEST_ADD", "REQUEST_MODIFY", "REQUEST_CANCEL"}

func (s OrderState) String() string {
	if s >= 0 && int(s) < len(orderStateNames) {
		return orderStateNames[s]
	}
	return unknown(int(s))
}

// TimeType is ORDER_TIME_* (the spec's timeInForce).
type TimeType int

// Time-in-force values.
const (
	TimeGTC          TimeType = 0
	TimeDay          TimeType = 1
	TimeSpecified    TimeType = 2 // GTD
	TimeSpecifiedDay TimeType = 3 // GTD_DAY
)

func (t TimeType) String() string {
	switch t {
	case TimeGTC:
		return "GTC"
	case TimeDay:
		return "DAY"
	case TimeSpecified:
		return "GTD"
	case TimeSpecifiedDay:
		return "GTD_DAY"
	}
	return unknown(int(t))
}

// FillPolicy is ORDER_FILLING_*.
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

func (e DealEntry) String() string {
	switch e {
	case EntryIn:
		return "IN"
	case EntryOut:
		return "OUT"
	case EntryInOut:
		return "INOUT"
	case EntryOutBy:
		return "OUT_BY"
	}
	return unknown(int(e))
}

// DealAction is DEAL_TYPE_*; only 0 and 1 are trades.
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

// IsTrade reports whether the deal is a buy or sell (the only actions the service exposes).
func (a DealAction) IsTrade() bool { return a == DealBuy || a == DealSell }

// DealReason is DEAL_REASON_*: who or what produced the deal.
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

// PositionType is POSITION_TYPE_*.
type PositionType int

// Position directions.
const (
	PositionBuy  PositionType = 0
	PositionSell PositionType = 1
)

func (p PositionType) String() string {
	switch p {
	case PositionBuy:
		return "BUY"
	case PositionSell:
		return "SELL"
	}
	return unknown(int(p))
}

// ChangeAction is the `x` of an entity change.
type ChangeAction int

// Entity change actions: orders and accounts use New/Update/Delete, positions New/Update/Close.
const (
	ChangeNew    ChangeAction = 0
	ChangeUpdate ChangeAction = 1
	ChangeDelete ChangeAction = 2
	ChangeClose  ChangeAction = 3
)

func (c ChangeAction) String() string {
	switch c {
	case ChangeNew:
		return "NEW"
	case ChangeUpdate:
		return "UPDATE"
	case ChangeDelete:
		return "DELETE"
	case ChangeClose:
		return "CLOSE"
	}
	return unknown(int(c))
}

// TradeMode is SYMBOL_TRADE_MODE_*.
type TradeMode int

// Symbol trade modes.
const (
	TradeDisabled  TradeMode = 0
	TradeLongOnly  TradeMode = 1
	TradeShortOnly TradeMode = 2
	TradeCloseOnly TradeMode = 3
	TradeFull      TradeMode = 4
)

var tradeModeNames = []string{"DISABLED", "LONG_ONLY", "SHORT_ONLY", "CLOSE_ONLY", "FULL"}

func (m TradeMode) String() string {
	if m >= 0 && int(m) < len(tradeModeNames) {
		return tradeModeNames[m]
	}
	return unknown(int(m))
}

// ExecMode is SYMBOL_TRADE_EXECUTION_*.
type ExecMode int

// Execution modes.
const (
	ExecRequest  ExecMode = 0
	ExecInstant  ExecMode = 1
	ExecMarket   ExecMode = 2
	ExecExchange ExecMode = 3
)

var execModeNames = []string{"REQUEST", "INSTANT", "MARKET", "EXCHANGE"}

func (m ExecMode) String() string {
	if m >= 0 && int(m) < len(execModeNames) {
		return execModeNames[m]
	}
	return unknown(int(m))
}

// FillFlags is the SYMBOL_FILLING_MODE bitmask (RETURN has no flag).
type FillFlags int

// Fill flags.
const (
	FillFlagFOK FillFlags = 1
	FillFlagIOC FillFlags = 2
	FillFlagBOC FillFlags = 4
)

// ExpirationFlags is the SYMBOL_EXPIRATION_MODE bitmask.
type ExpirationFlags int

// Expiration flags.
const (
	ExpireGTC          ExpirationFlags = 1
	ExpireDay          ExpirationFlags = 2
	ExpireSpecified    ExpirationFlags = 4
	ExpireSpecifiedDay ExpirationFlags = 8
)

// Allows reports whether time-in-force t is permitted by the mask.
func (f ExpirationFlags) Allows(t TimeType) bool {
	if t < 0 || t > 3 {
		return false
	}
	return f&(1<<uint(t)) != 0
}

// OrderModeFlags is the SYMBOL_ORDER_MODE bitmask.
type OrderModeFlags int

// Order mode flags.
const (
	ModeMarket    OrderModeFlags = 1
	ModeLimit     OrderModeFlags = 2
	ModeStop      OrderModeFlags = 4
	ModeStopLimit OrderModeFlags = 8
	ModeSL        OrderModeFlags = 16
	ModeTP        OrderModeFlags = 32
	ModeCloseBy   OrderModeFlags = 64
)

// AllowsType reports whether order type t may be sent under the mask.
func (f OrderModeFlags) AllowsType(t OrderType) bool {
	switch t {
	case OrderBuy, OrderSell:
		return f&ModeMarket != 0
	case OrderBuyLimit, OrderSellLimit:
		return f&ModeLimit != 0
	case OrderBuyStop, OrderSellStop:
		return f&ModeStop != 0
	case OrderBuyStopLimit, OrderSellStopLimit:
		return f&ModeStopLimit != 0
	case OrderCloseBy:
		return f&ModeCloseBy != 0
	}
	return false
}

// SwapMode is SYMBOL_SWAP_MODE_*.
type SwapMode int

// Swap modes (units: points for 1, 7, 8; base currency 2; margin currency 3; deposit
// currency 4; percent of current price 5; percent of open price 6; profit currency 9).
const (
	SwapDisabled          SwapMode = 0
	SwapByPoints          SwapMode = 1
	SwapBySymbolCurrency  SwapMode = 2
	SwapByMarginCurrency  SwapMode = 3
	SwapByGroupCurrency   SwapMode = 4
	SwapByInterestCurrent SwapMode = 5
	SwapByInterestOpen    SwapMode = 6
	SwapReopenByClose     SwapMode = 7
	SwapReopenByBid       SwapMode = 8
	SwapByProfitCurrency  SwapMode = 9
)

var swapModeNames = []string{"DISABLED", "BY_POINTS", "BY_SYMBOL_CURRENCY", "BY_MARGIN_CURRENCY", "BY_GROUP_CURRENCY", "BY_INTEREST_CURRENT", "BY_INTEREST_OPEN", "REOPEN_BY_CLOSE_PRICE", "REOPEN_BY_BID", "BY_PROFIT_CURRENCY"}

func (m SwapMode) String() string {
	if m >= 0 && int(m) < len(swapModeNames) {
		return swapModeNames[m]
	}
	return unknown(int(m))
}

// Weekday is the triple-swap day: 0 Sunday .. 6 Saturday, 7 disabled.
type Weekday int

// Triple-swap days.
const (
	Sunday         Weekday = 0
	Monday         Weekday = 1
	Tuesday        Weekday = 2
	Wednesday      Weekday = 3
	Thursday       Weekday = 4
	Friday         Weekday = 5
	Saturday       Weekday = 6
	TripleDisabled Weekday = 7
)

var weekdayNames = []string{"SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "DISABLED"}

func (w Weekday) String() string {
	if w >= 0 && int(w) < len(weekdayNames) {
		return weekdayNames[w]
	}
	return unknown(int(w))
}

// MarginCalc is the subset of SYMBOL_CALC_MODE_* the simulator models.
type MarginCalc int

// Margin calculation modes: Forex margin = lots*contract/leverage in the margin currency;
// CFDLeverage margin = lots*contract*price/leverage in the margin currency.
const (
	CalcForex       MarginCalc = 0
	CalcCFDLeverage MarginCalc = 4
)
