package mt5

import (
	"tradesvc/events/trading"

	"github.com/cockroachdb/apd/v3"
)

// All prices, volumes (lots) and money amounts are apd.Decimal; money is in the account's
// deposit currency unless a field says otherwise. Times are Unix milliseconds UTC; trade
// times (setup, done, deal, position open) are whole seconds, i.e. multiples of 1000.

// TradeAction is TRADE_ACTION_*.
type TradeAction int

// Trade actions. A position close is ActionDeal with Position set (MT5's own convention).
const (
	ActionDeal    TradeAction = 1 // market open, or close of Position (full or partial)
	ActionPending TradeAction = 5 // place a pending order
	ActionSLTP    TradeAction = 6 // change SL/TP of Position
	ActionModify  TradeAction = 7 // change price/stops/expiration of pending Order
	ActionRemove  TradeAction = 8 // remove pending Order
)

// TradeRequest is one MqlTradeRequest addressed to an account.
type TradeRequest struct {
	Login     int64
	Action    TradeAction
	Symbol    string // required for ActionDeal opens and ActionPending
	Type      trading.OrderType
	Volume    apd.Decimal // lots; for a close, the lots to close (zero = whole position)
	Price     apd.Decimal // pending: order price; market in REQUEST/INSTANT mode: the price the client saw
	StopLimit apd.Decimal // stop-limit types: the limit price placed when Price is touched
	SL        apd.Decimal // zero = none
	TP        apd.Decimal // zero = none
	Deviation int         // points of acceptable price move (REQUEST/INSTANT execution)
	// Filling is the fill policy; nil lets the server choose from the symbol's fill flags
	// (IOC when allowed, else FOK), which is what the service always does.
	Filling    *trading.FillPolicy
	TypeTime   trading.TimeType
	Expiration int64 // Unix ms; GTD / GTD_DAY
	Order      int64 // ActionModify / ActionRemove: the pending order ticket
	Position   int64 // close (ActionDeal) / ActionSLTP: the position ticket
	// Comment is stored on the order and its deals, truncated to trading.MaxPlatformComment
	// characters.
	// The service ends it with its 7-character correlation tag.
	Comment string
}

// TradeResult is the in-band dealer answer (MqlTradeResult).
type TradeResult struct {
	Retcode  trading.Retcode
	Order    int64       // order ticket, 0 when none was created
	Deal     int64       // first deal ticket of the execution, 0 when none
	Position int64       // position opened, changed or closed, 0 when none
	Price    apd.Decimal // fill price (volume-weighted over the deals) or order price; zero when none
	Volume   apd.Decimal // executed lots (market), placed lots (pending); zero when none
	Deals    []int64     // every deal ticket of the execution (several on a partial fill)
	Bid, Ask apd.Decimal // current prices on a requote
	Comment  string      // server text, informational
	// Facts are the entries of the fact feed the request caused (deals, order, position and
	// account changes, each with its feed Seq), as the server answered them in band: the
	// executor appends them with the outcome, so that the answer and its facts are read
	// together, and the feed's later copies of them change nothing.
	Facts []Fact `json:",omitempty"`
}

// Order is an order, open (pending) or historical.
type Order struct {
	Ticket        int64
	Login         int64
	Symbol        string
	Type          trading.OrderType
	State         trading.OrderState
	TypeTime      trading.TimeType
	Filling       trading.FillPolicy
	Expiration    int64
	VolumeInitial apd.Decimal
	VolumeCurrent apd.Decimal
	Price         apd.Decimal // order price (pending) or requested/filled price (market)
	StopLimit     apd.Decimal
	SL            apd.Decimal
	TP            apd.Decimal
	PositionID    int64 // position opened or closed by this order (0 while pending)
	Reason        trading.DealReason
	Comment       string
	TimeSetup     int64
	TimeDone      int64 // 0 while open
	TimeUpdate    int64
}

// Deal is one execution or balance operation.
type Deal struct {
	Ticket     int64
	Login      int64
	Order      int64 // producing order (0 for balance operations)
	Position   int64 // position opened, added to or closed (0 for balance operations)
	Symbol     string
	Action     trading.DealAction
	Entry      trading.DealEntry
	Reason     trading.DealReason
	Volume     apd.Decimal
	Price      apd.Decimal
	Profit     apd.Decimal // deposit currency; non-zero only on OUT (and for balance deals: the amount)
	Commission apd.Decimal // deposit currency, negative
	Swap       apd.Decimal // deposit currency
	Comment    string
	Time       int64
}

// Position is an open (or, in a CLOSE change, just closed) hedging position.
type Position struct {
	Ticket       int64
	Login        int64
	Symbol       string
	Type         trading.Side
	Volume       apd.Decimal
	PriceOpen    apd.Decimal
	PriceCurrent apd.Decimal
	SL           apd.Decimal
	TP           apd.Decimal
	Profit       apd.Decimal // floating, deposit currency
	Swap         apd.Decimal // accumulated, deposit currency
	Reason       trading.DealReason
	Comment      string
	TimeCreate   int64
	TimeUpdate   int64
}

// Account is the account record with its live figures.
type Account struct {
	Login        int64
	Group        string
	Currency     string
	Leverage     int
	Demo         bool
	TradeAllowed bool
	Balance      apd.Decimal
	Credit       apd.Decimal
	Equity       apd.Decimal
	Margin       apd.Decimal
	MarginFree   apd.Decimal
	MarginLevel  apd.Decimal // percent, zero with no margin in use
	Profit       apd.Decimal // floating profit of open positions
	UpdateTime   int64
}

// Group is an account group.
type Group struct {
	Name     string
	Demo     bool
	Currency string
	Leverage int
	// MarginCall and StopOut are margin levels in percent.
	MarginCall apd.Decimal
	StopOut    apd.Decimal
	// HedgeProhibited refuses an opposite position on a symbol (10046); FIFOClose requires
	// closing the oldest position of a symbol first (10045).
	HedgeProhibited bool
	FIFOClose       bool
	// LimitOrders / LimitPositions cap open pending orders / positions (0 = no cap).
	LimitOrders    int
	LimitPositions int
}

// Session is one trading window of a weekday, minutes from 00:00 server time
// (Close may be 1440).
type Session struct {
	Open  int
	Close int
}

// Symbol is the full symbol specification.
type Symbol struct {
	Name            string
	Description     string
	Digits          int
	Point           apd.Decimal
	TickSize        apd.Decimal
	TickValue       apd.Decimal // deposit-neutral: value of one tick for one lot in the profit currency
	ContractSize    apd.Decimal
	VolumeMin       apd.Decimal
	VolumeMax       apd.Decimal
	VolumeStep      apd.Decimal
	VolumeLimit     apd.Decimal // max lots of positions+orders per account and symbol, zero = none
	StopsLevel      int
	FreezeLevel     int
	TradeMode       trading.TradeMode
	ExecutionMode   trading.ExecMode
	FillFlags       trading.FillFlags
	ExpirationModes trading.ExpirationFlags
	OrderModes      trading.OrderMode
	MarginCalc      MarginCalc
	CurrencyBase    string
	CurrencyProfit  string
	CurrencyMargin  string
	SwapMode        trading.SwapMode
	SwapLong        apd.Decimal
	SwapShort       apd.Decimal
	Swap3Days       trading.Weekday
	// CommissionPerLot is charged per lot on every trade deal (IN and OUT), in
	// CommissionCurrency, booked negative in the deposit currency.
	CommissionPerLot   apd.Decimal
	CommissionCurrency string
	// Sessions is indexed by weekday (0 Sunday .. 6 Saturday) in server time.
	Sessions [7][]Session
}

// Tick is one quote, with its own feed sequence.
type Tick struct {
	Seq          uint64
	Symbol       string
	Bid          apd.Decimal
	Ask          apd.Decimal
	Last         apd.Decimal
	Volume       int64
	BidDirection int // -1 or +1
	AskDirection int
	Time         int64
	// Held marks a quote an operator set and holds (the simulator's `sim quote`): it stays
	// the symbol's quote, and counts as fresh, until the feed resumes.
	Held bool `json:",omitempty"`
}

// DayStats are the statistics of the server's trading day for one symbol.
type DayStats struct {
	Symbol             string
	Open, High, Low    apd.Decimal // of the last price
	Last               apd.Decimal
	Bid, Ask           apd.Decimal
	BidHigh, BidLow    apd.Decimal
	AskHigh, AskLow    apd.Decimal
	PriceChange        apd.Decimal // Last - Open
	PriceChangePercent apd.Decimal // 100*(Last-Open)/Open, 2 places
	Volatility         apd.Decimal // 100*(High-Low)/Low, 2 places
	Deals              int64
	Volume             apd.Decimal // lots traded today
	BuyOrders          int64
	SellOrders         int64
	Time               int64
}

// ServerInfo describes the trade server.
type ServerInfo struct {
	Name                  string
	TimeZoneOffsetMinutes int
	Time                  int64
}

// FactKind says which payload of a Fact is set.
type FactKind int

// Fact kinds.
const (
	FactDeal     FactKind = 1
	FactOrder    FactKind = 2
	FactPosition FactKind = 3
	FactAccount  FactKind = 4
)

// Fact is one entry of the trade-fact feed. Exactly one payload pointer is set, per Kind;
// every payload is a full snapshot of the entity after the change.
type Fact struct {
	Seq      uint64
	Kind     FactKind
	Login    int64
	Time     int64
	Action   trading.ChangeAction // orders/accounts: New/Update/Delete; positions: New/Update/Close; deals: New
	Deal     *Deal                `json:",omitempty"`
	Order    *Order               `json:",omitempty"`
	Position *Position            `json:",omitempty"`
	Account  *Account             `json:",omitempty"`
}
