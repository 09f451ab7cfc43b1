package streams

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	fws "github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"

	"tradesvc/events"
	"tradesvc/infra/check"
	"tradesvc/query"
)

// Deps are what the streams read. Symbols is required; the user data stream is served only
// when Changes is set, and then needs ListenKeys, Keys and Switches too.
type Deps struct {
	Symbols    SymbolLookup
	Changes    query.ChangeFeed
	ListenKeys query.ListenKeyStore
	Keys       Keys
	Switches   Switches
}

// Validate reports missing dependencies.
func (d Deps) Validate() error {
	var errs check.Problems
	errs.If(d.Symbols == nil, "streams: missing dependency Symbols")
	errs.If(d.Changes != nil && (d.ListenKeys == nil || d.Keys == nil || d.Switches == nil), "streams: the user data stream needs ListenKeys, Keys and Switches")
	return errs.Err()
}

// Server serves the market streams and the user data stream on a Fiber app: Mount the
// routes, feed Market() from the market projection, and Run it for as long as the app serves.
type Server struct {
	cfg    Config
	market *Market
	users  *Users
	adm    *admission
	pace   *pacer // every connection's, market and user streams alike

	upgrade fiber.Handler

	ctx    context.Context // cancelled when Run ends: lookups of live connections stop
	cancel context.CancelFunc

	mu      sync.Mutex
	live    map[*session]struct{}
	handler sync.WaitGroup
	stopped bool
}

// New builds the streams.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := errors.Join(cfg.Validate(), deps.Validate()); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, adm: newAdmission(cfg.MaxConnsPerAddr, cfg.MaxConns), live: make(map[*session]struct{})}
	s.pace = newPacer(&s.cfg)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.market = newMarket(&s.cfg, deps.Symbols)
	if deps.Changes != nil {
		s.users = &Users{cfg: &s.cfg, pace: s.pace, feed: deps.Changes, symbols: deps.Symbols, keys: deps.Keys, switches: deps.Switches,
			store: deps.ListenKeys, log: cfg.Logger, open: make(map[string]map[*userConn]struct{})}
	}
	s.upgrade = fws.New(s.serveConn, fws.Config{HandshakeTimeout: cfg.WriteTimeout, ReadBufferSize: 4096, WriteBufferSize: 4096})
	return s, nil
}

// Market is the market-stream hub: the market projection calls its TickApplied and
// DayStatsApplied.
func (s *Server) Market() *Market { return s.market }

// Users serves listen keys and user streams; nil when no change feed was given.
func (s *Server) Users() *Users { return s.users }

// Mount registers the stream URLs: /ws (raw), /ws/<stream name> (pre-subscribed),
// /ws/<listen key> (user data stream) and /stream?streams=a/b (combined). A request that is
// not a WebSocket upgrade is answered 400, -1020.
func (s *Server) Mount(r fiber.Router) {
	r.All("/ws", func(c *fiber.Ctx) error { return s.accept(c, streamRequest{}) })
	r.All("/ws/:name", func(c *fiber.Ctx) error {
		name, err := url.PathUnescape(c.Params("name"))
		if err != nil {
			name = c.Params("name") // an undecodable name is refused as invalid after the upgrade
		}
		if strings.Contains(name, "@") || s.users == nil {
			return s.accept(c, streamRequest{names: []string{name}})
		}
		return s.acceptUser(c, name)
	})
	r.All("/stream", func(c *fiber.Ctx) error {
		req := streamRequest{combined: true}
		if v := c.Query("streams"); v != "" {
			req.names = strings.Split(v, "/")
		}
		return s.accept(c, req)
	})
}

// streamRequest is what the upgrade hands to the connection handler (through Fiber locals).
type streamRequest struct {
	names    []string // pre-subscribed or combined names
	combined bool
	user     *userConn // a user stream, already following the change feed
	ticket   *ticket
}

const localRequest = "tradesvc.streams.request"

var errNotWebSocket = events.Reject(events.CodeNotSupported, "Stream URLs accept only WebSocket upgrades (GET with Upgrade: websocket).")

// accept refuses plain HTTP (400, -1020) and connections over the per-address or overall
// cap (503, -1008) before the upgrade.
func (s *Server) accept(c *fiber.Ctx, req streamRequest) error {
	if c.Method() != fiber.MethodGet || !fws.IsWebSocketUpgrade(c) {
		return refuse(c, errNotWebSocket)
	}
	t, err := s.adm.admit(remoteAddr(c), true)
	if err != nil {
		return refuse(c, err)
	}
	return s.upgradeWith(c, req, t)
}

// acceptUser checks a user-stream upgrade: trading on (503, -1017), listen key active and
// its API key valid (400, -1125), overall capacity (503, -1008).
func (s *Server) acceptUser(c *fiber.Ctx, listenKey string) error {
	if c.Method() != fiber.MethodGet || !fws.IsWebSocketUpgrade(c) {
		return refuse(c, errNotWebSocket)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 5*time.Second)
	defer cancel()
	lk, ks, err := s.users.admit(ctx, listenKey)
	if err != nil {
		return refuse(c, err)
	}
	t, err := s.adm.admit(remoteAddr(c), false)
	if err != nil {
		return refuse(c, err)
	}
	// The stream follows the change feed from before the upgrade is answered, so every
	// change committed after the client sees its connection open is delivered.
	uc := s.users.follow(s.ctx, lk, ks)
	t.onExpire = uc.release
	if err := s.upgradeWith(c, streamRequest{user: uc}, t); err != nil {
		uc.release()
		return err
	}
	return nil
}

func (s *Server) upgradeWith(c *fiber.Ctx, req streamRequest, t *ticket) error {
	req.ticket = t
	c.Locals(localRequest, &req)
	t.expireUnclaimed(s.cfg.WriteTimeout + s.cfg.CloseGrace)
	if err := s.upgrade(c); err != nil {
		t.done()
		return err
	}
	return nil
}

// serveConn runs one upgraded connection in the goroutine the server gave it.
func (s *Server) serveConn(conn *fws.Conn) {
	req, _ := conn.Locals(localRequest).(*streamRequest)
	if req == nil || !req.ticket.claim() {
		return // the slot expired before the connection started: it was counted free (and closed)
	}
	defer req.ticket.done()
	sess := newSession(&s.cfg, s.pace)
	if req.user != nil {
		sess = req.user.session // made before the upgrade: it may already be closing
	}
	sess.ws = conn.Conn
	if !s.track(sess) {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(closeGoingAway, "server shutting down"),
			time.Now().Add(s.cfg.CloseGrace))
		if req.user != nil {
			req.user.release()
		}
		return
	}
	defer s.untrack(sess)
	if uc := req.user; uc != nil {
		uc.run()
		return
	}
	mc := &marketConn{session: sess, m: s.market, ctx: s.ctx, log: s.cfg.Logger, combined: req.combined,
		set: make(map[Name]bool)}
	mc.run(req.names)
}

func (s *Server) track(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.handler.Add(1)
	s.live[sess] = struct{}{}
	s.pace.open.Add(1)
	return true
}

func (s *Server) untrack(sess *session) {
	s.mu.Lock()
	delete(s.live, sess)
	s.mu.Unlock()
	s.pace.open.Add(-1)
	s.handler.Done()
}

// Run refreshes symbol digits until ctx ends, then closes every connection with 1001 and
// waits for their handlers (hijacked connections are not the HTTP server's to close).
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.SymbolRefresh)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.market.refreshDigits(ctx)
		case <-ctx.Done():
			s.mu.Lock()
			s.stopped = true
			for sess := range s.live {
				sess.shut(closeGoingAway, "server shutting down", nil)
			}
			s.mu.Unlock()
			s.cancel()
			s.handler.Wait()
			return nil
		}
	}
}

// Open is the number of open stream connections (market and user).
func (s *Server) Open() int { return s.adm.open() }

// refuse answers a refused stream request with the error envelope and the code's status.
func refuse(c *fiber.Ctx, err error) error {
	rej, ok := err.(*events.Rejection)
	if !ok {
		rej = errUnavailable
	}
	return c.Status(rej.Code.HTTPStatus()).JSON(struct {
		Code events.Code `json:"code"`
		Msg  string      `json:"msg"`
	}{rej.Code, rej.Msg})
}

// remoteAddr is the TCP peer; forwarded-for headers are not trusted.
func remoteAddr(c *fiber.Ctx) netip.Addr {
	a, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return a.Unmap()
}
