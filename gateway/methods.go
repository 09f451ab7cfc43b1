package gateway

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// routeMethods records, per path, the methods some route serves, so that a request for a
// known path with another method is answered 405 with an Allow header (RFC 9110) naming them.
type routeMethods map[string][]string

// add records that path serves method (once).
func (m routeMethods) add(path, method string) {
	for _, have := range m[path] {
		if have == method {
			return
		}
	}
	m[path] = append(m[path], method)
}

// allow is the Allow header value for path, or "" when no route serves it.
func (m routeMethods) allow(path string) string {
	return strings.Join(m[path], ", ")
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
