package streams

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"tradesvc/query"

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

// maxBatch bounds the bytes one write gathers from the queue.
const maxBatch = 64 << 10

// batches recycles write batches: a connection holds one only while it writes, so memory
// follows the writes in progress, not the number of connections.
var batches = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func getBatch() *[]byte { return batches.Get().(*[]byte) }

func putBatch(bp *[]byte, b []byte) {
	if cap(b) <= 4*maxBatch { // one huge frame is not kept
		*bp = b[:0]
		batches.Put(bp)
	}
}

var errTooBig = errors.New("streams: inbound message over the size limit")

// pacer knows how many connections this gateway has open and spaces each one's data writes
// by a window that grows with them (Config.Coalesce, CoalescePerConn, CoalesceMax): every
// write readies a goroutine and costs a system call and a TLS record, and a thousand
// writers woken for every tick would queue the goroutines that carry the ticks behind them.
type pacer struct {
	least, perConn, most time.Duration
	open                 atomic.Int64
}

func newPacer(cfg *Config) *pacer {
	return &pacer{least: cfg.Coalesce, perConn: cfg.CoalescePerConn, most: cfg.CoalesceMax}
}

// window is the least time between two data writes to one connection now (0: none).
func (p *pacer) window() time.Duration {
	if p == nil || p.least < 0 {
		return 0
	}
	return min(max(time.Duration(p.open.Load())*p.perConn, p.least), p.most)
}

// session is one WebSocket connection. The handler goroutine reads (readLoop); a writer
// goroutine owns every write: queued frames, the change feed of a user stream, pings, pongs,
// the lifetime and the closing handshake. Publishers only ever enqueue without blocking, so
// a slow client costs its own queue and nothing else.
//
// The writer writes whole frames straight to the connection, as many as are queued (up to
// maxBatch) in one write: one TLS record and one system call carry many frames when a client
// is busy, which is what lets one gateway feed thousands of connections. Each write is a
// single Write of whole frames, and the connection serialises Writes, so the library's own
// rare writes (a close after a protocol error) cannot interleave with ours.
type session struct {
	ws   *websocket.Conn
	cfg  *Config
	pace *pacer

	queue chan []byte // framed
	ctrl  chan []byte // framed control frames from the reader (pongs)

	// feed and feedDone are a user stream's change feed (nil on market streams); convert
	// turns one change into a payload, or nil to skip it; feedEnded decides the close.
	feed      <-chan query.Change
	feedDone  <-chan struct{}
	convert   func(*query.Change) []byte
	feedEnded func()

	closing     chan struct{}
	closeOnce   sync.Once
	closeCode   int
	closeReason string
	lastFrame   []byte // payload sent just before the close frame (an error frame), if any
	dropQueue   bool   // an overflowed queue is not delivered

	pingPayload atomic.Pointer[string]
	lastPong    atomic.Int64 // unix nanos of the last pong answering our ping
	rate        rateWindow   // reader goroutine only

	lastWrite  time.Time // of data, by the writer
	writerDone chan struct{}
}

// newSession makes a session; ws is set once the connection is upgraded.
func newSession(cfg *Config, pace *pacer) *session {
	s := &session{cfg: cfg, pace: pace, queue: make(chan []byte, cfg.SendQueue), ctrl: make(chan []byte, 4),
		closing: make(chan struct{}), writerDone: make(chan struct{}),
		rate: rateWindow{times: make([]time.Time, cfg.MaxMessageRate)}}
	s.lastPong.Store(time.Now().UnixNano())
	return s
}

// enqueue frames a payload and queues it (replies and error frames).
func (s *session) enqueue(payload []byte) bool { return s.enqueueFrame(textFrame(payload)) }

// enqueueFrame queues a framed payload without blocking; a full queue closes the connection
// with 1011. It reports whether the frame was queued.
func (s *session) enqueueFrame(frame []byte) bool {
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
	var ce *websocket.CloseError
	switch {
	case errors.Is(err, errTooBig):
		s.shut(closeTooBig, "message too big", nil)
	case errors.As(err, &ce):
		s.shut(ce.Code, "", nil) // the client closed first: answer with its code
	default:
		// The connection failed, or a close decided earlier has run its course.
		s.shut(closeNoFrameSent, "", nil)
	}
	s.awaitWriter()
	if errors.Is(err, errTooBig) {
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
// client alive (unsolicited pongs are ignored). A message over MaxMessageBytes ends the loop
// with errTooBig.
func (s *session) readLoop(onMessage func([]byte)) error {
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
		select {
		case s.ctrl <- appendFrame(nil, opPong, []byte(data)):
		default: // a client flooding pings gets some of them answered
		}
		return nil
	})
	// The writer answers the client's close frame (serve), not the library.
	s.ws.SetCloseHandler(func(int, string) error { return nil })
	limit := s.cfg.MaxMessageBytes
	for {
		_, r, err := s.ws.NextReader()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return errTooBig
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

// writeLoop is the only writer of frames.
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
		ok := true
		select {
		case f := <-s.queue:
			ok = s.flush(f)
		case ch := <-s.feed:
			if p := s.convert(&ch); p != nil {
				ok = s.flush(textFrame(p))
			}
		case <-s.feedDone:
			s.feedDone = nil
			s.feedEnded()
		case f := <-s.ctrl:
			ok = s.writeRaw(f, s.cfg.WriteTimeout)
		case <-ping.C:
			payload := strconv.FormatInt(time.Now().UnixNano(), 10)
			s.pingPayload.Store(&payload)
			ok = s.writeRaw(appendFrame(nil, opPing, []byte(payload)), s.cfg.WriteTimeout)
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
		if !ok {
			return
		}
	}
}

// flush writes first and whatever else is queued (once the pacer's window has passed since
// the last data write: a busy connection's frames go out in batches) (frames, then a user
// stream's pending changes), up to maxBatch bytes, in one write.
func (s *session) flush(first []byte) bool {
	if wait := s.pace.window() - time.Since(s.lastWrite); wait > 0 {
		time.Sleep(wait)
	}
	bp := getBatch()
	b := append((*bp)[:0], first...)
	for len(b) < maxBatch {
		select {
		case f := <-s.queue:
			b = append(b, f...)
			continue
		default:
		}
		if s.feed == nil {
			break
		}
		select {
		case ch := <-s.feed:
			if p := s.convert(&ch); p != nil {
				b = appendFrame(b, opText, p)
			}
			continue
		default:
		}
		break
	}
	ok := s.writeRaw(b, s.cfg.WriteTimeout)
	putBatch(bp, b)
	s.lastWrite = time.Now()
	return ok
}

// writeRaw writes whole frames within timeout; a failure ends the connection.
func (s *session) writeRaw(b []byte, timeout time.Duration) bool {
	nc := s.ws.NetConn()
	_ = nc.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(b); err != nil {
		s.shut(closeNoFrameSent, "", nil)
		_ = nc.SetReadDeadline(time.Now()) // the peer is gone: stop the reader too
		return false
	}
	return true
}

// finish sends what is still queued (unless the queue overflowed), the last frame and the
// close frame in one write, then gives the reader CloseGrace to receive the client's answer.
func (s *session) finish() {
	if s.closeCode != closeNoFrameSent {
		bp := getBatch()
		b := (*bp)[:0]
		for !s.dropQueue && len(s.queue) > 0 {
			b = append(b, <-s.queue...)
		}
		if s.lastFrame != nil {
			b = appendFrame(b, opText, s.lastFrame)
		}
		b = appendFrame(b, opClose, websocket.FormatCloseMessage(s.closeCode, s.closeReason))
		_ = s.writeRaw(b, s.cfg.CloseGrace+s.cfg.WriteTimeout)
		putBatch(bp, b)
	}
	_ = s.ws.NetConn().SetReadDeadline(time.Now().Add(s.cfg.CloseGrace))
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
