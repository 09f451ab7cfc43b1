package gateway

import (
	"errors"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Route is one method and path the gateway serves.
type Route struct {
	Method   string
	Path     string
	Security Security
	// Retired routes answer -1016 (410) whatever the request.
	Retired bool
}

// routeMethods records, per path, the routes serving it, so that a request for a known path
// with another method is answered 405 with an Allow header (RFC 9110) naming their methods.
type routeMethods map[string][]Route

// add records a route (once per method and path).
func (m routeMethods) add(r Route) {
	for _, have := range m[r.Path] {
		if have.Method == r.Method {
			return
		}
	}
	m[r.Path] = append(m[r.Path], r)
}

// allow is the Allow header value for path, or "" when no route serves it.
func (m routeMethods) allow(path string) string {
	methods := make([]string, 0, len(m[path]))
	for _, r := range m[path] {
		methods = append(methods, r.Method)
	}
	return strings.Join(methods, ", ")
}

// Routes lists every method and path the gateway serves (tests compare them with the contract,
// docs/openapi.yaml), sorted by path and method.
func (s *Server) Routes() []Route {
	var out []Route
	for _, rs := range s.methods {
		out = append(out, rs...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// String is the security type's name in the spec (NONE, MARKET_DATA, USER_STREAM, USER_DATA, TRADE).
func (s Security) String() string {
	switch s {
	case SecNone:
		return "NONE"
	case SecMarketData:
		return "MARKET_DATA"
	case SecUserStream:
		return "USER_STREAM"
	case SecUserData:
		return "USER_DATA"
	case SecTrade:
		return "TRADE"
	}
	return "UNKNOWN"
}

// allowHeader adds Allow to a 405 answer: the methods the request's path is served with.
func (s *Server) allowHeader(c *fiber.Ctx, err error) {
	var fe *fiber.Error
	if errors.As(err, &fe) && fe.Code == fiber.StatusMethodNotAllowed {
		if allow := s.methods.allow(c.Path()); allow != "" {
			c.Set(fiber.HeaderAllow, allow)
		}
	}
}

// guardMethods answers requests whose method Fiber does not route (QUERY, or any extension
// method), which Fiber itself would answer with a plain-text 400: like every other routing
// refusal they get the JSON envelope, 405 with Allow on a known path, 404 elsewhere.
func (s *Server) guardMethods(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	routed := make(map[string]bool)
	for _, m := range s.fiber.Config().RequestMethods {
		routed[m] = true
	}
	return func(rctx *fasthttp.RequestCtx) {
		if routed[string(rctx.Method())] {
			next(rctx)
			return
		}
		c := s.fiber.AcquireCtx(rctx)
		defer s.fiber.ReleaseCtx(c)
		err := fiber.ErrNotFound
		if s.methods.allow(c.Path()) != "" {
			err = fiber.ErrMethodNotAllowed
		}
		if herr := s.fiber.Config().ErrorHandler(c, err); herr != nil {
			rctx.Error("Internal Server Error", fasthttp.StatusInternalServerError)
		}
	}
}
