package events

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// Reference data lives on the compacted reference topic, keyed by entity, so the latest
// specification of every symbol and account is always there to rebuild a read model from.
// Enumerations carry the wire names of the spec ("FULL", "IOC", "UNKNOWN_<n>" for a value
// this build cannot name), mapped once by the relay that reads the trade server.

// Session is one trading window of a weekday, "HH:MM" in the server's zone.
type Session struct {
	Open  string `json:"open"`
	Close string `json:"close"`
}

// SymbolSpecOf is a symbol's specification with its decimals as D: apd.Decimal in the log
// (SymbolSpecified), their text on the wire (query.SymbolInfo). It is declared once, and
// MapSymbolSpec is the one conversion between the two.
type SymbolSpecOf[D any] struct {
	Symbol          string   `json:"symbol"`
	Description     string   `json:"description"`
	Digits          int32    `json:"digits"`
	TickSize        D        `json:"tickSize"`
	TickValue       D        `json:"tickValue"`
	ContractSize    D        `json:"contractSize"`
	VolumeMin       D        `json:"volumeMin"`
	VolumeMax       D        `json:"volumeMax"`
	VolumeStep      D        `json:"volumeStep"`
	StopsLevel      int32    `json:"stopsLevel"`
	FreezeLevel     int32    `json:"freezeLevel"`
	TradeMode       string   `json:"tradeMode"`
	ExecutionMode   string   `json:"executionMode"`
	FillModes       []string `json:"fillModes"`
	ExpirationModes []string `json:"expirationModes"`
	OrderModes      []string `json:"orderModes"`
	CurrencyBase    string   `json:"currencyBase"`
	CurrencyProfit  string   `json:"currencyProfit"`
	CurrencyMargin  string   `json:"currencyMargin"`
	SwapMode        string   `json:"swapMode"`
	SwapLong        D        `json:"swapLong"`
	SwapShort       D        `json:"swapShort"`
	Swap3Days       string   `json:"swap3Days"`
}

// MapSymbolSpec is s with every decimal converted by f (the lists are shared, not copied).
func MapSymbolSpec[D, E any](s SymbolSpecOf[D], f func(D) E) SymbolSpecOf[E] {
	return SymbolSpecOf[E]{
		Symbol: s.Symbol, Description: s.Description, Digits: s.Digits,
		TickSize: f(s.TickSize), TickValue: f(s.TickValue), ContractSize: f(s.ContractSize),
		VolumeMin: f(s.VolumeMin), VolumeMax: f(s.VolumeMax), VolumeStep: f(s.VolumeStep),
		StopsLevel: s.StopsLevel, FreezeLevel: s.FreezeLevel, TradeMode: s.TradeMode, ExecutionMode: s.ExecutionMode,
		FillModes: s.FillModes, ExpirationModes: s.ExpirationModes, OrderModes: s.OrderModes,
		CurrencyBase: s.CurrencyBase, CurrencyProfit: s.CurrencyProfit, CurrencyMargin: s.CurrencyMargin,
		SwapMode: s.SwapMode, SwapLong: f(s.SwapLong), SwapShort: f(s.SwapShort), Swap3Days: s.Swap3Days,
	}
}

// SymbolSpecified is a symbol's full specification as the trade server reports it.
type SymbolSpecified struct {
	SymbolSpecOf[apd.Decimal]
	// Sessions is indexed by weekday, 0 = Sunday .. 6 = Saturday.
	Sessions [7][]Session `json:"sessions"`
	// Time is when the server last changed the specification, Unix ms.
	Time int64 `json:"time"`
}

// ServerSpecified describes the trade server itself.
type ServerSpecified struct {
	Name                  string `json:"name"`
	TimeZoneOffsetMinutes int    `json:"timeZoneOffsetMinutes"`
	Time                  int64  `json:"time"`
}

// AccountHeader is who an account is and how it may trade, as the trade server reports it:
// the first fields of an account snapshot and of the simulator's admin view of an account
// (embedded, its fields stand in their JSON as their own first ones).
type AccountHeader struct {
	Login        int64  `json:"login"`
	Group        string `json:"group"`
	Currency     string `json:"currency"`
	Leverage     int    `json:"leverage"`
	Demo         bool   `json:"demo"`
	TradeAllowed bool   `json:"tradeAllowed"`
}

// AccountSnapshot is an account's full state as the trade server reports it: published when
// it differs from the last one published (floating figures move with prices), so the account
// read model never asks the trade server.
type AccountSnapshot struct {
	AccountHeader
	Active      bool        `json:"active"`
	Balance     apd.Decimal `json:"balance"`
	Credit      apd.Decimal `json:"credit"`
	Equity      apd.Decimal `json:"equity"`
	Margin      apd.Decimal `json:"margin"`
	FreeMargin  apd.Decimal `json:"freeMargin"`
	Profit      apd.Decimal `json:"profit"`
	MarginLevel apd.Decimal `json:"marginLevel"`
	// Time is the server's update time of these figures, Unix ms (what clients see as
	// updateTime); it may stand still while figures change, so it does not order snapshots.
	Time int64 `json:"time"`
	// ObservedAt is when the relay read these figures from the trade server, Unix ms: it
	// orders the snapshots of one account, so a replayed older one never overwrites a newer.
	ObservedAt int64 `json:"observedAt"`
}

// EventType implements Event.
func (*SymbolSpecified) EventType() string { return "SymbolSpecified_v1" }

// PartitionKey implements Event.
func (e *SymbolSpecified) PartitionKey() string { return "symbol:" + e.Symbol }

// EventType implements Event.
func (*ServerSpecified) EventType() string { return "ServerSpecified_v1" }

// PartitionKey implements Event.
func (*ServerSpecified) PartitionKey() string { return "server" }

// EventType implements Event.
func (*AccountSnapshot) EventType() string { return "AccountSnapshot_v1" }

// PartitionKey implements Event.
func (e *AccountSnapshot) PartitionKey() string { return "account:" + strconv.FormatInt(e.Login, 10) }

func init() {
	register(func() Event { return &SymbolSpecified{} })
	register(func() Event { return &ServerSpecified{} })
	register(func() Event { return &AccountSnapshot{} })
}
