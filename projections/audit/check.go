package audit

import (
	"fmt"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// check lists the steps the story needs and the log lacks. Every attempt needs its command
// (received, recorded, appended) and an answer; an attempt the executor sent needs its sent
// record (one refused before sending, REJECTED -1000 without a return code, has none); a
// fill needs its deals; a sweep is never sent itself (its legs are), so it needs its command
// only.
func (s *Story) check() {
	s.Missing = []string{}
	miss := func(format string, args ...any) { s.Missing = append(s.Missing, fmt.Sprintf(format, args...)) }
	if len(s.Attempts) == 0 {
		miss("the operation is not in the log")
	}
	kind := trading.Kind(s.Kind)
	if s.Kind == "" {
		miss("attempt 1: received, recorded, appended (no command event)")
	}
	filled := false
	for _, a := range s.Attempts {
		if a.Appended == nil && s.Kind != "" {
			miss("attempt %d: received, recorded, appended (no command event of this attempt)", a.Attempt)
		}
		if s.Kind != "" && !kind.Sent() {
			continue
		}
		if len(a.Answers) == 0 {
			if a.Sent == nil {
				miss("attempt %d: sent", a.Attempt)
			}
			miss("attempt %d: answered", a.Attempt)
			continue
		}
		last := a.Answers[len(a.Answers)-1]
		if a.Sent == nil && !refusedUnsent(last) {
			miss("attempt %d: sent", a.Attempt)
		}
		if trading.Status(last.Status).IsFill() {
			filled = true
		}
	}
	if filled && kind.DealsFill() && len(s.Deals) == 0 {
		miss("filled: no deal carries the tag %s", s.Tag)
	}
	s.Complete = len(s.Missing) == 0
}

// refusedUnsent reports an outcome of an attempt the execution path refused without sending
// it: the dispatch window passed (REJECTED -1000, no return code), or its client order id
// names another operation (REJECTED -1133: void, or superseded after a crash).
func refusedUnsent(a Answer) bool {
	return a.Status == string(trading.StatusRejected) && a.Retcode == 0 &&
		(a.Code == int(events.CodeUnavailable) || a.Code == int(events.CodeClientOrderIDReused))
}
