package streams

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
)

// Close codes the streams use (docs/streams.md).
const (
	closeNormal      = websocket.CloseNormalClosure     // 1000: invalid name, lifetime, listen key expired or deleted, scope empty
	closeGoingAway   = websocket.CloseGoingAway         // 1001: server shutting down, no pong
	closePolicy      = websocket.ClosePolicyViolation   // 1008: inbound message rate exceeded
	closeTooBig      = websocket.CloseMessageTooBig     // 1009: inbound message over the size limit
	closeLagging     = websocket.CloseInternalServerErr // 1011: queue overflow or change-feed lag
	closeTryLater    = websocket.CloseTryAgainLater     // 1013: trading switched off (user stream)
	closeNoFrameSent = 0                                // the connection is gone: no close frame
)

// session is one WebSocket connection. The handler goroutine reads (readLoop); a writer
// goroutine owns every write: queued frames, the change feed of a user stream, pings, the
// lifetime and the closing handshake. Publishers only ever enqueue without blocking, so a
// slow client costs its own queue and nothing else.
type session struct {
	ws  *websocket.Conn
	cfg *Config

	queue chan []byte

	// feed and feedDone are a user stream's change feed (nil on market streams); convert
	// turns one change into a frame, or nil to skip it; feedEnded decides the close.
	feed      <-chan Change
	feedDone  <-chan struct{}
	convert   func(*Change) []byte
	feedEnded func()

	closing     chan struct{}
	closeOnce   sync.Once
	closeCode   int
	closeReason string
	lastFrame   []byte // sent just before the close frame (an error frame), if any
	dropQueue   bool   // an overflowed queue is not delivered

	pingPayload atomic.Pointer[string]
	lastPong    atomic.Int64 // unix nanos of the last pong answering our ping
	rate        rateWindow   // reader goroutine only

	writerDone chan struct{}
}

func newSession(ws *websocket.Conn, cfg *Config) *session {
	s := &session{ws: ws, cfg: cfg, queue: make(chan []byte, cfg.SendQueue), closing: make(chan struct{}),
		writerDone: make(chan struct{}), rate: rateWindow{times: make([]time.Time, cfg.MaxMessageRate)}}
	s.lastPong.Store(time.Now().UnixNano())
	return s
}

// enqueue queues a frame without blocking; a full queue closes the connection with 1011.
// It reports whether the frame was queued.
func (s *session) enqueue(frame []byte) bool {
	select {
	case <-s.closing:
		return false
	default:
	}
	select {
	case s.queue <- frame:
		return true
	default:
		s.closeOnce.Do(func() {
			s.closeCode, s.closeReason, s.dropQueue = closeLagging, "queue overflow: client too slow; resubscribe and refresh", true
			close(s.closing)
		})
		return false
	}
}

// shut decides how the connection closes (the first decision wins): the writer sends what is
// already queued, then lastFrame, then a close frame with code and reason, and the reader
// waits CloseGrace for the client's answering close frame. code closeNoFrameSent sends
// nothing.
func (s *session) shut(code int, reason string, lastFrame []byte) {
	s.closeOnce.Do(func() {
		s.closeCode, s.closeReason, s.lastFrame = code, reason, lastFrame
		close(s.closing)
	})
}

func (s *session) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// serve runs the connection until it ends: the writer in its own goroutine, the reader here.
// onMessage handles each inbound data message within the rate limit (nil: ignore them).
func (s *session) serve(onMessage func([]byte)) {
	go s.writeLoop()
	err := s.readLoop(onMessage)
	if errors.Is(err, websocket.ErrReadLimit) {
		s.shut(closeTooBig, "message too big", nil) // the library has already sent close 1009
	}
	// Otherwise the client closed (the library answered its close frame), the connection
	// failed, or a close decided earlier has run its course: nothing more to send.
	s.shut(closeNoFrameSent, "", nil)
	s.awaitWriter()
	if errors.Is(err, websocket.ErrReadLimit) {
		s.drain()
	}
}

// awaitWriter waits for the writer; one stuck writing to a client that reads nothing is cut
// off after CloseGrace.
func (s *session) awaitWriter() {
	t := time.NewTimer(s.cfg.CloseGrace)
	defer t.Stop()
	select {
	case <-s.writerDone:
	case <-t.C:
		_ = s.ws.NetConn().SetWriteDeadline(time.Now())
		<-s.writerDone
	}
}

// drain reads and discards what the client still sends (bounded in time and size) before the
// socket is closed: closing a socket with unread input makes the kernel send a reset, which
// can destroy the close frame before the client reads it.
func (s *session) drain() {
	nc := s.ws.NetConn()
	_ = nc.SetReadDeadline(time.Now().Add(s.cfg.CloseGrace))
	_, _ = io.CopyN(io.Discard, nc, 4<<20)
}

// readLoop reads until the connection fails or closes. Pings from the client count toward
// the message rate; pongs never do, and only a pong answering our latest ping proves the
// client alive (unsolicited pongs are ignored).
func (s *session) readLoop(onMessage func([]byte)) error {
	s.ws.SetReadLimit(s.cfg.MaxMessageBytes)
	s.ws.SetPongHandler(func(data string) error {
		if p := s.pingPayload.Load(); p != nil && *p == data {
			s.lastPong.Store(time.Now().UnixNano())
		}
		return nil
	})
	s.ws.SetPingHandler(func(data string) error {
		if !s.isClosing() && !s.rate.allow(time.Now()) {
			s.shut(closePolicy, "message rate exceeded", nil)
		}
		err := s.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		if err != nil && !errors.Is(err, websocket.ErrCloseSent) && !isTimeout(err) {
			return err
		}
		return nil
	})
	for {
		_, data, err := s.ws.ReadMessage()
		if err != nil {
			return err
		}
		if s.isClosing() {
			continue // waiting for the client's close frame; what it still sends is discarded
		}
		if !s.rate.allow(time.Now()) {
			s.shut(closePolicy, "message rate exceeded", nil)
			continue
		}
		if onMessage != nil {
			onMessage(data)
		}
	}
}

// writeLoop is the only writer of frames (the library answers pings and close frames itself).
func (s *session) writeLoop() {
	defer close(s.writerDone)
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	pongDeadline := time.NewTimer(s.cfg.PongTimeout)
	defer pongDeadline.Stop()
	lifetime := time.NewTimer(s.cfg.Lifetime)
	defer lifetime.Stop()
	for {
		if s.isClosing() {
			s.finish()
			return
		}
		select {
		case f := <-s.queue:
			if !s.write(f) {
				return
			}
		case ch, ok := <-s.feed:
			if !ok {
				s.feed = nil
				continue
			}
			if f := s.convert(&ch); f != nil && !s.write(f) {
				return
			}
		case <-s.feedDone:
			s.feedDone = nil
			s.feedEnded()
		case <-ping.C:
			payload := strconv.FormatInt(time.Now().UnixNano(), 10)
			s.pingPayload.Store(&payload)
			if err := s.ws.WriteControl(websocket.PingMessage, []byte(payload), time.Now().Add(s.cfg.WriteTimeout)); err != nil {
				s.shut(closeNoFrameSent, "", nil)
			}
		case <-pongDeadline.C:
			silent := time.Since(time.Unix(0, s.lastPong.Load()))
			if silent >= s.cfg.PongTimeout {
				s.shut(closeGoingAway, "pong timeout", nil)
				continue
			}
			pongDeadline.Reset(s.cfg.PongTimeout - silent)
		case <-lifetime.C:
			s.shut(closeNormal, "connection lifetime reached", nil)
		case <-s.closing:
		}
	}
}

// write sends one text frame within WriteTimeout; a failure ends the connection.
func (s *session) write(frame []byte) bool {
	_ = s.ws.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	if err := s.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		s.shut(closeNoFrameSent, "", nil)
		_ = s.ws.NetConn().SetReadDeadline(time.Now()) // the peer is gone: stop the reader too
		return false
	}
	return true
}

// finish sends the last frame and the close frame, then gives the reader CloseGrace to
// receive the client's answer.
func (s *session) finish() {
	if s.closeCode != closeNoFrameSent {
		// After an overflow the queue is not delivered: the close frame tells the client to
		// resnapshot. Otherwise replies already queued go out before the close.
		for !s.dropQueue && len(s.queue) > 0 {
			if !s.write(<-s.queue) {
				return
			}
		}
		if s.lastFrame != nil {
			_ = s.ws.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			_ = s.ws.WriteMessage(websocket.TextMessage, s.lastFrame)
		}
		_ = s.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(s.closeCode, s.closeReason),
			time.Now().Add(s.cfg.CloseGrace))
	}
	_ = s.ws.NetConn().SetReadDeadline(time.Now().Add(s.cfg.CloseGrace))
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// rateWindow admits at most len(times) messages in any one-second span.
type rateWindow struct {
	times []time.Time
	next  int
	n     int
}

func (r *rateWindow) allow(now time.Time) bool {
	if r.n == len(r.times) {
		if now.Sub(r.times[r.next]) < time.Second {
			return false
		}
	} else {
		r.n++
	}
	r.times[r.next] = now
	r.next = (r.next + 1) % len(r.times)
	return true
}
