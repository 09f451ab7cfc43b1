package projections

import (
	"fmt"
	"reflect"
	"time"

	json "github.com/goccy/go-json"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// Scales of the execution_quality decimal columns: prices and volumes as the deal history
// (priceScale), slippage in points and in money with four places.
const slippageScale = 4

// execRow is one row of execution_quality, in the types the driver binds and scans: decimals
// as text at their column's scale, NULL as a nil pointer. Two rows derived from the same facts
// and reference data are equal field for field, which is how the projection knows a fact
// changed nothing.
type execRow struct {
	Login           int64
	Tag             string
	Version         uint64
	OperationID     string
	Recorded        uint8
	Decided         uint8
	Kind            string
	APIKeyID        int64
	ClientOrderID   string
	SweepID         string
	Attempt         uint32
	Symbol          string
	Side            string
	Type            string
	RequestedVolume *string
	RequestedPrice  *string
	StopLimitPrice  *string
	QuoteBid        *string
	QuoteAsk        *string
	QuoteTimeMs     *int64
	ArrivalPrice    *string
	Status          string
	Code            *int32
	Retcode         *int32
	Msg             string
	Unanswered      uint8
	Reconciled      uint8
	OrderID         *int64
	DealID          *int64
	PositionID      *int64
	Deals           uint32
	DealIDs         []int64
	ExecutedVolume  string
	FillPrice       *string
	SlippagePoints  *string
	Slippage        *string
	Currency        string
	ReceivedMs      int64
	QueuedMs        int64
	SentMs          *int64
	AnsweredMs      *int64
	DecidedMs       *int64
	FirstDealTimeMs *int64
	FirstDealSeenMs *int64
	LatencyAnswerMs *int64
	LatencyFillMs   *int64
	ReceivedDate    time.Time
	State           string
}

// execColumns are the columns of execution_quality in execRow's order.
var execColumns = []string{"login", "tag", "version", "operation_id", "recorded", "decided", "kind", "api_key_id",
	"client_order_id", "sweep_id", "attempt", "symbol", "side", "type", "requested_volume", "requested_price",
	"stop_limit_price", "quote_bid", "quote_ask", "quote_time_ms", "arrival_price", "status", "code", "mt5_retcode",
	"msg", "unanswered", "reconciled", "order_id", "deal_id", "position_id", "deals", "deal_ids", "executed_volume",
	"fill_price", "slippage_points", "slippage", "currency", "received_ms", "queued_ms", "sent_ms", "answered_ms",
	"decided_ms", "first_deal_time_ms", "first_deal_observed_ms", "latency_answer_ms", "latency_fill_ms",
	"received_date", "state"}

// values are the row's column values for an insert.
func (r *execRow) values() []any {
	return []any{r.Login, r.Tag, r.Version, r.OperationID, r.Recorded, r.Decided, r.Kind, r.APIKeyID,
		r.ClientOrderID, r.SweepID, r.Attempt, r.Symbol, r.Side, r.Type, r.RequestedVolume, r.RequestedPrice,
		r.StopLimitPrice, r.QuoteBid, r.QuoteAsk, r.QuoteTimeMs, r.ArrivalPrice, r.Status, r.Code, r.Retcode,
		r.Msg, r.Unanswered, r.Reconciled, r.OrderID, r.DealID, r.PositionID, r.Deals, r.DealIDs, r.ExecutedVolume,
		r.FillPrice, r.SlippagePoints, r.Slippage, r.Currency, r.ReceivedMs, r.QueuedMs, r.SentMs, r.AnsweredMs,
		r.DecidedMs, r.FirstDealTimeMs, r.FirstDealSeenMs, r.LatencyAnswerMs, r.LatencyFillMs, r.ReceivedDate, r.State}
}

// dests are the scan destinations of the row, in column order.
func (r *execRow) dests() []any {
	return []any{&r.Login, &r.Tag, &r.Version, &r.OperationID, &r.Recorded, &r.Decided, &r.Kind, &r.APIKeyID,
		&r.ClientOrderID, &r.SweepID, &r.Attempt, &r.Symbol, &r.Side, &r.Type, &r.RequestedVolume, &r.RequestedPrice,
		&r.StopLimitPrice, &r.QuoteBid, &r.QuoteAsk, &r.QuoteTimeMs, &r.ArrivalPrice, &r.Status, &r.Code, &r.Retcode,
		&r.Msg, &r.Unanswered, &r.Reconciled, &r.OrderID, &r.DealID, &r.PositionID, &r.Deals, &r.DealIDs,
		&r.ExecutedVolume, &r.FillPrice, &r.SlippagePoints, &r.Slippage, &r.Currency, &r.ReceivedMs, &r.QueuedMs,
		&r.SentMs, &r.AnsweredMs, &r.DecidedMs, &r.FirstDealTimeMs, &r.FirstDealSeenMs, &r.LatencyAnswerMs,
		&r.LatencyFillMs, &r.ReceivedDate, &r.State}
}

// execRef is the reference data a row's slippage needs: the symbol's digits, tick size and
// tick value (in its profit currency), and the account's currency.
type execRef struct {
	SymbolOK        bool
	Digits          int32
	TickSize        apd.Decimal
	TickValue       apd.Decimal
	ProfitCurrency  string
	AccountCurrency string
}

// deriveRow computes the row of st: the request columns, the status columns the API shows
// (trading.Derive, the derivation the trading read model uses), the fill, the slippage
// against the arrival price, and the timeline.
func deriveRow(key execKey, st *execState, ref execRef) (execRow, error) {
	state, err := json.Marshal(st)
	if err != nil {
		return execRow{}, fmt.Errorf("encode the state of %d/%s: %w", key.Login, key.Tag, err)
	}
	row := execRow{Login: key.Login, Tag: key.Tag, OperationID: st.OperationID, State: string(state),
		Currency: ref.AccountCurrency, ReceivedDate: time.Unix(0, 0).UTC(), DealIDs: []int64{}}
	in := trading.Inputs{Digits: ref.Digits, DigitsOK: ref.SymbolOK}
	attempt := 0
	if r := st.Request; r != nil {
		attempt = r.Attempt
		row.Recorded, row.Kind, row.APIKeyID, row.ClientOrderID, row.SweepID = 1, string(r.Kind), r.APIKeyID, r.ClientOrderID, r.SweepID
		row.Attempt, row.Symbol, row.Side, row.Type = uint32(r.Attempt), r.Symbol, r.Side, r.Type
		row.RequestedVolume, row.RequestedPrice = fixedPtr(r.Volume, priceScale), fixedPtr(r.Price, priceScale)
		row.StopLimitPrice, row.QuoteBid, row.QuoteAsk = fixedPtr(r.StopLimitPrice, priceScale), fixedPtr(r.QuoteBid, priceScale), fixedPtr(r.QuoteAsk, priceScale)
		row.QuoteTimeMs, row.ArrivalPrice = nonZero64(r.QuoteTime), fixedPtr(r.arrival(), priceScale)
		row.ReceivedMs, row.QueuedMs = r.ReceivedAt, r.QueuedAt
		row.ReceivedDate = time.UnixMilli(r.ReceivedAt).UTC().Truncate(24 * time.Hour)
		in.Kind, in.Type, in.Volume, in.Attempt, in.RequestedAt = r.Kind, r.Type, r.Volume, r.Attempt, r.ReceivedAt
		in.PositionClosed = r.TargetPositionID != 0 && containsID(st.ClosedPositions, r.TargetPositionID)
	}
	out := st.Outcome
	if out != nil {
		if st.Request == nil {
			attempt = out.Attempt
		}
		in.Out = out
		for _, o := range st.Orders {
			if o.ID == out.OrderID {
				in.Order = &trading.PendingOrder{Open: o.Open, State: trading.OrderState(o.State), UpdateTime: o.UpdateTime}
			}
		}
	}
	for _, d := range st.Deals {
		in.Fills.Add(d.ID, d.OrderID, d.PositionID, d.Volume, d.Price, d.Time)
		row.DealIDs = append(row.DealIDs, d.ID)
	}
	d := trading.Derive(in)
	row.Status, row.Code, row.Retcode, row.Msg = string(d.Status), nonZero32(d.Code), nonZero32(d.Retcode), d.Msg
	row.OrderID, row.DealID, row.PositionID = nonZero64(d.OrderID), nonZero64(d.DealID), nonZero64(d.PositionID)
	row.Deals = uint32(len(st.Deals))
	if d.Decided {
		row.Decided = 1
	}
	row.ExecutedVolume = dec.Fixed(apd.Decimal{}, priceScale)
	if d.ExecutedVolume != nil {
		row.ExecutedVolume = dec.Fixed(*d.ExecutedVolume, priceScale)
	}
	row.FillPrice = fixedPtr(d.ExecPrice, priceScale)
	if st.Request != nil && d.ExecPrice != nil && d.ExecutedVolume != nil && d.ExecutedVolume.Sign() > 0 {
		row.SlippagePoints, row.Slippage = slippage(st.Request, *d.ExecPrice, *d.ExecutedVolume, ref)
	}
	row.timeline(st, attempt)
	return row, nil
}

// arrival is the price the fill is measured against: the side of the validating quote a
// market order or close trades on (ask to buy, bid to sell; the quoted price of an older log),
// or the price a pending order asked for (the limit price of a stop-limit). nil when the
// gateway had no fresh quote, and for operations that trade nothing.
func (r *execRequest) arrival() *apd.Decimal {
	buy := r.Side == trading.Buy.String()
	switch {
	case r.Kind == trading.KindPlaceOrder && trading.IsPendingName(r.Type):
		if r.StopLimitPrice != nil && r.StopLimitPrice.Sign() > 0 {
			return r.StopLimitPrice
		}
		return r.Price
	case !r.Kind.DealsFill():
		return nil
	case buy && r.QuoteAsk != nil:
		return r.QuoteAsk
	case !buy && r.QuoteBid != nil:
		return r.QuoteBid
	}
	return r.QuotedPrice
}

// slippage is how much worse than the arrival price the fill was for the client (negative:
// better), in points of the symbol and in the account's currency (tick value per tick size,
// times the executed volume). Money stays nil when the symbol or the account is unknown, or
// the symbol's profit currency is neither the account's nor convertible without a rate (USD
// and USC are: 1 USD = 100 USC; USC is never added to USD).
func slippage(r *execRequest, fill, volume apd.Decimal, ref execRef) (points, money *string) {
	arrival := r.arrival()
	if arrival == nil || !ref.SymbolOK {
		return nil, nil
	}
	diff := dec.Sub(fill, *arrival)
	if r.Side != trading.Buy.String() {
		diff = dec.Neg(diff)
	}
	p := dec.Fixed(dec.Mul(diff, dec.New(1, ref.Digits)), slippageScale) // diff / 10^-digits: points
	points = &p
	rate, ok := currencyRate(ref.ProfitCurrency, ref.AccountCurrency)
	if !ok || ref.TickSize.Sign() <= 0 {
		return points, nil
	}
	ticks := dec.MustQuo(diff, ref.TickSize) // tick size checked positive
	m := dec.Fixed(dec.Mul(dec.Mul(dec.Mul(ticks, ref.TickValue), volume), rate), slippageScale)
	return points, &m
}

// currencyRate converts an amount in from into to where no market rate is needed.
func currencyRate(from, to string) (apd.Decimal, bool) {
	switch {
	case from == "" || to == "":
		return apd.Decimal{}, false
	case from == to:
		return dec.New(1, 0), true
	case from == "USD" && to == "USC":
		return dec.New(100, 0), true
	case from == "USC" && to == "USD":
		return dec.New(1, -2), true
	}
	return apd.Decimal{}, false
}

// timeline fills the times of the attempt the row shows and the latencies between them. The
// answer time is the decision of an outcome that carries the trade server's in-band answer
// (a return code); an outcome reconciled from facts, unanswered or refused before sending
// has none.
func (row *execRow) timeline(st *execState, attempt int) {
	if o := st.Outcome; o != nil && o.Attempt == attempt {
		row.DecidedMs = nonZero64(o.DecidedAt)
		if o.SentAt > 0 {
			row.SentMs = nonZero64(o.SentAt)
		}
		if o.Retcode != 0 && !o.Unanswered && !o.Reconciled {
			row.AnsweredMs = nonZero64(o.DecidedAt)
		}
		if o.Unanswered {
			row.Unanswered = 1
		}
		if o.Reconciled {
			row.Reconciled = 1
		}
	}
	if s := st.Sent; row.SentMs == nil && s != nil && s.Attempt == attempt {
		row.SentMs = nonZero64(s.SentAt)
	}
	for i, d := range st.Deals {
		if i == 0 || d.Time < *row.FirstDealTimeMs {
			row.FirstDealTimeMs = &d.Time
		}
		if i == 0 || d.Observed < *row.FirstDealSeenMs {
			row.FirstDealSeenMs = &d.Observed
		}
	}
	if row.ReceivedMs > 0 {
		row.LatencyAnswerMs = since(row.ReceivedMs, row.AnsweredMs)
		row.LatencyFillMs = since(row.ReceivedMs, row.FirstDealSeenMs)
	}
}

func since(from int64, to *int64) *int64 {
	if to == nil {
		return nil
	}
	d := *to - from
	return &d
}

func fixedPtr(d *apd.Decimal, places int32) *string {
	if d == nil {
		return nil
	}
	s := dec.Fixed(*d, places)
	return &s
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// sameRow reports whether two rows hold the same values, their versions aside: a batch whose
// facts changed nothing writes nothing. Dates compare by day (the driver scans them in its
// own location), an empty deal list is one whether nil or not.
func sameRow(a, b execRow) bool {
	if !a.ReceivedDate.Equal(b.ReceivedDate) && a.ReceivedDate.Format(time.DateOnly) != b.ReceivedDate.Format(time.DateOnly) {
		return false
	}
	a.Version, b.Version = 0, 0
	a.ReceivedDate, b.ReceivedDate = time.Time{}, time.Time{}
	if len(a.DealIDs) == 0 && len(b.DealIDs) == 0 {
		a.DealIDs, b.DealIDs = nil, nil
	}
	return reflect.DeepEqual(a, b)
}
