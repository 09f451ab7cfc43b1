package trading

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
)

// Status derivation (docs/trading.md "Status derivation"): what readers see of an operation,
// computed from its request (newest attempt), the newest attempt's outcome, the trading deals
// of its tag and, for a pending placement, its order. It is a pure function of those inputs,
// so the facts may arrive in any order and a replay derives the same rows.

// Outcome is the stored outcome of one attempt (the executor's ExecutionOutcome, OutcomeOf).
// Its JSON is what the execution-quality projection stores as its state's outcome, so the
// field order and names stay as they are.
type Outcome struct {
	Attempt    int    `json:"attempt"`
	Status     Status `json:"status"`
	Code       int    `json:"code,omitempty"`
	Retcode    int    `json:"retcode,omitempty"`
	Msg        string `json:"msg,omitempty"`
	Unanswered bool   `json:"unanswered,omitempty"`
	// Reconciled: derived from the trade server's records, not from an in-band answer.
	Reconciled bool         `json:"reconciled,omitempty"`
	OrderID    int64        `json:"orderId,omitempty"`
	DealID     int64        `json:"dealId,omitempty"`
	PositionID int64        `json:"positionId,omitempty"`
	Price      *apd.Decimal `json:"price,omitempty"`
	Volume     *apd.Decimal `json:"volume,omitempty"`
	DecidedAt  int64        `json:"decidedAt"`
	// SentAt is when the attempt was handed to the trade server (0: not sent).
	SentAt int64 `json:"sentAt,omitempty"`
}

// OutcomeOf is the outcome an ExecutionOutcome event records.
func OutcomeOf(e *events.ExecutionOutcome) Outcome {
	return Outcome{Attempt: e.Attempt, Status: Status(e.Status), Code: e.Code, Retcode: e.Retcode, Msg: e.Msg,
		Unanswered: e.Unanswered, Reconciled: e.Reconciled, OrderID: e.OrderID, DealID: e.DealID,
		PositionID: e.Position, Price: e.Price, Volume: e.Volume, DecidedAt: e.DecidedAt, SentAt: e.SentAt}
}

// Fills sums the distinct trading deals (action 0/1) whose comment carries the tag.
type Fills struct {
	Count int
	// Volume is the sum of their volumes, VolumePrice the sum of volume*price (exact).
	Volume, VolumePrice apd.Decimal
	// FirstPrice is the price of the first deal (the fill price when it is the only one).
	FirstPrice apd.Decimal
	// The first deal (lowest ticket) names the deal, order and position of the fill.
	DealID, OrderID, PositionID int64
	LastTime                    int64
}

// Add counts one more distinct deal (callers pass each deal once, in ticket order).
func (f *Fills) Add(dealID, orderID, positionID int64, volume, price apd.Decimal, time int64) {
	if f.Count == 0 || dealID < f.DealID {
		f.DealID, f.OrderID, f.PositionID, f.FirstPrice = dealID, orderID, positionID, price
	}
	f.Count++
	f.Volume = dec.Add(f.Volume, volume)
	f.VolumePrice = dec.Add(f.VolumePrice, dec.Mul(volume, price))
	f.LastTime = max(f.LastTime, time)
}

// PendingOrder is the order a pending placement follows (by the outcome's orderId).
type PendingOrder struct {
	Open       bool
	State      OrderState
	UpdateTime int64
}

// Inputs is everything the derivation reads.
type Inputs struct {
	Kind        Kind
	Type        string
	Volume      *apd.Decimal // requested; nil for a full close
	Attempt     int
	RequestedAt int64
	Out         *Outcome
	Fills       Fills
	Order       *PendingOrder
	// PositionClosed: the position a CLOSE_POSITION targets is reported closed.
	PositionClosed bool
	// Digits of the operation's symbol, for rounding an averaged price; DigitsOK false when
	// unknown.
	Digits   int32
	DigitsOK bool
}

// Derived is what readers see (the derived columns); the change feed carries it as JSON.
type Derived struct {
	Status         Status       `json:"status"`
	Code           int          `json:"code,omitempty"`
	Retcode        int          `json:"retcode,omitempty"`
	Msg            string       `json:"msg,omitempty"`
	OrderID        int64        `json:"orderId,omitempty"`
	DealID         int64        `json:"dealId,omitempty"`
	PositionID     int64        `json:"positionId,omitempty"`
	ExecPrice      *apd.Decimal `json:"execPrice,omitempty"`
	ExecutedVolume *apd.Decimal `json:"executedVolume,omitempty"`
	UpdatedAt      int64        `json:"updatedAt,omitempty"`
	// Deals is how many distinct trading deals of the tag confirm the fill.
	Deals int `json:"deals,omitempty"`
	// Attempt is the attempt the derivation is for (readers wait for their own attempt).
	Attempt int `json:"attempt"`
	// Decided: the executor's outcome of that attempt is in (readers wait for it too).
	Decided bool `json:"decided,omitempty"`
}

// answered returns the newest attempt's outcome when it says something: an outcome of an
// older attempt is reset by the newer attempt (its REJECTED -1000 no longer holds), and an
// Unanswered outcome leaves the status to the trade server's facts.
func (in *Inputs) answered() *Outcome {
	o := in.Out
	if o == nil || o.Attempt < in.Attempt || o.Unanswered {
		return nil
	}
	return o
}

// Derive applies the rules in order: fills, the outcome (a pending placement with a known
// order follows that order), the queued status.
func Derive(in Inputs) Derived {
	d := deriveStatus(in)
	d.UpdatedAt = in.updatedAt()
	d.Attempt = in.Attempt
	d.Decided = in.Out != nil && in.Out.Attempt >= in.Attempt
	if in.Kind.DealsFill() {
		d.Deals = in.Fills.Count
	}
	return d
}

func deriveStatus(in Inputs) Derived {
	out := in.answered()
	if in.Kind.DealsFill() && in.Fills.Count > 0 {
		// An in-band FILLED / PARTIALLY_FILLED answer can come before all of its deals: it
		// stands until the deals catch up, so a reader never sees an answered fill move back.
		if out != nil && out.Status.IsFill() && out.Volume != nil && in.Fills.Volume.Cmp(out.Volume) < 0 {
			return fromOutcome(in, out)
		}
		return fromFills(in, out)
	}
	if out != nil {
		d := fromOutcome(in, out)
		if in.Kind == KindPlaceOrder && !marketType(in.Type) && out.OrderID != 0 && in.Order != nil {
			d.Status = in.Order.status()
		}
		return d
	}
	return Derived{Status: in.Kind.Queued(in.Type)}
}

// status is the status of a pending placement from its order: open orders are NEW
// (PARTIALLY_FILLED in raw state 3), finished ones map their raw state.
func (o PendingOrder) status() Status {
	if o.Open && o.State != StatePartial {
		return StatusNew
	}
	return o.State.Status()
}

func fromOutcome(in Inputs, out *Outcome) Derived {
	d := Derived{Status: out.Status, Code: out.Code, Retcode: out.Retcode, Msg: out.Msg,
		OrderID: out.OrderID, DealID: out.DealID, PositionID: out.PositionID}
	// Only a fill's answer carries an execution price and volume; a pending placement's
	// answer carries the order price and the placed volume, which are not executions.
	if in.Kind.DealsFill() && out.Status.IsFill() {
		d.ExecPrice, d.ExecutedVolume = copyDec(out.Price), copyDec(out.Volume)
	}
	return d
}

func fromFills(in Inputs, out *Outcome) Derived {
	f := in.Fills
	vol := f.Volume
	d := Derived{Status: StatusPartiallyFilled, OrderID: f.OrderID, DealID: f.DealID,
		PositionID: f.PositionID, ExecutedVolume: &vol}
	complete := false
	if in.Volume != nil {
		complete = f.Volume.Cmp(in.Volume) >= 0
	} else { // a full close: the request does not say how much the position held
		complete = in.PositionClosed || (out != nil && out.Status == StatusFilled)
	}
	if complete {
		d.Status = StatusFilled
	}
	price := f.FirstPrice
	if f.Count > 1 && !f.Volume.IsZero() {
		places := ownPlaces(f.FirstPrice)
		if in.DigitsOK {
			places = in.Digits
		}
		price = dec.Round(dec.MustQuo(f.VolumePrice, f.Volume), places+2)
	}
	d.ExecPrice = &price
	// A fill supersedes a refusal (REJECTED -1000, IN_DOUBT): its code no longer holds; a
	// success retcode of the trade server's answer still says how it answered.
	if out != nil && isSuccessRetcode(out.Retcode) {
		d.Retcode = out.Retcode
	}
	return d
}

// isSuccessRetcode reports the platform's success return codes (10008 placed, 10009 done,
// 10010 done partially).
func isSuccessRetcode(ret int) bool { return ret >= 10008 && ret <= 10010 }

// updatedAt is the time of the newest fact the derivation read.
func (in *Inputs) updatedAt() int64 {
	t := in.RequestedAt
	if in.Out != nil {
		t = max(t, in.Out.DecidedAt)
	}
	if in.Fills.Count > 0 {
		t = max(t, in.Fills.LastTime)
	}
	if in.Order != nil {
		t = max(t, in.Order.UpdateTime)
	}
	return t
}

// ownPlaces is the number of decimal places d is written with.
func ownPlaces(d apd.Decimal) int32 {
	if d.Exponent < 0 {
		return -d.Exponent
	}
	return 0
}

func copyDec(d *apd.Decimal) *apd.Decimal {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

// VisibleChange reports whether a and b differ in what wakes a waiter: status, code,
// retcode, orderId, executedVolume, the deals that confirm a fill, the attempt or the decision.
func VisibleChange(a, b Derived) bool {
	return a.Status != b.Status || a.Code != b.Code || a.Retcode != b.Retcode || a.OrderID != b.OrderID ||
		!decPtrEqual(a.ExecutedVolume, b.ExecutedVolume) || a.Deals != b.Deals || a.Attempt != b.Attempt ||
		a.Decided != b.Decided
}

// AnyChange reports whether any derived column differs.
func AnyChange(a, b Derived) bool {
	return VisibleChange(a, b) || a.Msg != b.Msg || a.DealID != b.DealID || a.PositionID != b.PositionID ||
		!decPtrEqual(a.ExecPrice, b.ExecPrice) || a.UpdatedAt != b.UpdatedAt
}

// decPtrEqual compares by value (1.10 equals 1.1: numeric columns do not keep trailing zeros
// apart from their scale, and a scale change alone is no news).
func decPtrEqual(a, b *apd.Decimal) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(b) == 0
}

// Apply writes the derived columns into op (Attempt is the caller's to set: a derivation of
// an older attempt says nothing of a newer one).
func (d Derived) Apply(op *Operation) {
	op.Status, op.Code, op.Retcode, op.Msg = d.Status, d.Code, d.Retcode, d.Msg
	op.OrderID, op.DealID, op.PositionID = d.OrderID, d.DealID, d.PositionID
	op.ExecPrice, op.ExecutedVolume, op.UpdatedAt = d.ExecPrice, d.ExecutedVolume, d.UpdatedAt
	op.Deals, op.Decided = d.Deals, d.Decided
}
