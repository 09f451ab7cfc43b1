package events

import (
	"encoding/json"
	"sort"

	"github.com/cockroachdb/apd/v3"
)

// ExecutionSent records that the executor is about to hand an operation to the trade server.
// After a crash, an operation with ExecutionSent and no ExecutionOutcome is reconciled by its
// tag, never resent blindly.
type ExecutionSent struct {
	OperationID string `json:"operationId"`
	Login       int64  `json:"login"`
	Tag         string `json:"tag"`
	SentAt      int64  `json:"sentAt"`
	// Attempt counts sends of this operation (a rejected-unqueued operation may be retried).
	Attempt int `json:"attempt"`
}

// ExecutionOutcome is what became of an operation: the trade server's in-band answer, the
// executor's own refusal (dispatch window passed: REJECTED -1000), or IN_DOUBT.
type ExecutionOutcome struct {
	OperationID string `json:"operationId"`
	Login       int64  `json:"login"`
	Tag         string `json:"tag"`
	// Attempt is the attempt this outcome belongs to (see Operation.Attempt).
	Attempt int `json:"attempt"`
	// Status is what the operation reached (a trading.Status: the domain package names the
	// statuses). When Unanswered is set it is the operation's
	// queued status and says nothing new: the trade server gave no in-band answer and no
	// evidence was found by tag, so the status is left to the trade server's facts.
	Status string `json:"status"`
	// Unanswered: the request reached the trade server, which did not answer in band.
	Unanswered bool `json:"unanswered,omitempty"`
	// Reconciled: the outcome was derived from the trade server's orders, deals or
	// positions (after a crash or a send without an answer), not from an in-band answer.
	Reconciled bool `json:"reconciled,omitempty"`
	// Void: the operation never existed for clients. Its command was a same-id retry's,
	// appended beside the idempotency record's insert that found the id bound to an earlier
	// operation (which answers the retry); the executor never sent it. Projections apply
	// neither the outcome nor its command; it stays in the log for auditors.
	Void bool `json:"void,omitempty"`
	// Code is the service error code for a refusal (negative), 0 on success.
	Code int `json:"code,omitempty"`
	// Retcode is the trade server's return code when it answered.
	Retcode  int          `json:"retcode,omitempty"`
	Msg      string       `json:"msg,omitempty"`
	OrderID  int64        `json:"orderId,omitempty"`
	DealID   int64        `json:"dealId,omitempty"`
	Position int64        `json:"positionId,omitempty"`
	Price    *apd.Decimal `json:"price,omitempty"`
	Volume   *apd.Decimal `json:"volume,omitempty"`
	// DecidedAt is when the outcome was known, Unix ms.
	DecidedAt int64 `json:"decidedAt"`
	// SentAt is when the executor handed this attempt to the trade server, Unix ms; absent
	// when it was not sent (refused before sending).
	SentAt int64 `json:"sentAt,omitempty"`
	// Facts are the trade-server facts the send caused, as the trade server reported them in
	// band (each with its feed sequence): the projection applies them with the outcome in one
	// transaction, and the relay's later copies of the same facts are no-ops by sequence.
	Facts *ExecutionFacts `json:"facts,omitempty"`
	// CommandType and Command are the command event this outcome decides, as it was appended
	// to the command topic: the outcome alone holds everything its answer is made of, so it
	// is answered in one transaction however far the command topic's consumers lag.
	CommandType string          `json:"commandType,omitempty"`
	Command     json.RawMessage `json:"command,omitempty"`
}

// ExecutionFacts are the facts one send caused, each kind in feed-sequence order.
type ExecutionFacts struct {
	Deals     []DealAdded       `json:"deals,omitempty"`
	Orders    []OrderChanged    `json:"orders,omitempty"`
	Positions []PositionChanged `json:"positions,omitempty"`
	Accounts  []AccountChanged  `json:"accounts,omitempty"`
}

// EventType implements Event.
func (*ExecutionSent) EventType() string { return "ExecutionSent_v1" }

// PartitionKey implements Event.
func (e *ExecutionSent) PartitionKey() string { return loginKey(e.Login) }

// AccountLogin implements AccountEvent.
func (e *ExecutionSent) AccountLogin() int64 { return e.Login }

// EventType implements Event.
func (*ExecutionOutcome) EventType() string { return "ExecutionOutcome_v1" }

// PartitionKey implements Event.
func (e *ExecutionOutcome) PartitionKey() string { return loginKey(e.Login) }

// AccountLogin implements AccountEvent.
func (e *ExecutionOutcome) AccountLogin() int64 { return e.Login }

func init() {
	register(func() Event { return &ExecutionSent{} })
	register(func() Event { return &ExecutionOutcome{} })
}

// Add puts a trade-server fact (DealAdded, OrderChanged, PositionChanged, AccountChanged) in
// its list; ok is false for any other event.
func (f *ExecutionFacts) Add(ev Event) bool {
	switch x := ev.(type) {
	case *DealAdded:
		f.Deals = append(f.Deals, *x)
	case *OrderChanged:
		f.Orders = append(f.Orders, *x)
	case *PositionChanged:
		f.Positions = append(f.Positions, *x)
	case *AccountChanged:
		f.Accounts = append(f.Accounts, *x)
	default:
		return false
	}
	return true
}

// Events lists the facts in feed-sequence order (the order the trade server produced them).
func (f *ExecutionFacts) Events() []Event {
	if f == nil {
		return nil
	}
	out := make([]Event, 0, len(f.Deals)+len(f.Orders)+len(f.Positions)+len(f.Accounts))
	for i := range f.Deals {
		out = append(out, &f.Deals[i])
	}
	for i := range f.Orders {
		out = append(out, &f.Orders[i])
	}
	for i := range f.Positions {
		out = append(out, &f.Positions[i])
	}
	for i := range f.Accounts {
		out = append(out, &f.Accounts[i])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := FactSeq(out[i])
		b, _ := FactSeq(out[j])
		return a < b
	})
	return out
}

// FactSeq is a trade-server fact's feed sequence; ok is false for other events.
func FactSeq(ev Event) (seq uint64, ok bool) {
	if f, ok := ev.(interface{ fact() *Fact }); ok {
		return f.fact().Seq, true
	}
	return 0, false
}
