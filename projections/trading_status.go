package projections

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/query"
)

// Status derivation (docs/trading.md "Status derivation"): what readers see of an operation,
// computed from its request (newest attempt), the newest attempt's outcome, the trading deals
// of its tag and, for a pending placement, its order. It is a pure function of those inputs,
// so the three topics may arrive in any order and a replay derives the same rows.

// opOutcome is the stored outcome of one attempt (the out_* columns).
type opOutcome struct {
	Attempt    int
	Status     string
	Code       int
	Retcode    int
	Msg        string
	Unanswered bool
	OrderID    int64
	DealID     int64
	PositionID int64
	Price      *apd.Decimal
	Volume     *apd.Decimal
	DecidedAt  int64
}

// opFills sums the distinct trading deals (action 0/1) whose comment carries the tag.
type opFills struct {
	Count int
	// Volume is the sum of their volumes, VolumePrice the sum of volume*price (exact).
	Volume, VolumePrice apd.Decimal
	// FirstPrice is the price of the first deal (the fill price when it is the only one).
	FirstPrice apd.Decimal
	// The first deal (lowest ticket) names the deal, order and position of the fill.
	DealID, OrderID, PositionID int64
	LastTime                    int64
}

// opOrder is the order a pending placement follows (rm.orders, by the outcome's orderId).
type opOrder struct {
	Open       bool
	State      int
	UpdateTime int64
}

// opInputs is everything the derivation reads.
type opInputs struct {
	Kind        string
	Type        string
	Volume      *apd.Decimal // requested; nil for a full close
	Attempt     int
	RequestedAt int64
	Out         *opOutcome
	Fills       opFills
	Order       *opOrder
	// PositionClosed: the position a CLOSE_POSITION targets is reported closed.
	PositionClosed bool
	// Digits of the operation's symbol, for rounding an averaged price; ok false when unknown.
	Digits   int32
	DigitsOK bool
}

// opDerived is what readers see (the derived columns).
type opDerived struct {
	Status         string
	Code           int
	Retcode        int
	Msg            string
	OrderID        int64
	DealID         int64
	PositionID     int64
	ExecPrice      *apd.Decimal
	ExecutedVolume *apd.Decimal
	UpdatedAt      int64
	// Deals is how many distinct trading deals of the tag confirm the fill.
	Deals int
	// Attempt is the attempt the derivation is for (readers wait for their own attempt).
	Attempt int
	// Decided: the executor's outcome of that attempt is in (readers wait for it too).
	Decided bool
}

// fillable kinds are those whose deals are their fills.
func fillable(kind string) bool {
	return kind == query.KindPlaceOrder || kind == query.KindClosePosition
}

// answered returns the newest attempt's outcome when it says something: an outcome of an
// older attempt is reset by the newer attempt (its REJECTED -1000 no longer holds), and an
// Unanswered outcome leaves the status to the trade server's facts.
func (in *opInputs) answered() *opOutcome {
	o := in.Out
	if o == nil || o.Attempt < in.Attempt || o.Unanswered {
		return nil
	}
	return o
}

// derive applies the rules of docs/trading.md in order: fills, the outcome (a pending
// placement with a known order follows that order), the queued status.
func derive(in opInputs) opDerived {
	d := deriveStatus(in)
	d.UpdatedAt = in.updatedAt()
	d.Attempt = in.Attempt
	d.Decided = in.Out != nil && in.Out.Attempt >= in.Attempt
	if fillable(in.Kind) {
		d.Deals = in.Fills.Count
	}
	return d
}

func deriveStatus(in opInputs) opDerived {
	out := in.answered()
	if fillable(in.Kind) && in.Fills.Count > 0 {
		// An in-band FILLED / PARTIALLY_FILLED answer can come before all of its deals (they
		// travel on another topic): it stands until the deals catch up, so a reader never sees
		// an answered fill move backwards.
		if out != nil && (out.Status == events.StatusFilled || out.Status == events.StatusPartiallyFilled) &&
			out.Volume != nil && in.Fills.Volume.Cmp(out.Volume) < 0 {
			return fromOutcome(in, out)
		}
		return fromFills(in, out)
	}
	if out != nil {
		d := fromOutcome(in, out)
		if in.Kind == query.KindPlaceOrder && in.Type != "MARKET" && out.OrderID != 0 && in.Order != nil {
			d.Status = pendingStatus(*in.Order)
		}
		return d
	}
	return opDerived{Status: query.QueuedStatus(in.Kind, in.Type)}
}

// pendingStatus is the status of a pending placement from its order: open orders are NEW
// (PARTIALLY_FILLED in raw state 3), finished ones map their raw state.
func pendingStatus(o opOrder) string {
	if o.Open && o.State != 3 {
		return events.StatusNew
	}
	return query.StatusOfState(o.State)
}

func fromOutcome(in opInputs, out *opOutcome) opDerived {
	d := opDerived{Status: out.Status, Code: out.Code, Retcode: out.Retcode, Msg: out.Msg,
		OrderID: out.OrderID, DealID: out.DealID, PositionID: out.PositionID}
	// Only a fill's answer carries an execution price and volume; a pending placement's
	// answer carries the order price and the placed volume, which are not executions.
	if fillable(in.Kind) && (out.Status == events.StatusFilled || out.Status == events.StatusPartiallyFilled) {
		d.ExecPrice, d.ExecutedVolume = copyDec(out.Price), copyDec(out.Volume)
	}
	return d
}

func fromFills(in opInputs, out *opOutcome) opDerived {
	f := in.Fills
	vol := f.Volume
	d := opDerived{Status: events.StatusPartiallyFilled, OrderID: f.OrderID, DealID: f.DealID,
		PositionID: f.PositionID, ExecutedVolume: &vol}
	complete := false
	if in.Volume != nil {
		complete = f.Volume.Cmp(in.Volume) >= 0
	} else { // a full close: the request does not say how much the position held
		complete = in.PositionClosed || (out != nil && out.Status == events.StatusFilled)
	}
	if complete {
		d.Status = events.StatusFilled
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
	if out != nil && events.IsSuccessRetcode(out.Retcode) {
		d.Retcode = out.Retcode
	}
	return d
}

// updatedAt is the time of the newest fact the derivation read.
func (in *opInputs) updatedAt() int64 {
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

// visibleChange reports whether a and b differ in what wakes a waiter: status, code, retcode,
// orderId or executedVolume.
func visibleChange(a, b opDerived) bool {
	return a.Status != b.Status || a.Code != b.Code || a.Retcode != b.Retcode || a.OrderID != b.OrderID ||
		!decPtrEqual(a.ExecutedVolume, b.ExecutedVolume) || a.Deals != b.Deals || a.Attempt != b.Attempt ||
		a.Decided != b.Decided
}

// anyChange reports whether any derived column differs.
func anyChange(a, b opDerived) bool {
	return visibleChange(a, b) || a.Msg != b.Msg || a.DealID != b.DealID || a.PositionID != b.PositionID ||
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
