package bench

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync"
	"time"

	"tradesvc/gateway/gwclient"
	"tradesvc/infra/wait"
)

// orderRec is one order of a load: what was sent, when it was due, and what came back.
// Its sender goroutine alone writes it until the load's WaitGroup is done.
type orderRec struct {
	coid  string
	agent *agent
	login int64
	due   time.Time
	timed bool // its key's user data stream is read: its DEAL is timed

	sent       bool
	lag        time.Duration // from due to the sender running (the client's own lateness)
	connWait   time.Duration // waiting for a keep-alive connection of the client's pool (its slot, then the transport's)
	latency    time.Duration // from the send to the answer (connection wait included)
	answeredAt time.Time
	httpStatus int
	status     string
	code       int
	msg        string
	transport  string // the transport error, when there was no answer
}

// Outcome names an answer for the counts: "200 ACCEPTED", "503 -1008", "429 -1015", "502",
// "transport error", or "not sent (key paused)" for an order whose key was answered 429 or
// 418 and is waiting out its Retry-After (sending anyway earns a ban).
func (o *orderRec) Outcome() string {
	switch {
	case !o.sent:
		return outcomeNotSent
	case o.transport != "":
		return outcomeTransport
	case o.httpStatus == http.StatusOK && o.status != "":
		return "200 " + o.status
	case o.code != 0:
		return strconv.Itoa(o.httpStatus) + " " + strconv.Itoa(o.code)
	}
	return strconv.Itoa(o.httpStatus)
}

const (
	outcomeNotSent   = "not sent (key paused)"
	outcomeTransport = "transport error"
)

// acknowledged reports whether the service took the order: a 200 with a status (ACCEPTED,
// FILLED, NEW...). Such an order must end FILLED.
func (o *orderRec) acknowledged() bool {
	return o.sent && o.transport == "" && o.httpStatus == http.StatusOK && o.status != ""
}

// inDoubt reports whether the order may have executed although it was not acknowledged: no
// answer, or a 5xx other than the overload shedding (-1008, which executed nothing).
func (o *orderRec) inDoubt() bool {
	if !o.sent {
		return false
	}
	return o.transport != "" || (o.httpStatus >= 500 && o.code != -1008)
}

// load is one open-loop phase: sched over agents, with newOrderRespType respType.
type load struct {
	sched    Schedule
	respType string
	agents   []*agent
	start    time.Time
	recs     []*orderRec
}

// run sends the phase's orders on schedule and returns once every one is answered.
func (r *runner) run(ctx context.Context, l *load) {
	n := l.sched.Count()
	first := r.nextIDs(n)
	l.recs = make([]*orderRec, n)
	loginsOf := func(k int) int { return len(l.agents[k].Logins) }
	for i := range l.recs {
		k, li := Assignment(i, len(l.agents), loginsOf)
		a := l.agents[k]
		l.recs[i] = &orderRec{coid: clientOrderID(r.id, first+i), agent: a, login: a.Logins[li], timed: a.stream != nil}
	}
	var wg sync.WaitGroup
	l.start = time.Now().Add(20 * time.Millisecond)
	for i := 0; i < n && ctx.Err() == nil; {
		end := l.sched.Due(i, time.Since(l.start))
		for ; i < end; i++ {
			rec := l.recs[i]
			rec.due = l.start.Add(l.sched.Offset(i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.send(ctx, rec, l.respType)
			}()
		}
		if i < n {
			_ = wait.For(ctx, time.Until(l.start.Add(l.sched.Offset(i))))
		}
	}
	wg.Wait()
}

// send places one MARKET order and records its answer.
func (r *runner) send(ctx context.Context, o *orderRec, respType string) {
	begin := time.Now()
	o.lag = begin.Sub(o.due)
	if o.agent.budget.pausedAt(r.now()) {
		return
	}
	o.sent = true
	p := url.Values{"login": {strconv.FormatInt(o.login, 10)}, "symbol": {r.o.Symbol}, "type": {"MARKET"},
		"side": {r.o.Side}, "volume": {r.o.Volume}, "newClientOrderId": {o.coid}, "newOrderRespType": {respType}}
	// A connection's slot first, then the signature: the wait is the client's, and counts in
	// the latency, but the timestamp is the send's.
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		o.answeredAt, o.latency, o.transport = time.Now(), time.Since(begin), ctx.Err().Error()
		return
	}
	defer func() { <-r.slots }()
	slotWait := time.Since(begin)
	var askedConn time.Time
	trace := &httptrace.ClientTrace{
		GetConn: func(string) { askedConn = time.Now() },
		GotConn: func(httptrace.GotConnInfo) { o.connWait = slotWait + time.Since(askedConn) },
	}
	res, err := o.agent.c.Signed(httptrace.WithClientTrace(ctx, trace), http.MethodPost, "/v1/order", p, gwclient.InBody)
	o.answeredAt = time.Now()
	o.latency = o.answeredAt.Sub(begin)
	if err != nil {
		o.transport = err.Error()
		return
	}
	o.httpStatus = res.Status
	var body struct {
		Status string `json:"status"`
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
	}
	_ = res.JSON(&body)
	o.status, o.code, o.msg = body.Status, body.Code, body.Msg
	if res.Status == http.StatusTooManyRequests || res.Status == http.StatusTeapot {
		o.agent.budget.pause(r.now(), res.Header)
	}
}

// settle waits until every order of recs has its DEAL, no DEAL has come for idle, or most
// has passed; it returns the orders still without one.
func (r *runner) settle(ctx context.Context, recs []*orderRec, idle, most time.Duration) []*orderRec {
	deadline := time.Now().Add(most)
	missing, lastChange := r.deals.missing(recs), time.Now()
	for len(missing) > 0 && time.Now().Before(deadline) && time.Since(lastChange) < idle {
		if wait.For(ctx, 100*time.Millisecond) != nil {
			break
		}
		if m := r.deals.missing(missing); len(m) != len(missing) {
			missing, lastChange = m, time.Now()
		}
	}
	return missing
}
