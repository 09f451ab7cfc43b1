package trading

import (
	"slices"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
)

// Kind is what a client operation asks for. A different kind under a client order id the key
// already used is -1133.
type Kind string

// Operation kinds.
const (
	KindPlaceOrder     Kind = "PLACE_ORDER"
	KindModifyOrder    Kind = "MODIFY_ORDER"
	KindCancelOrder    Kind = "CANCEL_ORDER"
	KindClosePosition  Kind = "CLOSE_POSITION"
	KindModifyPosition Kind = "MODIFY_POSITION"
	KindCloseAll       Kind = "CLOSE_ALL"
)

// kindSpec is what one kind means. Every question about a kind is answered from this table,
// so that adding a kind is one entry here (and the places that really differ: its validator
// rule, its trade request, the simulator's behaviour); the coverage test fails until every
// place that dispatches on kinds or event types handles it.
type kindSpec struct {
	// command is the event type that starts an operation of this kind.
	command string
	// sent: the executor sends it to the trade server itself (a sweep is sent as its legs).
	sent bool
	// dealsFill: deals carrying its tag are its fills, and its status follows their sum.
	dealsFill bool
	// atMarket: the send itself executes at market (a market placement, a close), so its
	// answer is a fill that its deals confirm.
	atMarket func(typ string) bool
	// byTag: the trade server's records of it carry its tag (new orders and their deals), so
	// what became of it can be asked after a crash; the others change existing orders and
	// positions and are resent instead (a resend of the same values changes nothing).
	byTag bool
	// riskReducing: it can only lower exposure (cancels, closes, sweeps), so admission lets
	// it in up to a higher bound than new exposure.
	riskReducing bool
	// target is what existing thing it acts on: an order, a position, or nothing (it creates).
	target Target
	// createsOrder: the trade server records it as an order (a placement, a close), which a
	// lookup by its client order id answers.
	createsOrder bool
	// queued is the status it shows until answered, by the order type it names.
	queued func(typ string) Status
	// done is what a completed request (10009) means for it.
	done func(typ string) Status
	// resendApplied are the return codes that, to a resend after a crash, mean the first send
	// was applied (nothing left to do).
	resendApplied []int
	// filled is the message of its success.
	filled string
	// request reads the request fields of its command event.
	request func(events.Event) Operation
}

func anyType(string) bool { return true }

func never(string) bool { return false }

func status(s Status) func(string) Status { return func(string) Status { return s } }

// marketType reports whether an order type name is MARKET (an empty type is a close's).
func marketType(typ string) bool { return typ == TypeMarket }

var kinds = map[Kind]*kindSpec{
	KindPlaceOrder: {
		command: "OrderRequested_v1", sent: true, dealsFill: true, byTag: true, createsOrder: true,
		atMarket: marketType,
		queued: func(typ string) Status {
			if typ != "" && !marketType(typ) {
				return StatusNew // a pending placement: queued, not proof of resting
			}
			return StatusAccepted
		},
		done: func(typ string) Status {
			if !marketType(typ) {
				return StatusNew // a pending order answers 10008; 10009 still means it rests
			}
			return StatusFilled
		},
		filled:  "Order filled.",
		request: placeRequest,
	},
	KindModifyOrder: {
		command: "OrderModifyRequested_v1", sent: true, atMarket: never, target: TargetOrder,
		queued: status(StatusNew), done: status(StatusNew),
		resendApplied: []int{retNoChanges},
		filled:        "Order modified.",
		request:       modifyOrderRequest,
	},
	KindCancelOrder: {
		command: "OrderCancelRequested_v1", sent: true, atMarket: never, riskReducing: true, target: TargetOrder,
		queued: status(StatusAccepted), done: status(StatusCanceled),
		resendApplied: []int{retPositionClosed, retOrderChanged},
		filled:        "Order canceled.",
		request:       cancelOrderRequest,
	},
	KindClosePosition: {
		command: "PositionCloseRequested_v1", sent: true, dealsFill: true, byTag: true, riskReducing: true,
		target: TargetPosition, createsOrder: true,
		atMarket: anyType,
		queued:   status(StatusAccepted), done: status(StatusFilled),
		filled:  "Position closed.",
		request: closePositionRequest,
	},
	KindModifyPosition: {
		command: "PositionModifyRequested_v1", sent: true, atMarket: never, target: TargetPosition,
		queued: status(StatusAccepted), done: status(StatusFilled),
		resendApplied: []int{retNoChanges},
		filled:        "Position modified.",
		request:       modifyPositionRequest,
	},
	KindCloseAll: {
		command: "SweepRequested_v1", atMarket: never, riskReducing: true,
		queued: status(StatusAccepted), done: status(StatusFilled),
		filled:  "Positions closed.",
		request: sweepRequest,
	},
}

// Platform return codes the table names (the full list is the trade server port's).
const (
	retOrderChanged   = 10023
	retNoChanges      = 10025
	retPositionClosed = 10036
)

// kindByCommand maps each command event type to its kind.
var kindByCommand = func() map[string]Kind {
	m := make(map[string]Kind, len(kinds))
	for k, s := range kinds {
		m[s.command] = k
	}
	return m
}()

// Kinds lists every operation kind, sorted.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// KindNames are the names of the kinds for which keep holds, in order: the form a statement's
// text array takes.
func KindNames(keep func(Kind) bool) []string {
	var out []string
	for _, k := range Kinds() {
		if keep(k) {
			out = append(out, string(k))
		}
	}
	return out
}

// Known reports whether k is a kind of the table.
func (k Kind) Known() bool { return kinds[k] != nil }

func (k Kind) spec() *kindSpec {
	if s := kinds[k]; s != nil {
		return s
	}
	return &kindSpec{atMarket: never, queued: status(StatusAccepted), done: status(StatusFilled),
		request: func(events.Event) Operation { return Operation{} }}
}

// KindOf is the kind an event of type eventType starts; ok is false for events that are not
// commands.
func KindOf(eventType string) (Kind, bool) {
	k, ok := kindByCommand[eventType]
	return k, ok
}

// Target is what existing thing an operation acts on.
type Target int

// Targets.
const (
	TargetNone     Target = iota // it creates (a placement, a sweep)
	TargetOrder                  // a pending order (orderId)
	TargetPosition               // a position (positionId)
)

// Target is what existing thing operations of kind k act on.
func (k Kind) Target() Target { return k.spec().target }

// CreatesOrder reports whether the trade server records an operation of kind k as an order
// (a placement, a close): a lookup of its client order id answers that order.
func (k Kind) CreatesOrder() bool { return k.spec().createsOrder }

// Rests reports whether an operation of kind k naming order type typ leaves an order resting
// on the book (a pending placement, an order modification): its answer carries the time in
// force and the order's price rather than a fill.
func (k Kind) Rests(typ string) bool {
	return k == KindPlaceOrder && IsPendingName(typ) || k == KindModifyOrder
}

// Command is the event type that starts an operation of kind k.
func (k Kind) Command() string { return k.spec().command }

// Sent reports whether the executor sends operations of kind k to the trade server itself.
func (k Kind) Sent() bool { return k.spec().sent }

// DealsFill reports whether deals carrying the operation's tag are its fills.
func (k Kind) DealsFill() bool { return k.spec().dealsFill }

// AtMarket reports whether an operation of kind k naming order type typ executes at market
// when sent (its answer is a fill its deals confirm).
func (k Kind) AtMarket(typ string) bool { return k.spec().atMarket(typ) }

// ByTag reports whether the trade server's records of the operation carry its tag, so that
// what became of it can be asked rather than sending it again.
func (k Kind) ByTag() bool { return k.spec().byTag }

// RiskReducing reports whether operations of kind k can only lower exposure.
func (k Kind) RiskReducing() bool { return k.spec().riskReducing }

// Queued is the status an operation of kind k naming order type typ shows until answered:
// ACCEPTED, except NEW for a pending placement and for an order modification.
func (k Kind) Queued(typ string) Status { return k.spec().queued(typ) }

// Done is what a completed request (10009) means: a modified or placed pending order still
// rests (NEW), a removed one is CANCELED, everything else FILLED.
func (k Kind) Done(typ string) Status { return k.spec().done(typ) }

// ResendApplied reports whether return code ret, answered to a resend after a crash, means
// that the first send was applied (10025 for a modification, 10036 or 10023 for a removal).
func (k Kind) ResendApplied(ret int) bool { return slices.Contains(k.spec().resendApplied, ret) }

// FilledMsg is the message of a successful operation of kind k.
func (k Kind) FilledMsg() string { return k.spec().filled }

// Answered reports whether op has its answer, the point where a wait for it ends: its status
// moved from the queued one, or it carries a code or a trade server's return code; and a fill
// at market is confirmed by its deals and the executor's outcome is in (the answer then also
// carries the trade server's return code), so that a client that reads its positions next
// sees the position the fill made.
func (k Kind) Answered(op *Operation) bool {
	if op.Status == k.Queued(op.Type) && op.Code == 0 && op.Retcode == 0 {
		return false
	}
	if op.Status.IsFill() && k.AtMarket(op.Type) {
		return op.Deals > 0 && op.Decided
	}
	return true
}

// Final reports whether nothing more can happen to op: a fill complete, a refusal by the
// trade server (it carries a return code) or by the service's checks, a pending order done.
// IN_DOUBT, a partial fill, a queued operation, a resting pending order and a refusal without
// return code by the execution path itself (REJECTED -1000 or -5015: a retry sends it again
// as the next attempt, which may still fill; Operation.RetriedAfresh) are not final.
func (k Kind) Final(op *Operation) bool {
	switch op.Status {
	case StatusFilled, StatusCanceled, StatusExpired:
		return true
	case StatusRejected:
		return !op.RetriedAfresh()
	case StatusNew:
		return k != KindPlaceOrder && op.Decided // a modification answered: its own life is over
	}
	return false
}

// RequestOf reads the operation a command event describes, in its kind's queued status; ok
// is false for events that are not commands.
func RequestOf(ev events.Event) (Operation, bool) {
	k, ok := KindOf(ev.EventType())
	if !ok {
		return Operation{}, false
	}
	op := kinds[k].request(ev)
	op.Kind = k
	op.Status = k.Queued(op.Type)
	return op, true
}

// header copies the Operation header of a command event.
func header(h events.Operation) Operation {
	return Operation{OperationID: h.OperationID, Login: h.Login, Tag: h.Tag, ClientOrderID: h.ClientOrderID,
		Attempt: h.Attempt, APIKeyID: h.Requester.APIKeyID, RequestedAt: h.Requester.ReceivedAt}
}

func placeRequest(ev events.Event) Operation {
	e := ev.(*events.OrderRequested)
	op := header(e.Operation)
	op.Symbol, op.Side, op.Type, op.Volume = e.Symbol, e.Side, e.Type, ptr(e.Volume)
	op.Price, op.StopLimitPrice, op.SL, op.TP = e.Price, e.StopLimitPrice, e.SL, e.TP
	op.TimeInForce, op.Expiration, op.Comment = e.TimeInForce, e.Expiration, e.Comment
	return op
}

func modifyOrderRequest(ev events.Event) Operation {
	e := ev.(*events.OrderModifyRequested)
	op := header(e.Operation)
	op.Symbol, op.Side, op.Type, op.TargetOrderID, op.OrderID = e.Symbol, e.Side, e.Type, e.OrderID, e.OrderID
	op.Price, op.StopLimitPrice, op.SL, op.TP = e.Price, e.StopLimitPrice, e.SL, e.TP
	op.TimeInForce, op.Expiration = e.TimeInForce, e.Expiration
	return op
}

func cancelOrderRequest(ev events.Event) Operation {
	e := ev.(*events.OrderCancelRequested)
	op := header(e.Operation)
	op.Symbol, op.Side, op.Type, op.TargetOrderID, op.OrderID = e.Symbol, e.Side, e.Type, e.OrderID, e.OrderID
	return op
}

func closePositionRequest(ev events.Event) Operation {
	e := ev.(*events.PositionCloseRequested)
	op := header(e.Operation)
	op.Symbol, op.Side, op.Volume, op.TargetPositionID, op.SweepID = e.Symbol, e.Side, e.Volume, e.PositionID, e.SweepID
	return op
}

func modifyPositionRequest(ev events.Event) Operation {
	e := ev.(*events.PositionModifyRequested)
	op := header(e.Operation)
	op.Symbol, op.Side, op.SL, op.TP, op.TargetPositionID = e.Symbol, e.Side, e.SL, e.TP, e.PositionID
	return op
}

func sweepRequest(ev events.Event) Operation {
	return header(ev.(*events.SweepRequested).Operation)
}

func ptr(d apd.Decimal) *apd.Decimal { return &d }

// MaxClientOrderIDLen is the longest client order id (the spec's 36 characters).
const MaxClientOrderIDLen = 36

// OwnRecord reports whether the operation has an idempotency record of its own, which names
// it: one command under its client order id (a sweep's legs share the sweep's record).
func (o Operation) OwnRecord() bool {
	n := utf8.RuneCountInString(o.ClientOrderID)
	return o.SweepID == "" && o.APIKeyID != 0 && n >= 1 && n <= MaxClientOrderIDLen
}
