package trading

import (
	"slices"
	"strings"

	"tradesvc/events"
)

// SymbolSpec is a symbol's specification as the service knows it: the reference event the
// relay publishes (enumerations by their wire names, sessions per weekday) is the model the
// validator, the queries and the streams read, so it exists once.
type SymbolSpec = events.SymbolSpecified

// AllowsOrderMode reports whether the symbol allows order mode m (MARKET, LIMIT, …, SL, TP).
func AllowsOrderMode(s *SymbolSpec, m OrderMode) bool {
	return slices.Contains(s.OrderModes, m.String())
}

// AllowsExpiration reports whether the symbol accepts time in force t.
func AllowsExpiration(s *SymbolSpec, t TimeType) bool {
	return slices.Contains(s.ExpirationModes, t.String())
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

var tradeModeNames = enum[TradeMode]{"DISABLED", "LONG_ONLY", "SHORT_ONLY", "CLOSE_ONLY", "FULL"}

func (m TradeMode) String() string { return tradeModeNames.name(m) }

// ParseTradeMode reads a trade mode name.
func ParseTradeMode(s string) (TradeMode, bool) { return tradeModeNames.parse(s) }

// ExecMode is SYMBOL_TRADE_EXECUTION_*.
type ExecMode int

// Execution modes.
const (
	ExecRequest  ExecMode = 0
	ExecInstant  ExecMode = 1
	ExecMarket   ExecMode = 2
	ExecExchange ExecMode = 3
)

var execModeNames = enum[ExecMode]{"REQUEST", "INSTANT", "MARKET", "EXCHANGE"}

func (m ExecMode) String() string { return execModeNames.name(m) }

// Requotes reports whether market orders in this mode are sent with the price the client
// was shown, which the trade server requotes when the market has moved (REQUEST, INSTANT).
func (m ExecMode) Requotes() bool { return m == ExecRequest || m == ExecInstant }

// ParseExecMode reads an execution mode name.
func ParseExecMode(s string) (ExecMode, bool) { return execModeNames.parse(s) }

var (
	fillFlags       = flags[FillFlags]{"FOK", "IOC", "BOC"}
	expirationFlags = flags[ExpirationFlags](timeTypeNames)
	orderModeFlags  = flags[OrderMode]{"MARKET", "LIMIT", "STOP", "STOP_LIMIT", "SL", "TP", "CLOSE_BY"}
)

// FillFlags is the SYMBOL_FILLING_MODE bitmask (RETURN has no flag and is never listed).
type FillFlags int

// Fill flags.
const (
	FillFlagFOK FillFlags = 1
	FillFlagIOC FillFlags = 2
	FillFlagBOC FillFlags = 4
)

// Names lists the fill modes of the mask as the wire names them.
func (f FillFlags) Names() []string { return fillFlags.list(f) }

// ExpirationFlags is the SYMBOL_EXPIRATION_MODE bitmask: bit t allows time type t.
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
	return t >= 0 && t <= TimeSpecifiedDay && f&(1<<uint(t)) != 0
}

// Names lists the times in force of the mask.
func (f ExpirationFlags) Names() []string { return expirationFlags.list(f) }

// OrderMode is the SYMBOL_ORDER_MODE bitmask: one flag, or a set of them.
type OrderMode int

// Order mode flags.
const (
	ModeMarket    OrderMode = 1
	ModeLimit     OrderMode = 2
	ModeStop      OrderMode = 4
	ModeStopLimit OrderMode = 8
	ModeSL        OrderMode = 16
	ModeTP        OrderMode = 32
	ModeCloseBy   OrderMode = 64
)

// String names a single flag; a set prints its names joined by '|'.
func (m OrderMode) String() string {
	names := orderModeFlags.list(m)
	switch len(names) {
	case 0:
		return unknown(int(m))
	case 1:
		return names[0]
	}
	return strings.Join(names, "|")
}

// Names lists the flags of the set.
func (m OrderMode) Names() []string { return orderModeFlags.list(m) }

// AllowsType reports whether order type t may be sent under the set.
func (m OrderMode) AllowsType(t OrderType) bool {
	mode := t.Mode()
	return mode != 0 && m&mode != 0
}

// SwapMode is SYMBOL_SWAP_MODE_* (units: points for 1, 7, 8; base currency 2; margin currency
// 3; deposit currency 4; percent of current price 5; percent of open price 6; profit currency 9).
type SwapMode int

// Swap modes.
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

var swapModeNames = enum[SwapMode]{"DISABLED", "BY_POINTS", "BY_SYMBOL_CURRENCY", "BY_MARGIN_CURRENCY",
	"BY_GROUP_CURRENCY", "BY_INTEREST_CURRENT", "BY_INTEREST_OPEN", "REOPEN_BY_CLOSE_PRICE", "REOPEN_BY_BID",
	"BY_PROFIT_CURRENCY"}

func (m SwapMode) String() string { return swapModeNames.name(m) }

// Weekday is a weekday, 0 Sunday .. 6 Saturday; as the triple-swap day, 7 is DISABLED.
type Weekday int

// Weekdays.
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

var weekdayNames = enum[Weekday]{"SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "DISABLED"}

func (w Weekday) String() string { return weekdayNames.name(w) }
