package trading

import "tradesvc/events"

// Settlement: what may become of an attempt whose outcome the service does not know, and what
// a retry under the same client order id does about it (docs/trading.md, "Settling what is
// unknown"). The executor settles only what the trade server confirms, and never sends; a
// retry is sent again, as the next attempt, only once the attempt certainly did not execute.

// Unsettled reports whether an attempt of kind k naming order type typ, whose outcome has
// status and the Unanswered flag, may have executed without the service knowing: IN_DOUBT,
// or sent without an in-band answer and with nothing found by tag yet (for an operation that
// executes at market: a pending placement without an answer is left to the trade server's
// facts, since its known shortfalls hide such orders from a lookup by tag). Only kinds whose
// trade-server records carry the tag (ByTag) can be settled by asking the trade server.
func (k Kind) Unsettled(typ string, status Status, unanswered bool) bool {
	if !k.ByTag() {
		return false
	}
	return status == StatusInDoubt || unanswered && k.AtMarket(typ)
}

// Unsettled reports whether op's newest attempt is unsettled as readers see it: IN_DOUBT, or
// decided without an answer and still in its queued status (Kind.Unsettled). A same-id retry
// of such an operation asks the executor to settle it.
func (op *Operation) Unsettled() bool {
	unanswered := op.Decided && op.Status == op.Queued() && op.Code == 0 && op.Retcode == 0
	return op.Kind.Unsettled(op.Type, op.Status, unanswered)
}

// RetriedAfresh reports whether a same-id retry of op is sent again as its next attempt: its
// newest attempt certainly did not execute. That is a refusal by the execution path itself,
// without a return code: -1000 (not dispatched within the window, or confirmed by the trade
// server not to have executed) or -5015 (no connection: the request never left).
func (op *Operation) RetriedAfresh() bool {
	return op.Status == StatusRejected && op.Retcode == 0 &&
		(op.Code == int(events.CodeUnavailable) || op.Code == int(events.CodeNoConnection))
}
