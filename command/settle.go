package command

import (
	"context"
	"sync"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// SettleWait bounds how long a retry of an unsettled operation waits for its settlement
// before it answers what it has (docs/trading.md, "Settling what is unknown").
const SettleWait = 2 * time.Second

// SettleAwaiter waits until an unsettled operation is settled (query.OperationAwaiter).
type SettleAwaiter interface {
	// AwaitSettled waits up to timeout until op's attempt is settled (trading.Operation's
	// Unsettled is false) or a later attempt is known, and returns the operation as reached;
	// found is false when nothing of that attempt was seen.
	AwaitSettled(ctx context.Context, op trading.Operation, timeout time.Duration) (trading.Operation, bool, error)
}

// settle asks the executor to settle op, a retry's unsettled operation, at once, and waits
// until settleBy for it. The ask is the attempt's command appended again, unchanged but for
// fresh envelopes: the executor, finding the attempt decided and unsettled, asks the trade
// server by tag instead of sending (command/executor/settle.go), in order with the login's
// other operations. Consumers deduplicate the copy on (operation id, attempt). Whatever fails
// here answers the operation as it stands: the executor also settles it in the background.
func (c *core) settle(ctx context.Context, rec *Record, op trading.Operation, settleBy time.Time) trading.Operation {
	if c.asked.first(op.OperationID, op.Attempt, c.now()) {
		envs, err := c.rewrap(*rec, rec.Attempt)
		if err != nil {
			return op
		}
		if err := c.log.AppendEnvelopes(ctx, events.TopicCommands(), envs...); err != nil {
			return op
		}
	}
	wait := settleBy.Sub(c.now())
	if c.settled == nil || wait <= 0 {
		return op
	}
	got, found, err := c.settled.AwaitSettled(ctx, op, wait)
	if err != nil || !found {
		return op
	}
	return got
}

// settleAskEvery is how often one attempt's settlement is asked for: concurrent retries of
// one operation (a bot's storm) append one copy of its command, not one each.
const settleAskEvery = time.Second

// settleAsks remembers which attempts were asked to settle lately.
type settleAsks struct {
	mu  sync.Mutex
	at  map[settleAsk]time.Time
	gcd time.Time
}

type settleAsk struct {
	id      string
	attempt int
}

// first reports whether (id, attempt) was not asked for within settleAskEvery, and
// remembers the ask.
func (s *settleAsks) first(id string, attempt int, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[settleAsk]time.Time{}
	}
	if now.Sub(s.gcd) > time.Minute {
		for k, t := range s.at {
			if now.Sub(t) > settleAskEvery {
				delete(s.at, k)
			}
		}
		s.gcd = now
	}
	k := settleAsk{id, attempt}
	if t, ok := s.at[k]; ok && now.Sub(t) < settleAskEvery {
		return false
	}
	s.at[k] = now
	return true
}
