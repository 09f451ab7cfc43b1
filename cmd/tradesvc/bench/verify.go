package bench

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"tradesvc/gateway/gwclient"
	"tradesvc/infra/wait"
)

// VerifyResult is what the REST API says of the acknowledged orders once the load is over.
type VerifyResult struct {
	// Checked acknowledged orders; Filled of them read FILLED; NotFilled did not: they ended
	// otherwise, or were still open after --verify-timeout of reads in which no order settled
	// (each is a lost order: acknowledged and not FILLED).
	Checked   int `json:"checked"`
	Filled    int `json:"filled"`
	NotFilled int `json:"notFilled"`
	// Orders lists the first 100 not FILLED with what GET /v1/order last answered.
	Orders []Unfilled `json:"orders,omitempty"`
	// InDoubt are orders answered with no acknowledgement but that may have executed (no
	// answer, a 5xx other than -1008), by the status GET /v1/order gives them now.
	InDoubt map[string]int `json:"inDoubt,omitempty"`
	Seconds float64        `json:"seconds"`
}

// Unfilled is an acknowledged order that did not read FILLED.
type Unfilled struct {
	ClientOrderID string `json:"clientOrderId"`
	Login         int64  `json:"login"`
	APIKey        string `json:"apiKey"`
	Last          string `json:"last"`
}

// check is the state of one order's verification.
type check struct {
	o     *orderRec
	last  string // what GET /v1/order last said: a status, or "HTTP 400 -2013"
	final bool
	ok    bool
}

// terminal statuses end an order; only FILLED is a success.
var terminal = map[string]bool{"FILLED": true, "REJECTED": true, "CANCELED": true, "EXPIRED": true}

// verify reads every acknowledged order (and every order in doubt) through GET /v1/order by
// origClientOrderId, with the key that placed it, until it is terminal (see checkAll for
// when the wait ends). Reads are paced under each key's weight budget.
func (r *runner) verify(ctx context.Context, acked, inDoubt []*orderRec) VerifyResult {
	began := time.Now()
	checks := make([]*check, 0, len(acked)+len(inDoubt))
	for _, o := range acked {
		checks = append(checks, &check{o: o})
	}
	for _, o := range inDoubt {
		checks = append(checks, &check{o: o})
	}
	if len(checks) > 0 {
		r.checkAll(ctx, checks)
	}
	v := VerifyResult{Checked: len(acked), Seconds: time.Since(began).Seconds()}
	for _, c := range checks[:len(acked)] {
		if c.ok {
			v.Filled++
			continue
		}
		v.NotFilled++
		if len(v.Orders) < 100 {
			v.Orders = append(v.Orders, Unfilled{ClientOrderID: c.o.coid, Login: c.o.login, APIKey: short(c.o.agent.APIKey),
				Last: c.last})
		}
	}
	sort.Slice(v.Orders, func(i, j int) bool { return v.Orders[i].ClientOrderID < v.Orders[j].ClientOrderID })
	for _, c := range checks[len(acked):] {
		if v.InDoubt == nil {
			v.InDoubt = map[string]int{}
		}
		v.InDoubt[c.last]++
	}
	return v
}

// checkAll runs the checks on a pool of workers until each is final, or until reads have
// gone on for --verify-timeout without any check becoming final: a service still working
// through a backlog keeps settling orders, so only a stall ends the wait (time spent waiting
// for a key's weight budget is not a stall), and what is left then is not FILLED.
func (r *runner) checkAll(ctx context.Context, checks []*check) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan *check, len(checks))
	for _, c := range checks {
		queue <- c
	}
	var left, reads atomic.Int64
	left.Store(int64(len(checks)))
	workers := min(64, max(4, 2*len(r.agents)))
	var wg, timers sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case c := <-queue:
					final := r.checkOnce(ctx, c)
					reads.Add(1)
					if final {
						if left.Add(-1) == 0 {
							cancel()
						}
						continue
					}
					timers.Add(1)
					time.AfterFunc(time.Second, func() { defer timers.Done(); queue <- c })
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the stall watchdog
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		w := stallWatch{limit: r.o.VerifyTimeout, left: left.Load()}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if w.tick(time.Second, left.Load(), reads.Load()) {
				r.logf("verification: no order settled over %s of reads; %d checks are not final (acknowledged orders not FILLED, and requests in doubt whose order never appeared)",
					r.o.VerifyTimeout, left.Load())
				cancel()
				return
			}
		}
	}()
	wg.Wait()
	timers.Wait()
}

// checkOnce reads one order and reports whether its check is final.
func (r *runner) checkOnce(ctx context.Context, c *check) bool {
	a := c.o.agent
	for {
		pause := a.budget.take(r.now(), 1)
		if pause == 0 {
			break
		}
		if wait.For(ctx, pause) != nil {
			return false
		}
	}
	res, err := a.c.Signed(ctx, http.MethodGet, "/v1/order",
		url.Values{"login": {strconv.FormatInt(c.o.login, 10)}, "origClientOrderId": {c.o.coid}}, gwclient.InQuery)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return false
		}
		c.last = outcomeTransport
	case res.Status == http.StatusOK:
		a.budget.observe(r.now(), res.Header)
		var body struct {
			Status string `json:"status"`
		}
		_ = res.JSON(&body)
		c.last = body.Status
		if terminal[body.Status] {
			c.final, c.ok = true, body.Status == "FILLED"
			return true
		}
	default:
		a.budget.observe(r.now(), res.Header)
		if res.Status == http.StatusTooManyRequests || res.Status == http.StatusTeapot {
			a.budget.pause(r.now(), res.Header)
		}
		e, _ := res.Err()
		c.last = "HTTP " + strconv.Itoa(res.Status) + " " + strconv.Itoa(e.Code)
	}
	return false
}

// stallWatch tells a verification that goes on reading without any order settling from one
// that is merely waiting for weight budgets (no reads: not a stall) or making progress. Once
// every order left has been read again since the last one settled, waiting for budgets counts
// too: orders that never settle (an order in doubt that does not exist reads -2013 forever)
// would otherwise keep a verification under per-minute budgets going for a reading burst a
// minute, indefinitely.
type stallWatch struct {
	limit         time.Duration
	stalled       time.Duration
	left, reads   int64
	readsAtSettle int64 // reads when an order last settled
}

// tick takes the counts after d more and reports whether the stall has reached the limit.
func (w *stallWatch) tick(d time.Duration, left, reads int64) bool {
	switch {
	case left != w.left:
		w.stalled, w.readsAtSettle = 0, reads
	case reads != w.reads || reads-w.readsAtSettle >= left:
		w.stalled += d
	}
	w.left, w.reads = left, reads
	return w.stalled >= w.limit
}
