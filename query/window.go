package query

import (
	"fmt"

	"tradesvc/events"
)

// MaxHistorySpanMs is the longest lookup span of the history endpoints (7 days).
const MaxHistorySpanMs = 7 * 24 * 3600 * 1000

// HistoryQuery asks for the history of Login (GET /v1/allOrders, GET /v1/userTrades), of
// Symbol when it is set: the records from FromID on (the request's orderId or fromId), in the
// window of StartTime and EndTime (HistoryWindow), at most Limit of them. FromID, StartTime
// and EndTime are nil when not sent; Limit 0 means the default; Now is the server time the
// window defaults to. APIKeyID is the caller's key: clientOrderId is shown only on its own
// orders.
type HistoryQuery struct {
	Login     int64
	APIKeyID  int64
	Symbol    string
	FromID    *int64
	StartTime *int64
	EndTime   *int64
	Limit     int
	Now       int64
}

// limit is the page size asked for, HistoryDefaultLimit when none was sent.
func (q HistoryQuery) limit() int {
	if q.Limit <= 0 {
		return HistoryDefaultLimit
	}
	return q.Limit
}

// HistoryWindow resolves the window rules of GET /v1/allOrders and GET /v1/userTrades:
// no bounds gives the last 7 days; endTime alone the 7 days ending there; startTime alone
// runs to now; endTime before startTime is -1128; a span above 7 days (including the
// implicit now) is -1127. start and end are nil when not sent.
func HistoryWindow(start, end *int64, now int64) (from, to int64, err error) {
	switch {
	case start == nil && end == nil:
		return now - MaxHistorySpanMs, now, nil
	case start == nil:
		return *end - MaxHistorySpanMs, *end, nil
	case end == nil:
		from, to = *start, now
	default:
		from, to = *start, *end
	}
	if to < from {
		return 0, 0, events.Reject(events.CodeBadCombination, "endTime is before startTime.")
	}
	if to-from > MaxHistorySpanMs {
		return 0, 0, events.Reject(events.CodeSpanTooBig, "Lookup span is over 7 days.")
	}
	return from, to, nil
}

// pageLimit is a read's limit parameter: 0 (not sent) is def, outside 1..max is -1130.
func pageLimit(n, def, max int) (int, error) {
	if n == 0 {
		return def, nil
	}
	if n < 1 || n > max {
		return 0, events.Reject(events.CodeInvalidData, fmt.Sprintf("Invalid limit: 1 to %d.", max))
	}
	return n, nil
}
