package gateway

import (
	"bytes"
	"context"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/gateway/ratelimit"
	"tradesvc/query"
)

// Security is an endpoint's security type (the spec's summary table).
type Security int

// Security types.
const (
	// SecNone: no key needed; a key header, when sent, is validated and charged.
	SecNone Security = iota
	// SecMarketData: key header only, for rate attribution.
	SecMarketData
	// SecUserStream: key header only.
	SecUserStream
	// SecUserData: key header and signature.
	SecUserData
	// SecTrade: key header, signature, a trading (not read-only) key, and the service switches.
	SecTrade
)

// HeaderAPIKey carries the API key.
const HeaderAPIKey = "X-SVC-APIKEY"

// Usage header names.
const (
	HeaderUsedWeight1m  = "X-SVC-USED-WEIGHT-1M"
	HeaderOrderCount10s = "X-SVC-ORDER-COUNT-10S"
	HeaderOrderCount1m  = "X-SVC-ORDER-COUNT-1M"
)

// Endpoint describes one REST route and what the pipeline does before its handler.
type Endpoint struct {
	Method   string
	Path     string
	Security Security
	// Weight returns the REQUEST_WEIGHT of a request (nil: 1).
	Weight func(p *Params) int
	// Orders returns the ORDERS count of a request (nil: 0). Charged after the switches, the
	// signature and the login scope, so a refused request never consumes order budget.
	Orders func(p *Params) int
	// AccountScoped endpoints take a mandatory login that must be in the key's scope.
	AccountScoped bool
	// RequireAccount also reads the account (nonexistent or inactive: -2022) into
	// Request.Account; every account-scoped endpoint whose handler does not read the
	// account itself sets it (the spec's -2022 rule); trading endpoints then use
	// Request.RequireTradeAllowed.
	RequireAccount bool
	// Kind is the operation a trading endpoint starts; set, the request passes admission
	// control (admission.go) before it is charged ORDERS.
	Kind trading.Kind
}

// TradeEndpoint is the Endpoint of a single-account trading operation: signed, TRADE
// security (switches checked first, read-only keys refused), weight 1, the given ORDERS
// count, login in scope and the account read (use Request.RequireTradeAllowed for -2024),
// and admission control for an operation of kind. Batch and multi-account endpoints build
// their Endpoint by hand.
func TradeEndpoint(method, path string, kind trading.Kind, orders int) Endpoint {
	return Endpoint{Method: method, Path: path, Security: SecTrade, AccountScoped: true, RequireAccount: true,
		Orders: func(*Params) int { return orders }, Kind: kind}
}

// Request is what the pipeline hands to an endpoint handler.
type Request struct {
	// Params are the decoded parameters.
	Params *Params
	// Key is the caller's key (shared with the key cache: read it, never modify it); nil on
	// an unkeyed NONE request.
	Key *Key
	// Login is the checked login of an AccountScoped endpoint.
	Login int64
	// Account is the account of a RequireAccount endpoint.
	Account *query.Account
	// Now is the server time the request was checked against.
	Now time.Time

	auth    *authKey
	usage   ratelimit.Usage
	charged bool
}

// RequireTradeAllowed answers -2024 when trading is disabled on the request's account;
// operations that trade call it (reads never do).
func (r *Request) RequireTradeAllowed() error {
	if r.Account != nil && !r.Account.TradeAllowed {
		return errTradeOff
	}
	return nil
}

// InScope reports whether login belongs to the caller's key (false without a key).
func (r *Request) InScope(login int64) bool { return r.auth != nil && r.auth.InScope(login) }

// HandlerFunc handles a request that passed the pipeline. It writes the response, or returns
// an error (an *events.Rejection for a business refusal) that the gateway renders.
type HandlerFunc func(c *fiber.Ctx, r *Request) error

// Handle registers an endpoint. Call it before Serve. Trading endpoints use it with
// SecTrade, an Orders function, AccountScoped and RequireAccount.
func (s *Server) Handle(ep Endpoint, h HandlerFunc) {
	s.fiber.Add(ep.Method, ep.Path, s.pipeline(ep, h))
	s.methods.add(Route{Method: ep.Method, Path: ep.Path, Security: ep.Security})
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (s *Server) pipeline(ep Endpoint, h HandlerFunc) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r := Request{Now: s.clock()}
		// Deferred so that even a panicking handler's response carries the usage headers.
		defer s.usageHeaders(c, &r)
		if err := s.run(c, &ep, h, &r); err != nil {
			return writeError(c, s.log, err)
		}
		return nil
	}
}

// usageHeaders adds the rate-limit usage headers to every keyed response.
func (s *Server) usageHeaders(c *fiber.Ctx, r *Request) {
	if r.auth == nil {
		return
	}
	u := r.usage
	if !r.charged {
		var err error
		if u, err = s.limiter.Usage(c.UserContext(), r.auth.ID, r.Now); err != nil {
			// A shared store unreachable: no figures to report rather than made-up ones.
			s.log.Warn("gateway: rate-limit usage unavailable", "err", err)
			return
		}
	}
	h := &c.Response().Header
	h.DisableNormalizing() // send the names exactly as the spec spells them
	h.Set(HeaderUsedWeight1m, strconv.Itoa(u.Weight1m))
	h.Set(HeaderOrderCount10s, strconv.Itoa(u.Orders10s))
	h.Set(HeaderOrderCount1m, strconv.Itoa(u.Orders1m))
}

// keyedUsageHeaders adds the usage headers (without charging) to a response outside any
// endpoint's pipeline, when the request carries a valid, known key.
func (s *Server) keyedUsageHeaders(c *fiber.Ctx) {
	hdr := c.Request().Header.Peek(HeaderAPIKey)
	if len(hdr) == 0 || !validKeyHeader(hdr) {
		return
	}
	k, err := s.keys.get(c.UserContext(), string(hdr))
	if err != nil || k == nil || k.Revoked {
		return
	}
	s.usageHeaders(c, &Request{Now: s.clock(), auth: k})
}

// run is the pipeline: identify the key (-1002, -2015), check the TRADE switches (-1017,
// -5015), parse parameters (-1100, -1101), verify a signed request (-1102, -1130, -1022,
// -1021), charge weight (-1003, 418), check the login scope (-1102, -1122, -2022), admit
// an operation (-1008), charge orders (-1015, 418), then call the handler.
func (s *Server) run(c *fiber.Ctx, ep *Endpoint, h HandlerFunc, r *Request) error {
	ctx := c.UserContext()
	hdr := c.Request().Header.Peek(HeaderAPIKey)
	if ep.Security != SecNone || len(hdr) > 0 {
		if !validKeyHeader(hdr) {
			return errKeyHeader
		}
		k, err := s.keys.get(ctx, string(hdr))
		if err != nil {
			s.log.Error("gateway: key lookup failed", "err", err)
			return errUnavailable
		}
		if k == nil || k.Revoked || !k.allows(remoteAddr(c)) || (ep.Security == SecTrade && k.ReadOnly) {
			return errRejectedKey
		}
		r.auth, r.Key = k, &k.Key
	}
	if ep.Security == SecTrade {
		if !s.switches.TradingEnabled(ctx) {
			return errTradingOff
		}
		if !s.switches.ExecutionPathUp(ctx) {
			return errNoExecutor
		}
	}
	req := c.Request()
	rawQuery := req.URI().QueryString()
	rawBody := req.Body()
	if ep.Method == fiber.MethodGet || ep.Method == fiber.MethodDelete {
		// The spec: GET and DELETE carry parameters in the query string only. A body sent
		// anyway is neither read for parameters nor part of what is signed.
		rawBody = nil
	}
	p, err := ParseParams(rawQuery, formBody(req.Header.ContentType(), rawBody), s.cfg.MaxParams)
	if err != nil {
		return err
	}
	r.Params = p
	if ep.Security == SecUserData || ep.Security == SecTrade {
		// Signed requests are charged only once authenticated, so someone holding just the
		// (non-secret) API key cannot exhaust or ban the key's budget.
		bp := bufPool.Get().(*[]byte)
		err := checkSigned(p, r.auth.Secret, rawQuery, rawBody, r.Now, bp)
		bufPool.Put(bp)
		if err != nil {
			return err
		}
	}
	if r.auth != nil {
		w := 1
		if ep.Weight != nil {
			w = ep.Weight(p)
		}
		if err := s.charge(ctx, r, w, 0); err != nil {
			return err
		}
	}
	if ep.AccountScoped {
		login, err := p.Login()
		if err != nil {
			return err
		}
		if r.auth == nil || !r.auth.InScope(login) {
			return errOutOfScope
		}
		r.Login = login
		if ep.RequireAccount {
			if r.Account, err = s.account(ctx, r, login); err != nil {
				return err
			}
		}
	}
	if ep.Kind != "" {
		admitted, err := s.admit(ctx, r, r.Params, ep.Kind)
		if err != nil {
			return err
		}
		if admitted {
			defer s.holdAdmission(c)()
		}
	}
	if ep.Orders != nil && r.auth != nil {
		if n := ep.Orders(p); n > 0 {
			if err := s.charge(ctx, r, 0, n); err != nil {
				return err
			}
		}
	}
	return h(c, r)
}

// account checks a login the request names (a route's, or a batch item's): out of the key's
// scope, nonexistent or inactive is -2022. It runs before anything of the request (or of the
// item) is done, so a store that cannot answer is -1000, service unavailable, as for the key
// and the rate limits.
func (s *Server) account(ctx context.Context, r *Request, login int64) (*query.Account, error) {
	if r.auth == nil || !r.auth.InScope(login) {
		return nil, errOutOfScope
	}
	acc, ok, err := s.deps.Accounts.Account(ctx, login)
	if err != nil {
		s.log.Error("gateway: account lookup failed", "login", login, "err", err)
		return nil, errUnavailable
	}
	if !ok {
		return nil, errOutOfScope
	}
	return &acc, nil
}

// charge applies the rate limiter and translates its verdict. A shared store that cannot
// decide answers -1000 (503): nothing was charged, and nothing is done.
func (s *Server) charge(ctx context.Context, r *Request, weight, orders int) error {
	d, u, err := s.limiter.Charge(ctx, r.auth.ID, r.auth.limits, r.Now, weight, orders)
	if err != nil {
		s.log.Error("gateway: rate limits unavailable", "err", err)
		return errUnavailable
	}
	r.usage, r.charged = u, true
	retry := int((d.RetryAfter + time.Second - 1) / time.Second)
	switch d.Outcome {
	case ratelimit.WeightExceeded:
		return &statusError{status: fiber.StatusTooManyRequests, code: events.CodeTooManyRequests, retry: retry,
			msg: "Too many requests; request weight limit exceeded. Retry after " + strconv.Itoa(retry) + " s; continuing earns a ban."}
	case ratelimit.OrdersExceeded:
		return &statusError{status: fiber.StatusTooManyRequests, code: events.CodeTooManyOrders, retry: retry,
			msg: "Too many new orders. Retry after " + strconv.Itoa(retry) + " s; continuing earns a ban."}
	case ratelimit.Banned:
		return &statusError{status: fiber.StatusTeapot, code: events.CodeTooManyRequests, retry: retry,
			msg: "Way too many requests; key banned for " + strconv.Itoa(retry) + " s. Retrying lengthens the ban."}
	}
	return nil
}

// formBody returns the body when it carries form parameters: an
// application/x-www-form-urlencoded body, or a body sent without a content type.
func formBody(contentType, body []byte) []byte {
	if len(body) == 0 {
		return nil
	}
	if len(contentType) == 0 {
		return body
	}
	if i := bytes.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	if bytes.EqualFold(bytes.TrimSpace(contentType), []byte(fiber.MIMEApplicationForm)) {
		return body
	}
	return nil
}

// validKeyHeader accepts 1 to 256 printable ASCII characters without spaces.
func validKeyHeader(h []byte) bool {
	if len(h) == 0 || len(h) > 256 {
		return false
	}
	for _, c := range h {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// remoteAddr is the TCP peer; forwarded-for headers are deliberately not trusted.
func remoteAddr(c *fiber.Ctx) netip.Addr {
	a, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return a.Unmap()
}
