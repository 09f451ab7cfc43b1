package executor

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/query"
)

// answerStatus maps an in-band answer to the operation's status and code (docs/trading.md,
// "The executor", the table of in-band answers). resend marks a send of an idempotent
// request repeated after a crash: an answer saying there is nothing left to do (10025 for a
// modification, 10036 or an order already off the book for a removal) then means the first
// send was applied.
func answerStatus(kind string, market bool, ret trading.Retcode, resend bool) (string, events.Code) {
	switch ret {
	case trading.RetDone:
		return doneStatus(kind, market), events.CodeOK
	case trading.RetDonePartial:
		return events.StatusPartiallyFilled, events.CodeOK
	case trading.RetPlaced:
		return events.StatusNew, events.CodeOK
	case trading.RetTimeout:
		return events.StatusInDoubt, events.CodeServerTimeout
	}
	if resend {
		switch {
		case ret == trading.RetNoChanges && (kind == query.KindModifyOrder || kind == query.KindModifyPosition),
			(ret == trading.RetPositionClosed || ret == trading.RetOrderChanged) && kind == query.KindCancelOrder:
			return doneStatus(kind, market), events.CodeOK
		}
	}
	return events.StatusRejected, events.CodeForRetcode(int(ret))
}

// doneStatus is what a completed request (10009) means for each kind: a modified order
// still rests, a removed one is cancelled, everything else is filled.
func doneStatus(kind string, market bool) string {
	switch kind {
	case query.KindModifyOrder:
		return events.StatusNew
	case query.KindCancelOrder:
		return events.StatusCanceled
	case query.KindPlaceOrder:
		if !market {
			return events.StatusNew // a pending order answers 10008; 10009 still means it rests
		}
	}
	return events.StatusFilled
}

// newOutcome starts the outcome of o decided at now (Unix ms).
func newOutcome(o *operation, now int64) *events.ExecutionOutcome {
	return &events.ExecutionOutcome{OperationID: o.op.OperationID, Login: o.op.Login, Tag: o.op.Tag,
		Attempt: o.op.Attempt, DecidedAt: now}
}

// answered is the outcome of an in-band answer.
func answered(o *operation, res mt5.TradeResult, resend bool, now int64) *events.ExecutionOutcome {
	out := newOutcome(o, now)
	status, code := answerStatus(o.kind, o.market, res.Retcode, resend)
	out.Status, out.Code, out.Retcode = status, int(code), int(res.Retcode)
	out.OrderID, out.DealID, out.Position = res.Order, res.Deal, res.Position
	out.Price, out.Volume = nonZero(res.Price), nonZero(res.Volume)
	out.Msg = answerMsg(o.kind, status, res.Retcode)
	return out
}

// refused is an outcome decided without an answer from the trade server.
func refused(o *operation, status string, code events.Code, msg string, now int64) *events.ExecutionOutcome {
	out := newOutcome(o, now)
	out.Status, out.Code, out.Msg = status, int(code), msg
	return out
}

// unanswered is the outcome of a request the trade server took without answering, when
// nothing it did can be found yet: the queued status, left for the trade server's facts.
func unanswered(o *operation, now int64) *events.ExecutionOutcome {
	out := refused(o, o.queued(), events.CodeOK, msgUnanswered, now)
	out.Unanswered = true
	return out
}

// Messages of outcomes the executor decides itself.
const (
	msgNotDispatched = "Service unavailable; the order was not dispatched within the dispatch window."
	msgUnanswered    = "Sent; the trade server has not answered. The outcome follows from its reports."
	msgTimeout       = "The trade server did not answer in time; the request may have executed."
	msgUnknown       = "Execution status unknown; the request may have executed."
	msgNoConnection  = "No connection to the trade server; the request was not sent."
	msgBadCommand    = "Internal error; the request could not be sent: "
)

// answerMsg is a short English message for an in-band answer.
func answerMsg(kind, status string, ret trading.Retcode) string {
	switch status {
	case events.StatusFilled:
		switch kind {
		case query.KindClosePosition:
			return "Position closed."
		case query.KindModifyPosition:
			return "Position modified."
		}
		return "Order filled."
	case events.StatusPartiallyFilled:
		return "Order partially filled."
	case events.StatusNew:
		if kind == query.KindModifyOrder {
			return "Order modified."
		}
		return "Order placed."
	case events.StatusCanceled:
		return "Order canceled."
	case events.StatusInDoubt:
		return msgTimeout
	}
	return "The trade server refused the request: " + ret.String() + " (" + strconv.Itoa(int(ret)) + ")."
}

func nonZero(d apd.Decimal) *apd.Decimal {
	if d.IsZero() {
		return nil
	}
	return &d
}
