package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/sim"
)

// routeAdmin registers the /admin endpoints. The simulator's admin hooks do not take a
// context; each answers once its facts are durable, which is quick.
func (s *server) routeAdmin() {
	a, p := s.admin, s.port
	handle(s, "/admin/quote", func(r *http.Request, req *quoteReq) (any, error) {
		bid, err := parseDec("bid", req.Bid)
		if err != nil {
			return nil, err
		}
		ask, err := parseDec("ask", req.Ask)
		if err != nil {
			return nil, err
		}
		if err := a.SetQuote(req.Symbol, bid, ask); err != nil {
			return nil, adminErr(err)
		}
		return quoteState(r.Context(), p, req.Symbol, true)
	})
	handle(s, "/admin/feed/resume", func(r *http.Request, req *symbolReq) (any, error) {
		if err := a.ResumeFeed(req.Symbol); err != nil {
			return nil, adminErr(err)
		}
		return quoteState(r.Context(), p, req.Symbol, false)
	})
	handle(s, "/admin/deposit", func(r *http.Request, req *depositReq) (any, error) {
		amount, err := parseDec("amount", req.Amount)
		if err != nil {
			return nil, err
		}
		deal, err := a.Deposit(req.Login, amount)
		if err != nil {
			return nil, adminErr(err)
		}
		acc, err := p.Account(r.Context(), req.Login)
		if err != nil {
			return nil, err
		}
		return &DepositResult{Login: req.Login, Deal: deal, Amount: dec.String(amount), Account: accountState(&acc)}, nil
	})
	handle(s, "/admin/account", func(r *http.Request, req *accountReq) (any, error) {
		if req.TradeAllowed != nil {
			if err := a.SetAccountTradeAllowed(req.Login, *req.TradeAllowed); err != nil {
				return nil, adminErr(err)
			}
		}
		acc, err := p.Account(r.Context(), req.Login)
		if err != nil {
			return nil, err
		}
		st := accountState(&acc)
		return &st, nil
	})
	handle(s, "/admin/fault", func(r *http.Request, req *FaultState) (any, error) {
		if req.LatencyMs < 0 {
			return nil, fmt.Errorf("%w: latencyMs must not be negative", ErrBadRequest)
		}
		if req.AnswerDelayMs < 0 {
			return nil, fmt.Errorf("%w: answerDelayMs must not be negative", ErrBadRequest)
		}
		f := sim.Fault{Mode: sim.FaultMode(req.Mode), Retcode: trading.Retcode(req.Retcode),
			Latency: time.Duration(req.LatencyMs) * time.Millisecond, AnswerDelay: time.Duration(req.AnswerDelayMs) * time.Millisecond}
		if err := a.SetFault(f); err != nil {
			return nil, adminErr(err)
		}
		st := faultState(a.CurrentFault())
		return &st, nil
	})
	handle(s, "/admin/logins", func(r *http.Request, _ *noArgs) (any, error) {
		logins, err := loginsOf(r.Context(), p)
		if err != nil {
			return nil, err
		}
		return &LoginsResult{Logins: logins}, nil
	})
	handle(s, "/admin/state", func(r *http.Request, _ *noArgs) (any, error) {
		logins, err := loginsOf(r.Context(), p)
		if err != nil {
			return nil, err
		}
		return &StateResult{Fault: faultState(a.CurrentFault()), Logins: logins}, nil
	})
}

func parseDec(name, s string) (apd.Decimal, error) {
	d, err := dec.Parse(s)
	if err != nil {
		return d, fmt.Errorf("%w: %s: %v", ErrBadRequest, name, err)
	}
	return d, nil
}

// adminErr marks a refusal of the simulator's admin hooks that is not one of the port's
// sentinels (unknown login/symbol, closed) as a bad request: those hooks only fail on
// their arguments (a bid above the ask, a zero amount, an unknown fault mode).
func adminErr(err error) error {
	if code, _ := classify(err); code != codeInternal {
		return err
	}
	return fmt.Errorf("%w: %w", ErrBadRequest, err)
}

func quoteState(ctx context.Context, p mt5.TradeServer, symbol string, held bool) (*QuoteState, error) {
	q, err := p.Quote(ctx, symbol)
	if errors.Is(err, mt5.ErrNoQuote) {
		return &QuoteState{Symbol: symbol, Held: held}, nil
	}
	if err != nil {
		return nil, err
	}
	return &QuoteState{Symbol: symbol, Bid: dec.String(q.Bid), Ask: dec.String(q.Ask), Time: q.Time, Held: held}, nil
}

func accountState(a *mt5.Account) AccountState {
	return AccountState{AccountHeader: a.Header(), Balance: dec.String(a.Balance), Credit: dec.String(a.Credit),
		Equity: dec.String(a.Equity), Margin: dec.String(a.Margin), MarginFree: dec.String(a.MarginFree)}
}

func faultState(f sim.Fault) FaultState {
	return FaultState{Mode: string(f.Mode), LatencyMs: f.Latency.Milliseconds(), AnswerDelayMs: f.AnswerDelay.Milliseconds(),
		Retcode: int(f.Retcode)}
}

func loginsOf(ctx context.Context, p mt5.TradeServer) ([]int64, error) {
	accs, err := p.Accounts(ctx)
	if err != nil {
		return nil, err
	}
	logins := make([]int64, 0, len(accs))
	for _, a := range accs {
		logins = append(logins, a.Login)
	}
	slices.Sort(logins)
	return logins, nil
}
