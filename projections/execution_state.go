package projections

import (
	"cmp"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
)

// The facts behind one execution-quality row (execution_quality.state), merged so that the
// result does not depend on the order they arrive in: the newest attempt's command, the
// outcome of the newest attempt (the latest decided), the executor's "sent" record of the
// newest attempt, the trading deals and the orders that carry the operation's tag. A fact
// merged twice changes nothing, which is what makes the table idempotent under redelivery
// and replay.

// execKey identifies an operation by its account and correlation tag: every event of the
// operation carries both, and the trade server's deals and orders carry the tag in their
// comment.
type execKey struct {
	Login int64
	Tag   string
}

// execState is the merged facts of one operation (JSON in the state column).
type execState struct {
	OperationID string           `json:"operationId,omitempty"`
	Request     *execRequest     `json:"request,omitempty"`
	Outcome     *trading.Outcome `json:"outcome,omitempty"`
	Sent        *execSent        `json:"sent,omitempty"`
	Deals       []execDeal       `json:"deals,omitempty"`
	Orders      []execOrder      `json:"orders,omitempty"`
	// ClosedPositions are the positions the trade server reported closed in band, with an
	// outcome of this operation: a full close is complete once its position is among them.
	ClosedPositions []int64 `json:"closedPositions,omitempty"`
}

// execRequest is the command of the newest attempt and when it was received and queued.
type execRequest struct {
	Kind             trading.Kind `json:"kind"`
	APIKeyID         int64        `json:"apiKeyId"`
	ClientOrderID    string       `json:"clientOrderId"`
	SweepID          string       `json:"sweepId,omitempty"`
	Attempt          int          `json:"attempt"`
	Symbol           string       `json:"symbol"`
	Side             string       `json:"side"`
	Type             string       `json:"type"`
	Volume           *apd.Decimal `json:"volume,omitempty"`
	Price            *apd.Decimal `json:"price,omitempty"`
	StopLimitPrice   *apd.Decimal `json:"stopLimitPrice,omitempty"`
	TargetPositionID int64        `json:"targetPositionId,omitempty"`
	QuoteBid         *apd.Decimal `json:"quoteBid,omitempty"`
	QuoteAsk         *apd.Decimal `json:"quoteAsk,omitempty"`
	QuotedPrice      *apd.Decimal `json:"quotedPrice,omitempty"`
	QuoteTime        int64        `json:"quoteTime,omitempty"`
	// ReceivedAt is when the gateway received the request; QueuedAt when the command became
	// durable in the log (its record's timestamp; the earliest copy when it was appended
	// again by a retry of a failed append).
	ReceivedAt int64 `json:"receivedAt"`
	QueuedAt   int64 `json:"queuedAt"`
}

// execSent is the executor's ExecutionSent_v1 of the newest attempt it recorded (logs written
// before ExecutionOutcome_v1 carried sentAt).
type execSent struct {
	Attempt int   `json:"attempt"`
	SentAt  int64 `json:"sentAt"`
}

// execDeal is one trading deal of the operation; Observed is when the service first saw it
// (the relay's append, or the executor's in-band answer that carried it).
type execDeal struct {
	ID         int64       `json:"id"`
	OrderID    int64       `json:"orderId"`
	PositionID int64       `json:"positionId"`
	Volume     apd.Decimal `json:"volume"`
	Price      apd.Decimal `json:"price"`
	Time       int64       `json:"time"`
	Observed   int64       `json:"observed"`
}

// execOrder is the newest state of an order that carries the operation's tag (a pending
// placement follows its order).
type execOrder struct {
	ID         int64  `json:"id"`
	Seq        uint64 `json:"seq"`
	Open       bool   `json:"open"`
	State      int    `json:"state"`
	UpdateTime int64  `json:"updateTime"`
}

// execFact is one event's contribution to one operation.
type execFact struct {
	key   execKey
	merge func(*execState)
}

// execFacts reads what a message says about operations; nothing for events the table does
// not use (sweeps, market data, account changes, deals that are no trade or carry no tag).
func execFacts(m batch.Message) []execFact {
	if m.Event == nil {
		return nil // a type this build does not know, or one the projection does not accept
	}
	switch e := m.Event.(type) {
	case *events.ExecutionOutcome:
		if e.Void {
			return nil // an orphan's (trading_orphans.go)
		}
		return outcomeFacts(e)
	case *events.ExecutionSent:
		s := execSent{Attempt: e.Attempt, SentAt: e.SentAt}
		return []execFact{{execKey{e.Login, e.Tag}, func(st *execState) { st.mergeSent(e.OperationID, s) }}}
	case *events.DealAdded:
		if tag := trading.TagOf(e.Comment); tag != "" && trading.DealAction(e.Action).IsTrade() {
			d := dealOf(e, m.Envelope.OccurredAt)
			return []execFact{{execKey{e.Login, tag}, func(st *execState) { st.mergeDeal(d) }}}
		}
	case *events.OrderChanged:
		if tag := trading.TagOf(e.Comment); tag != "" {
			o := orderOf(e)
			return []execFact{{execKey{e.Login, tag}, func(st *execState) { st.mergeOrder(o) }}}
		}
	default:
		if req, ok := requestOf(m); ok {
			return []execFact{{execKey{req.login, req.tag}, func(st *execState) { st.mergeRequest(req.id, req.r) }}}
		}
	}
	return nil
}

// outcomeFacts is an outcome and the facts its send caused (reported in band): its deals and
// orders, and whether the position a close targets closed.
func outcomeFacts(e *events.ExecutionOutcome) []execFact {
	key := execKey{e.Login, e.Tag}
	o := trading.OutcomeOf(e)
	var deals []execDeal
	var orders []execOrder
	var closed []int64
	if f := e.Facts; f != nil {
		for i := range f.Deals {
			if trading.DealAction(f.Deals[i].Action).IsTrade() {
				deals = append(deals, dealOf(&f.Deals[i], e.DecidedAt))
			}
		}
		for i := range f.Orders {
			orders = append(orders, orderOf(&f.Orders[i]))
		}
		for _, p := range f.Positions {
			if p.Change == events.ChangeClose {
				closed = append(closed, p.PositionID)
			}
		}
	}
	// The outcome carries the command it decides (logs written since it does): the row has
	// its request even while the command topic's consumer lags; when the command's own
	// record is read, it gives the time it was queued.
	var req *taggedRequest
	if e.CommandType != "" {
		if cmd, err := events.Decode(events.Envelope{Type: e.CommandType, Payload: e.Command}); err == nil {
			if r, ok := requestOf(batch.Message{Event: cmd}); ok {
				r.r.QueuedAt = 0
				req = &r
			}
		}
	}
	return []execFact{{key, func(st *execState) {
		if req != nil {
			st.mergeRequest(req.id, req.r)
		}
		st.mergeOutcome(e.OperationID, o)
		for _, d := range deals {
			st.mergeDeal(d)
		}
		for _, ord := range orders {
			st.mergeOrder(ord)
		}
		for _, id := range closed {
			if i, found := slices.BinarySearch(st.ClosedPositions, id); !found {
				st.ClosedPositions = slices.Insert(st.ClosedPositions, i, id)
			}
		}
	}}}
}

type taggedRequest struct {
	id, tag string
	login   int64
	r       execRequest
}

// requestOf reads a command event of an operation the executor sends (not a sweep, whose
// legs are closes of their own).
func requestOf(m batch.Message) (taggedRequest, bool) {
	op, ok := trading.RequestOf(m.Event)
	if !ok || !op.Kind.Sent() {
		return taggedRequest{}, false
	}
	r := execRequest{Kind: op.Kind, APIKeyID: op.APIKeyID, ClientOrderID: op.ClientOrderID, SweepID: op.SweepID,
		Attempt: op.Attempt, Symbol: op.Symbol, Side: op.Side, Type: op.Type, Volume: op.Volume, Price: op.Price,
		StopLimitPrice: op.StopLimitPrice, TargetPositionID: op.TargetPositionID, ReceivedAt: op.RequestedAt,
		QueuedAt: queuedAt(m)}
	if o, ok := m.Event.(*events.OrderRequested); ok {
		r.QuoteBid, r.QuoteAsk, r.QuotedPrice, r.QuoteTime = o.QuoteBid, o.QuoteAsk, o.QuotedPrice, o.QuoteTime
	}
	if r.Kind == trading.KindModifyPosition {
		r.Type = "" // a position has no order type; the command names its direction only
	}
	return taggedRequest{id: op.OperationID, tag: op.Tag, login: op.Login, r: r}, true
}

// queuedAt is when the command became durable in the log: its record's timestamp, or the
// producer's time in the envelope when the record has none (a test that builds messages).
func queuedAt(m batch.Message) int64 {
	if !m.Timestamp.IsZero() && m.Timestamp.After(time.UnixMilli(0)) {
		return m.Timestamp.UnixMilli()
	}
	return m.Envelope.OccurredAt
}

func dealOf(d *events.DealAdded, observed int64) execDeal {
	return execDeal{ID: d.DealID, OrderID: d.OrderID, PositionID: d.PositionID, Volume: d.Volume, Price: d.Price,
		Time: d.Time, Observed: observed}
}

func orderOf(o *events.OrderChanged) execOrder {
	return execOrder{ID: o.OrderID, Seq: o.Seq, Open: o.Change != events.ChangeDelete, State: o.State, UpdateTime: o.Time}
}

// mergeRequest keeps the newest attempt's command; copies of the same attempt (a retry that
// re-appended it, the copy an outcome carries) keep the earliest time it was queued (0: not
// known yet, the command's own record not read).
func (st *execState) mergeRequest(id string, r execRequest) {
	st.OperationID = id
	switch {
	case st.Request == nil || r.Attempt > st.Request.Attempt:
		st.Request = &r
	case r.Attempt == st.Request.Attempt && r.QueuedAt > 0 && (st.Request.QueuedAt == 0 || r.QueuedAt < st.Request.QueuedAt):
		st.Request.QueuedAt = r.QueuedAt
	}
}

// mergeOutcome keeps the outcome of the newest attempt, the latest decided of that attempt
// (an IN_DOUBT settled later by reconciliation).
func (st *execState) mergeOutcome(id string, o trading.Outcome) {
	st.OperationID = id
	if cur := st.Outcome; cur == nil || o.Attempt > cur.Attempt || o.Attempt == cur.Attempt && o.DecidedAt > cur.DecidedAt {
		st.Outcome = &o
	}
}

func (st *execState) mergeSent(id string, s execSent) {
	st.OperationID = id
	if cur := st.Sent; cur == nil || s.Attempt > cur.Attempt || s.Attempt == cur.Attempt && s.SentAt < cur.SentAt {
		st.Sent = &s
	}
}

// mergeDeal adds a deal once, keeping the earliest time it was observed; deals stay in ticket
// order.
func (st *execState) mergeDeal(d execDeal) {
	i, found := slices.BinarySearchFunc(st.Deals, d.ID, func(x execDeal, id int64) int { return cmp.Compare(x.ID, id) })
	if !found {
		st.Deals = slices.Insert(st.Deals, i, d)
		return
	}
	if d.Observed < st.Deals[i].Observed {
		st.Deals[i].Observed = d.Observed
	}
}

// mergeOrder keeps the newest state (by feed sequence) of each order carrying the tag.
func (st *execState) mergeOrder(o execOrder) {
	i, found := slices.BinarySearchFunc(st.Orders, o.ID, func(x execOrder, id int64) int { return cmp.Compare(x.ID, id) })
	if !found {
		st.Orders = slices.Insert(st.Orders, i, o)
		return
	}
	if o.Seq > st.Orders[i].Seq {
		st.Orders[i] = o
	}
}
