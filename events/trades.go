package events

import "github.com/cockroachdb/apd/v3"

// Trade-server facts. Each carries Seq, the trade server's own feed sequence: a projection
// applies a fact only if it is newer than what it holds for that entity, so a redelivered or
// replayed fact never counts twice. Raw platform integers are kept beside their names so an
// auditor sees exactly what the server reported.

// Entity change actions (the spec's `x`).
const (
	ChangeNew    = "NEW"
	ChangeUpdate = "UPDATE"
	ChangeDelete = "DELETE"
	ChangeClose  = "CLOSE"
)

// DealAdded is a deal recorded by the trade server (trading deals and balance operations).
type DealAdded struct {
	Fact
	DealID     int64       `json:"dealId"`
	OrderID    int64       `json:"orderId"`
	PositionID int64       `json:"positionId"`
	Symbol     string      `json:"symbol,omitempty"`
	Action     int         `json:"action"` // 0 buy, 1 sell, 2.. balance, credit, ...
	Entry      int         `json:"entry"`  // 0 IN, 1 OUT, 2 INOUT, 3 OUT_BY
	Volume     apd.Decimal `json:"volume"`
	Price      apd.Decimal `json:"price"`
	Profit     apd.Decimal `json:"profit"`
	Commission apd.Decimal `json:"commission"`
	Swap       apd.Decimal `json:"swap"`
	Comment    string      `json:"comment,omitempty"`
	// Time is the deal time, Unix ms (a multiple of 1000).
	Time int64 `json:"time"`
	// Reason is the platform's deal reason (client, SL, TP, stop-out, rollover, ...).
	Reason int `json:"reason"`
}

// OrderChanged is a change of an order on the trade server (placed, modified, triggered,
// filled, canceled, expired).
type OrderChanged struct {
	Fact
	Change         string      `json:"change"` // NEW, UPDATE, DELETE
	OrderID        int64       `json:"orderId"`
	PositionID     int64       `json:"positionId,omitempty"`
	Symbol         string      `json:"symbol"`
	Type           int         `json:"type"`  // platform order type 0..8
	State          int         `json:"state"` // raw state mst 0..9
	VolumeInitial  apd.Decimal `json:"volumeInitial"`
	VolumeCurrent  apd.Decimal `json:"volumeCurrent"`
	Price          apd.Decimal `json:"price"`
	StopLimitPrice apd.Decimal `json:"stopLimitPrice"`
	SL             apd.Decimal `json:"sl"`
	TP             apd.Decimal `json:"tp"`
	TypeTime       int         `json:"typeTime"` // 0 GTC, 1 DAY, 2 GTD, 3 GTD_DAY
	Expiration     int64       `json:"expiration"`
	Comment        string      `json:"comment,omitempty"`
	TimeSetup      int64       `json:"timeSetup"`
	TimeDone       int64       `json:"timeDone,omitempty"`
	// Time is when the change happened, Unix ms.
	Time int64 `json:"time"`
}

// PositionChanged is a position opened, changed (volume, SL/TP, swap) or closed.
type PositionChanged struct {
	Fact
	Change     string      `json:"change"` // NEW, UPDATE, CLOSE
	PositionID int64       `json:"positionId"`
	Symbol     string      `json:"symbol"`
	Direction  int         `json:"direction"` // 0 BUY, 1 SELL
	Volume     apd.Decimal `json:"volume"`
	PriceOpen  apd.Decimal `json:"priceOpen"`
	SL         apd.Decimal `json:"sl"`
	TP         apd.Decimal `json:"tp"`
	Profit     apd.Decimal `json:"profit"`
	Swap       apd.Decimal `json:"swap"`
	Comment    string      `json:"comment,omitempty"`
	TimeOpen   int64       `json:"timeOpen"`
	Time       int64       `json:"time"`
}

// AccountChanged is a balance-affecting change of an account (deposit, credit, a closing
// deal's profit): balance and credit after the change.
type AccountChanged struct {
	Fact
	Change  string      `json:"change"` // NEW, UPDATE, DELETE
	Balance apd.Decimal `json:"balance"`
	Credit  apd.Decimal `json:"credit"`
	Time    int64       `json:"time"`
}

// Fact is what every trade-server fact carries first: the trade server's feed sequence and
// the account's login, which keys the fact (embedded, its fields stand in the fact's JSON as
// its own first two).
type Fact struct {
	Seq   uint64 `json:"seq"`
	Login int64  `json:"login"`
}

// PartitionKey implements Event.
func (f *Fact) PartitionKey() string { return loginKey(f.Login) }

// AccountLogin implements AccountEvent.
func (f *Fact) AccountLogin() int64 { return f.Login }

func (f *Fact) fact() *Fact { return f }

// EventType implements Event.
func (*DealAdded) EventType() string { return "DealAdded_v1" }

// EventType implements Event.
func (*OrderChanged) EventType() string { return "OrderChanged_v1" }

// EventType implements Event.
func (*PositionChanged) EventType() string { return "PositionChanged_v1" }

// EventType implements Event.
func (*AccountChanged) EventType() string { return "AccountChanged_v1" }

func init() {
	register(func() Event { return &DealAdded{} })
	register(func() Event { return &OrderChanged{} })
	register(func() Event { return &PositionChanged{} })
	register(func() Event { return &AccountChanged{} })
}
