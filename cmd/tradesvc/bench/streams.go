package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"tradesvc/infra/wait"

	"github.com/fasthttp/websocket"
)

// dealBook records when each order's first DEAL frame arrived: by client order id (`C`,
// which the service adds only on the streams of the key that placed the order), and by
// login and order id for every DEAL a stream carries, so that a deal whose frame came
// without its `C` can still be timed once its order id is known.
type dealBook struct {
	mu      sync.Mutex
	at      map[string]time.Time
	byOrder map[orderKey]time.Time
	noC     map[string]bool
	frames  atomic.Int64
}

type orderKey struct{ login, orderID int64 }

func newDealBook() *dealBook {
	return &dealBook{at: map[string]time.Time{}, byOrder: map[orderKey]time.Time{}, noC: map[string]bool{}}
}

// record keeps the first arrival of a DEAL (a redelivered deal is not a second fill).
func (d *dealBook) record(f dealFrame, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f.ClientID != "" {
		if _, seen := d.at[f.ClientID]; !seen {
			d.at[f.ClientID] = at
		}
	}
	k := orderKey{f.Login, f.OrderID}
	if _, seen := d.byOrder[k]; !seen && f.OrderID != 0 {
		d.byOrder[k] = at
	}
}

// arrival returns when coid's DEAL arrived.
func (d *dealBook) arrival(coid string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.at[coid]
	return t, ok
}

// adopt times coid by the DEAL of its order (login, orderID) when that frame came without
// `C`; it reports whether there was one.
func (d *dealBook) adopt(coid string, login, orderID int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.byOrder[orderKey{login, orderID}]
	if !ok {
		return false
	}
	if _, seen := d.at[coid]; !seen {
		d.at[coid] = t
		d.noC[coid] = true
	}
	return true
}

// withoutC reports whether coid was timed by a DEAL frame that lacked its `C`.
func (d *dealBook) withoutC(coid string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.noC[coid]
}

// missing returns the orders of recs that have no DEAL yet.
func (d *dealBook) missing(recs []*orderRec) []*orderRec {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*orderRec
	for _, o := range recs {
		if _, ok := d.at[o.coid]; !ok {
			out = append(out, o)
		}
	}
	return out
}

var dealKind = []byte(`"e":"DEAL"`)

// dealFrame is what the bench reads of a DEAL frame. encoding/json matches keys
// case-insensitively when no field matches exactly, so every key that differs only in case
// from one read here has its own field: E (a number) would otherwise land in e, c (the
// comment) in C, and l in L.
type dealFrame struct {
	Kind     string `json:"e"`
	Time     int64  `json:"E"`
	Login    int64  `json:"L"`
	OrderID  int64  `json:"o"`
	Comment  string `json:"c"`
	ClientID string `json:"C"`
}

// dealOf decodes a DEAL frame; ok is false for any other frame.
func dealOf(frame []byte) (f dealFrame, ok bool) {
	if !bytes.Contains(frame, dealKind) {
		return f, false
	}
	if json.Unmarshal(frame, &f) != nil || f.Kind != "DEAL" {
		return dealFrame{}, false
	}
	return f, true
}

// streamGroup owns every user data stream of a run: one per key, read until the run ends.
type streamGroup struct {
	r      *runner
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	gaps   atomic.Int64
	count  int // streams opened (by the runner's goroutine only)
}

func newStreamGroup(r *runner) *streamGroup {
	ctx, cancel := context.WithCancel(context.Background())
	return &streamGroup{r: r, ctx: ctx, cancel: cancel}
}

// close ends every stream and waits for their readers.
func (g *streamGroup) close() {
	g.cancel()
	g.wg.Wait()
}

// userStream is one key's user data stream.
type userStream struct {
	g  *streamGroup
	a  *agent
	mu sync.Mutex
	c  *websocket.Conn
}

// open gets the key's listen key and connects its stream; from the moment the upgrade is
// answered every change of the key's logins is delivered, so the key's orders may go.
func (g *streamGroup) open(ctx context.Context, a *agent) (*userStream, error) {
	s := &userStream{g: g, a: a}
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.c = c
	g.count++
	g.wg.Add(2)
	go s.read()
	go s.keepAlive()
	return s, nil
}

func (s *userStream) connect(ctx context.Context) (*websocket.Conn, error) {
	res, err := s.a.c.Keyed(ctx, http.MethodPost, "/v1/listenKey", nil)
	if err != nil {
		return nil, err
	}
	var lk struct {
		ListenKey string `json:"listenKey"`
	}
	if res.Status != http.StatusOK || res.JSON(&lk) != nil || lk.ListenKey == "" {
		return nil, fmt.Errorf("key %s: POST /v1/listenKey answered HTTP %d: %s", short(s.a.APIKey), res.Status, res.Body)
	}
	d := websocket.Dialer{TLSClientConfig: s.g.r.tls, HandshakeTimeout: 10 * time.Second}
	u := "wss://" + strings.TrimPrefix(s.g.r.env.BaseURL, "https://") + "/ws/" + lk.ListenKey
	c, hres, err := d.DialContext(ctx, u, nil)
	if err != nil {
		status := 0
		if hres != nil {
			status = hres.StatusCode
		}
		return nil, fmt.Errorf("key %s: user data stream (HTTP %d): %w", short(s.a.APIKey), status, err)
	}
	return c, nil
}

// read records DEAL frames until the run ends. A stream that closes meanwhile (1011: it fell
// behind) is a gap: its missed deals are never replayed, so it is counted, and the stream
// reconnects as the spec tells a client to.
func (s *userStream) read() {
	defer s.g.wg.Done()
	for {
		s.mu.Lock()
		c := s.c
		s.mu.Unlock()
		var closed error
		for {
			_, frame, err := c.ReadMessage()
			if err != nil {
				closed = err
				break
			}
			at := time.Now()
			s.g.r.deals.frames.Add(1)
			if f, ok := dealOf(frame); ok {
				s.g.r.deals.record(f, at)
			}
		}
		_ = c.Close()
		if s.g.ctx.Err() != nil {
			return
		}
		s.g.gaps.Add(1)
		s.g.r.logf("user data stream of key %s closed (%v): a gap; reconnecting", short(s.a.APIKey), closed)
		for attempt := 1; ; attempt++ {
			if wait.For(s.g.ctx, time.Duration(min(attempt, 10))*200*time.Millisecond) != nil {
				return
			}
			nc, err := s.connect(s.g.ctx)
			if err != nil {
				continue
			}
			s.mu.Lock()
			if s.g.ctx.Err() != nil { // keepAlive has closed the old one and will not see this
				s.mu.Unlock()
				_ = nc.Close()
				return
			}
			s.c = nc
			s.mu.Unlock()
			break
		}
	}
}

// keepAlive extends the listen key every 25 minutes (it lapses 60 minutes after the last)
// and closes the connection when the run ends, which ends read.
func (s *userStream) keepAlive() {
	defer s.g.wg.Done()
	t := time.NewTicker(25 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.g.ctx.Done():
			s.mu.Lock()
			c := s.c
			s.mu.Unlock()
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
				time.Now().Add(time.Second))
			_ = c.Close()
			return
		case <-t.C:
			_, _ = s.a.c.Keyed(s.g.ctx, http.MethodPut, "/v1/listenKey", nil)
		}
	}
}
