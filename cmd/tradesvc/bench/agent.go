package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"tradesvc/gateway/gwclient"
	"tradesvc/infra/wait"
)

// agent is one API key at work: its gateway client (signing with the server's clock), its
// live limits, the pacing of its reads, and its user data stream.
type agent struct {
	Key
	c      *gwclient.Client
	limits Limits
	budget *budget
	stream *userStream
}

// exchangeInfo is the part of GET /v1/exchangeInfo the bench reads.
type exchangeInfo struct {
	RateLimits []rateLimit `json:"rateLimits"`
	Symbols    []struct {
		Symbol string `json:"symbol"`
	} `json:"symbols"`
}

// rateLimit is one bucket of exchangeInfo's rateLimits.
type rateLimit struct {
	Type        string `json:"rateLimitType"`
	Interval    string `json:"interval"`
	IntervalNum int    `json:"intervalNum"`
	Limit       int    `json:"limit"`
}

// limitsOf reads a key's live limits (REQUEST_WEIGHT per minute, ORDERS per 10 s and per
// minute) from exchangeInfo; a bucket it does not list keeps the spec's default.
func limitsOf(info exchangeInfo) Limits {
	l := DefaultLimits()
	for _, r := range info.RateLimits {
		switch {
		case r.Type == "REQUEST_WEIGHT" && r.Interval == "MINUTE" && r.IntervalNum == 1:
			l.WeightPerMinute = r.Limit
		case r.Type == "ORDERS" && r.Interval == "SECOND" && r.IntervalNum == 10:
			l.Orders10s = r.Limit
		case r.Type == "ORDERS" && r.Interval == "MINUTE" && r.IntervalNum == 1:
			l.Orders1m = r.Limit
		}
	}
	return l
}

// prepare reads the key's limits and current usage through GET /v1/exchangeInfo with its
// header. A key just created may be unknown to the gateway's key cache for a moment
// (-2015): it is asked again for up to 10 s.
func (a *agent) prepare(ctx context.Context, symbol string, now func() time.Time) (usage, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := a.c.Keyed(ctx, http.MethodGet, "/v1/exchangeInfo", url.Values{"symbol": {symbol}})
		if err != nil {
			return usage{}, err
		}
		if res.Status == http.StatusOK {
			var info exchangeInfo
			if err := res.JSON(&info); err != nil {
				return usage{}, fmt.Errorf("exchangeInfo: %w", err)
			}
			if len(info.Symbols) != 1 || info.Symbols[0].Symbol != symbol {
				return usage{}, fmt.Errorf("symbol %s is not listed by exchangeInfo", symbol)
			}
			a.limits = limitsOf(info)
			a.budget = newBudget(a.limits.WeightPerMinute * 9 / 10)
			a.budget.observe(now(), res.Header)
			return usageOf(res.Header), nil
		}
		e, _ := res.Err()
		if e.Code != -2015 || time.Now().After(deadline) {
			return usage{}, fmt.Errorf("key %s: exchangeInfo answered HTTP %d: %s", short(a.APIKey), res.Status, res.Body)
		}
		select {
		case <-ctx.Done():
			return usage{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// usageNow asks for the key's current usage with the lightest keyed request (weight 1).
func (a *agent) usageNow(ctx context.Context, symbol string) (usage, error) {
	res, err := a.c.Keyed(ctx, http.MethodGet, "/v1/ticker/price", url.Values{"symbol": {symbol}})
	if err != nil {
		return usage{}, err
	}
	if res.Status != http.StatusOK {
		return usage{}, fmt.Errorf("key %s: ticker/price answered HTTP %d: %s", short(a.APIKey), res.Status, res.Body)
	}
	return usageOf(res.Header), nil
}

// awaitAccount waits until GET /v1/account answers for login: a service just started has
// not always projected its accounts yet, and an order for a login it does not know is
// refused (-2022).
func (a *agent) awaitAccount(ctx context.Context, login int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		res, err := a.c.Signed(ctx, http.MethodGet, "/v1/account", url.Values{"login": {strconv.FormatInt(login, 10)}},
			gwclient.InQuery)
		if err != nil {
			return err
		}
		if res.Status == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("key %s: GET /v1/account login %d answered HTTP %d: %s", short(a.APIKey), login, res.Status, res.Body)
		}
		if err := wait.For(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}
