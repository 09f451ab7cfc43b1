package bench

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"tradesvc/gateway/gwclient"
	"tradesvc/infra/wait"
)

// maxResolve bounds the orders whose missing DEAL is looked for by order id after a load
// (each costs a read of the key's weight).
const maxResolve = 2000

// resolveMissing looks up, for acknowledged orders whose DEAL never came with their `C`,
// their order id through GET /v1/order, and times them by the DEAL frame of that order if
// one came without `C` (a defect of the service the report counts: the spec puts `C` on
// every DEAL of an order placed through the API, for the key that placed it). It returns
// how many it timed that way.
func (r *runner) resolveMissing(ctx context.Context, missing []*orderRec) int {
	n := 0
	for _, o := range missing[:min(len(missing), maxResolve)] {
		id, ok := r.orderIDOf(ctx, o)
		if ok && r.deals.adopt(o.coid, o.login, id) {
			n++
		}
	}
	return n
}

// orderIDOf reads an order's id through GET /v1/order, paced under its key's weight budget.
func (r *runner) orderIDOf(ctx context.Context, o *orderRec) (int64, bool) {
	a := o.agent
	for {
		pause := a.budget.take(r.now(), 1)
		if pause == 0 {
			break
		}
		if wait.For(ctx, pause) != nil {
			return 0, false
		}
	}
	res, err := a.c.Signed(ctx, http.MethodGet, "/v1/order",
		url.Values{"login": {strconv.FormatInt(o.login, 10)}, "origClientOrderId": {o.coid}}, gwclient.InQuery)
	if err != nil {
		return 0, false
	}
	a.budget.observe(r.now(), res.Header)
	var body struct {
		OrderID int64 `json:"orderId"`
	}
	if res.Status != http.StatusOK || res.JSON(&body) != nil || body.OrderID == 0 {
		return 0, false
	}
	return body.OrderID, true
}
