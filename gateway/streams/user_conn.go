package streams

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"tradesvc/events"
	"tradesvc/query"
)

// userConn is one user-data-stream connection: the change feed of the logins in its API
// key's scope, re-checked every UserRecheck.
type userConn struct {
	*session
	u     *Users
	ctx   context.Context
	lk    query.ListenKey
	keyID int64
	first KeyScope // the scope the upgrade was admitted with
	scope atomic.Pointer[map[int64]struct{}]
	sub   query.Subscription
}

// User-stream event kinds; C (the client order id) rides only on DEAL and ORDER_UPDATE.
var userKinds = map[string]bool{"DEAL": true, "ORDER_UPDATE": true, "POSITION_UPDATE": false, "ACCOUNT_UPDATE": false}

// follow prepares a user stream before its upgrade is answered: it follows the change feed
// for the key's scope and is known to DELETE /v1/listenKey (which may close it before it
// even starts). run then serves it on the upgraded connection; release undoes follow when
// the connection never starts.
func (u *Users) follow(ctx context.Context, lk query.ListenKey, ks KeyScope) *userConn {
	c := &userConn{session: newSession(u.cfg, u.pace), u: u, ctx: ctx, lk: lk, keyID: ks.ID, first: ks}
	c.setScope(ks.Logins)
	c.sub = u.feed.Subscribe(query.Scope{Match: c.inScope, Logins: c.logins}, u.cfg.UserBuffer)
	u.register(c)
	return c
}

// release ends what follow started.
func (c *userConn) release() {
	c.sub.Close()
	c.u.unregister(c)
}

// run serves the connection until it closes.
func (c *userConn) run() {
	sub, ks := c.sub, c.first
	defer c.release()
	c.feed, c.feedDone, c.convert = sub.C(), sub.Done(), c.frame
	c.feedEnded = func() {
		// Nothing is dropped silently: the client reconnects and resnapshots.
		switch err := sub.Err(); {
		case errors.Is(err, query.ErrIntakeLagged):
			c.shut(closeLagging, "service intake lagging; reconnect and resnapshot", nil)
			return
		case errors.Is(err, query.ErrChangesLost):
			c.shut(closeLagging, "changes were lost; reconnect and resnapshot", nil)
			return
		case errors.Is(err, query.ErrLagged):
			c.shut(closeLagging, "stream fell behind; reconnect and resnapshot", nil)
			return
		}
		c.shut(closeGoingAway, "server shutting down", nil)
	}
	if len(ks.Logins) == 0 {
		c.shut(closeNormal, "no login in scope", nil)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		c.supervise(ctx)
	}()
	c.serve(nil)
	cancel()
	<-supervised
}

func (c *userConn) setScope(logins []int64) {
	m := make(map[int64]struct{}, len(logins))
	for _, l := range logins {
		m[l] = struct{}{}
	}
	c.scope.Store(&m)
}

// logins lists the scope (the change feed asks it while some login's intake lags).
func (c *userConn) logins() []int64 {
	m := *c.scope.Load()
	out := make([]int64, 0, len(m))
	for l := range m {
		out = append(out, l)
	}
	return out
}

// inScope is the change feed's match function (called from the feed's goroutine).
func (c *userConn) inScope(login int64) bool {
	_, ok := (*c.scope.Load())[login]
	return ok
}

// supervise re-checks the stream every UserRecheck and when the listen key is due to expire.
func (c *userConn) supervise(ctx context.Context) {
	tick := time.NewTicker(c.cfg.UserRecheck)
	defer tick.Stop()
	expiry := time.NewTimer(c.lk.ExpiresAt.Sub(c.cfg.Clock()))
	defer expiry.Stop()
	for {
		select {
		case <-c.closing:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-expiry.C:
		}
		if next, ok := c.recheck(ctx); ok {
			expiry.Reset(next.Sub(c.cfg.Clock()))
		}
	}
}

// recheck closes the stream when trading is switched off (-1017 error frame, close 1013),
// the listen key was deleted (1000) or has lapsed (listenKeyExpired, then 1000), the API key
// was revoked (-2015 error frame, 1000) or no login is left in its scope (1000). Otherwise it
// narrows or widens the scope and returns the listen key's expiry. A store that cannot be
// read leaves things as they are until the next check.
func (c *userConn) recheck(ctx context.Context) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if !c.u.switches.TradingEnabled(ctx) {
		c.shut(closeTryLater, "trading switched off", userErrorFrame(errTradingOff))
		return time.Time{}, false
	}
	lk, ok, err := c.u.store.Get(ctx, c.lk.Key)
	if err != nil {
		c.u.log.Warn("streams: re-read listen key", "err", err)
		return time.Time{}, false
	}
	now := c.cfg.Clock()
	switch {
	case !ok || lk.Deleted:
		c.shut(closeNormal, "listen key deleted", nil)
		return time.Time{}, false
	case !lk.Active(now):
		c.shut(closeNormal, "listen key expired", expiredFrame(c.lk.Key, now))
		return time.Time{}, false
	}
	ks, ok, err := c.u.keys.Key(ctx, c.lk.APIKey)
	if err != nil {
		c.u.log.Warn("streams: re-read api key", "err", err)
		return lk.ExpiresAt, true
	}
	if !ok || ks.Revoked || ks.ID != c.keyID {
		c.shut(closeNormal, "api key revoked", userErrorFrame(events.Reject(events.CodeRejectedKey, "Invalid API-key, IP, or permissions for action.")))
		return time.Time{}, false
	}
	c.setScope(ks.Logins)
	if len(ks.Logins) == 0 {
		c.shut(closeNormal, "no login in scope", nil)
		return time.Time{}, false
	}
	return lk.ExpiresAt, true
}

// frame renders one change for this connection: only user-stream kinds of logins still in
// scope, with C added when this connection's API key owns the client order id.
func (c *userConn) frame(ch *query.Change) []byte {
	withC, ok := userKinds[ch.Kind]
	if !ok || !c.inScope(ch.Login) {
		return nil
	}
	ev, ok := c.u.frames.render(ch.Fact, c.u.digits)
	if !ok {
		c.u.log.Error("streams: change-feed row without a renderable fact", "seq", ch.Seq, "kind", ch.Kind)
		return nil
	}
	if !withC || ch.ClientOrderID == "" || ch.APIKeyID != c.keyID {
		return ev
	}
	id, _ := json.Marshal(ch.ClientOrderID) // a string always encodes
	out := make([]byte, 0, len(ev)+len(id)+6)
	out = append(out, ev[:len(ev)-1]...)
	if len(bytes.TrimSpace(ev[1:len(ev)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"C":`...)
	out = append(out, id...)
	return append(out, '}')
}

// expiredFrame is {"e":"listenKeyExpired","E":now,"listenKey":key}.
func expiredFrame(key string, now time.Time) []byte {
	b := []byte(`{"e":"listenKeyExpired","E":`)
	b = strconv.AppendInt(b, now.UnixMilli(), 10)
	b = append(b, `,"listenKey":"`...)
	b = append(b, key...) // letters and digits only
	return append(b, `"}`...)
}

// userErrorFrame is an error on the user stream: {"code":..., "msg":...}.
func userErrorFrame(rej *events.Rejection) []byte {
	msg, _ := json.Marshal(rej.Msg)
	b := []byte(`{"code":`)
	b = strconv.AppendInt(b, int64(rej.Code), 10)
	b = append(b, `,"msg":`...)
	b = append(b, msg...)
	return append(b, '}')
}
