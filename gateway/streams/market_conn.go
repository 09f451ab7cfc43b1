package streams

import (
	"context"
	"log/slog"

	"tradesvc/events"
)

// marketConn is one market-stream connection: its session and its subscriptions, which only
// the connection's reader goroutine changes.
type marketConn struct {
	*session
	m        *Market
	ctx      context.Context
	log      *slog.Logger
	combined bool // payloads wrapped as {"stream","data"} (the /stream endpoint)
	names    []Name
	set      map[Name]bool
}

var errTooManyStreams = events.Reject(events.CodeTooManyParams, "Too many streams: at most 200 per connection.")

// run serves the connection. initial holds the names of a pre-subscribed or combined URL;
// when one is invalid the client gets one error frame (id null) and the connection closes
// with 1000, nothing subscribed.
func (c *marketConn) run(initial []string) {
	defer func() { c.m.unsubscribe(c, c.names) }()
	if len(initial) > 0 {
		names, err := c.m.resolve(c.ctx, initial)
		if err == nil && len(names) > c.cfg.MaxStreams {
			err = errTooManyStreams
		}
		if err != nil {
			code, reason := closeNormal, "invalid stream name"
			if _, ok := err.(*events.Rejection); !ok {
				c.log.Error("streams: resolve stream names", "err", err)
				code, reason = closeLagging, "internal error; reconnect"
			}
			c.shut(code, reason, errorFrame(rejectionError(err, 0, false)))
			c.serve(nil)
			return
		}
		c.add(names)
	}
	c.serve(c.handle)
}

// handle answers one control frame.
func (c *marketConn) handle(frame []byte) {
	req, cerr := parseControl(frame)
	if cerr != nil {
		c.enqueue(errorFrame(cerr))
		return
	}
	switch req.method {
	case methodSubscribe:
		names, err := c.m.resolve(c.ctx, req.params)
		if err != nil {
			c.refuse(err, req.id)
			return
		}
		fresh := names[:0]
		for _, n := range names {
			if !c.set[n] {
				fresh = append(fresh, n)
			}
		}
		if len(c.names)+len(fresh) > c.cfg.MaxStreams {
			c.refuse(errTooManyStreams, req.id)
			return
		}
		// The reply goes first, so no payload of a new stream precedes it.
		if c.enqueue(resultFrame(req.id, nil)) {
			c.add(fresh)
		}
	case methodUnsubscribe:
		parsed := make([]Name, 0, len(req.params))
		for _, s := range req.params {
			n, err := ParseName(s)
			if err != nil {
				c.refuse(err, req.id)
				return
			}
			parsed = append(parsed, n)
		}
		gone := parsed[:0]
		for _, n := range parsed {
			if c.set[n] {
				gone = append(gone, n)
				delete(c.set, n) // a name listed twice is removed once
			}
		}
		c.remove(gone)
		c.enqueue(resultFrame(req.id, nil))
	case methodList:
		list := make([]string, len(c.names))
		for i, n := range c.names {
			list[i] = n.String()
		}
		c.enqueue(resultFrame(req.id, list))
	}
}

func (c *marketConn) refuse(err error, id uint64) {
	if _, ok := err.(*events.Rejection); !ok {
		c.log.Error("streams: resolve stream names", "err", err)
	}
	c.enqueue(errorFrame(rejectionError(err, id, true)))
}

// add subscribes the connection to names not yet held.
func (c *marketConn) add(names []Name) {
	for _, n := range names {
		c.set[n] = true
	}
	c.names = append(c.names, names...)
	c.m.subscribe(c, names)
}

// remove unsubscribes names (already dropped from c.set).
func (c *marketConn) remove(gone []Name) {
	if len(gone) == 0 {
		return
	}
	kept := c.names[:0]
	for _, n := range c.names {
		if c.set[n] {
			kept = append(kept, n)
		}
	}
	c.names = kept
	c.m.unsubscribe(c, gone)
}
