package executor

import (
	"strconv"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// answerStatus maps an in-band answer to the operation's status and code (docs/trading.md,
// "The executor", the table of in-band answers). resend marks a send of an idempotent
// request repeated after a crash: an answer saying there is nothing left to do (the kind's
// ResendApplied codes) then means the first send was applied.
func answerStatus(o *operation, ret trading.Retcode, resend bool) (trading.Status, events.Code) {
	switch ret {
	case trading.RetDone:
		return o.kind.Done(o.typ), events.CodeOK
	case trading.RetDonePartial:
		return trading.StatusPartiallyFilled, events.CodeOK
	case trading.RetPlaced:
		return trading.StatusNew, events.CodeOK
	case trading.RetTimeout:
		return trading.StatusInDoubt, events.CodeServerTimeout
	}
	if resend && o.kind.ResendApplied(int(ret)) {
		return o.kind.Done(o.typ), events.CodeOK
	}
	return trading.StatusRejected, events.CodeForRetcode(int(ret))
}

// newOutcome starts the outcome of o decided at now (Unix ms).
func newOutcome(o *operation, now int64) *events.ExecutionOutcome {
	return &events.ExecutionOutcome{OperationID: o.op.OperationID, Login: o.op.Login, Tag: o.op.Tag,
		Attempt: o.op.Attempt, DecidedAt: now, CommandType: o.env.Type, Command: o.env.Payload}
}

// answered is the outcome of an in-band answer.
func answered(o *operation, res mt5.TradeResult, resend bool, now int64) *events.ExecutionOutcome {
	out := newOutcome(o, now)
	status, code := answerStatus(o, res.Retcode, resend)
	out.Status, out.Code, out.Retcode = string(status), int(code), int(res.Retcode)
	out.OrderID, out.DealID, out.Position = res.Order, res.Deal, res.Position
	out.Price, out.Volume = nonZero(res.Price), nonZero(res.Volume)
	out.Facts = inBandFacts(res.Facts)
	out.Msg = answerMsg(o.kind, status, res.Retcode)
	return out
}

// refused is an outcome decided without an answer from the trade server.
func refused(o *operation, status trading.Status, code events.Code, msg string, now int64) *events.ExecutionOutcome {
	out := newOutcome(o, now)
	out.Status, out.Code, out.Msg = string(status), int(code), msg
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
	msgVoid          = "Not sent: a retry of a request already recorded under its newClientOrderId; that request's own operation answers it."
	msgSuperseded    = "Not sent: its newClientOrderId is bound to another request of the same key (a retry recorded after a restart); that one is executed instead."
)

// answerMsg is a short English message for an in-band answer.
func answerMsg(kind trading.Kind, status trading.Status, ret trading.Retcode) string {
	switch status {
	case trading.StatusFilled:
		return kind.FilledMsg()
	case trading.StatusPartiallyFilled:
		return "Order partially filled."
	case trading.StatusNew:
		if kind.Target() == trading.TargetOrder { // a modified order rests: NEW is its success
			return kind.FilledMsg()
		}
		return "Order placed."
	case trading.StatusCanceled:
		return kind.FilledMsg()
	case trading.StatusInDoubt:
		return msgTimeout
	}
	return "The trade server refused the request: " + ret.String() + " (" + strconv.Itoa(int(ret)) + ")."
}

// inBandFacts are the facts an answer carried, as the catalogue carries them (nil: none).
func inBandFacts(fs []mt5.Fact) *events.ExecutionFacts {
	if len(fs) == 0 {
		return nil
	}
	out := &events.ExecutionFacts{}
	for _, f := range fs {
		if ev, ok := f.Event(); ok {
			out.Add(ev) // a kind this build does not know comes with the relay's copy
		}
	}
	return out
}

func nonZero(d apd.Decimal) *apd.Decimal {
	if d.IsZero() {
		return nil
	}
	return &d
}
