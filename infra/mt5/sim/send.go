package sim

import (
	"context"
	"time"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/infra/wait"
)

// FaultMode names a fault the simulator can inject.
type FaultMode string

// Fault modes.
const (
	FaultNone       FaultMode = "none"
	FaultNoAnswer   FaultMode = "no-answer"  // executes; Send returns ErrNoAnswer (deals still appear)
	FaultTimeout    FaultMode = "timeout"    // nothing executes; Send returns ErrTimeout
	FaultDisconnect FaultMode = "disconnect" // Send answers 10031; feeds and reads fail with ErrDisconnected
	FaultRequote    FaultMode = "requote"    // market deals and closes answer 10004
	FaultRefuse     FaultMode = "refuse"     // every Send answers Fault.Retcode, nothing executes
	FaultLatency    FaultMode = "latency"    // only the added delay
	// FaultShortfalls reproduces the spec's known shortfalls of the staging server: no
	// in-band answer to any request (Send returns ErrNoAnswer after executing), refusals
	// are silent, removal of pending orders is not applied, deal history reads are empty,
	// and orders cannot be looked up by tag (OrdersByTag is empty; DealsByTag works).
	FaultShortfalls FaultMode = "shortfalls"
)

// Fault is the injected fault; Latency is added before every Send in any mode.
type Fault struct {
	Mode    FaultMode
	Retcode trading.Retcode // FaultRefuse
	Latency time.Duration
	// AnswerDelay holds the answer of every request that executes (whatever the mode) for
	// this long after the execution is durable: a caller whose context ends meanwhile gets
	// ctx.Err() although the request executed. Tests use it to stop an executor between
	// "sent" and the outcome.
	AnswerDelay time.Duration
}

// Send implements mt5.TradeServer.
func (s *Sim) Send(ctx context.Context, req mt5.TradeRequest) (mt5.TradeResult, error) {
	s.mu.Lock()
	f := s.fault
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return mt5.TradeResult{}, mt5.ErrClosed
	}
	if err := wait.For(ctx, f.Latency); err != nil {
		return mt5.TradeResult{}, err
	}
	switch f.Mode {
	case FaultTimeout:
		return mt5.TradeResult{}, mt5.ErrTimeout
	case FaultDisconnect:
		return ret(trading.RetConnection), nil
	case FaultRefuse:
		return ret(f.Retcode), nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return mt5.TradeResult{}, mt5.ErrClosed
	}
	res := s.execLocked(&req)
	res.Facts = s.pendingFacts()
	if err := s.commitAndWait(ctx); err != nil {
		return mt5.TradeResult{}, err
	}
	if err := wait.For(ctx, f.AnswerDelay); err != nil {
		return mt5.TradeResult{}, err
	}
	if f.Mode == FaultNoAnswer || f.Mode == FaultShortfalls {
		return mt5.TradeResult{}, mt5.ErrNoAnswer
	}
	return res, nil
}

func (s *Sim) execLocked(req *mt5.TradeRequest) mt5.TradeResult {
	a := s.accounts[req.Login]
	if a == nil {
		return ret(trading.RetInvalid)
	}
	switch req.Action {
	case mt5.ActionDeal:
		if req.Position != 0 {
			return s.closeRequest(a, req)
		}
		return s.openMarket(a, req)
	case mt5.ActionPending:
		return s.placePending(a, req)
	case mt5.ActionModify:
		return s.modifyPending(a, req)
	case mt5.ActionRemove:
		if s.fault.Mode == FaultShortfalls {
			return ret(trading.RetDone) // the staging server accepts the cancel and never applies it
		}
		return s.removePending(a, req)
	case mt5.ActionSLTP:
		return s.modifySLTP(a, req)
	}
	return ret(trading.RetInvalid)
}
