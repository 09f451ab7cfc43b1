package streams

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"tradesvc/events"
)

var errOverCapacity = events.Reject(events.CodeOverloaded, "Too many connections; retry with backoff.")

// admission counts open connections per client address (market streams) and overall, so
// that a connection over either cap is refused before the upgrade (HTTP 503, -1008).
type admission struct {
	maxPerAddr int
	maxTotal   int

	mu     sync.Mutex
	total  int
	byAddr map[netip.Addr]int
}

func newAdmission(maxPerAddr, maxTotal int) *admission {
	return &admission{maxPerAddr: maxPerAddr, maxTotal: maxTotal, byAddr: make(map[netip.Addr]int)}
}

// admit reserves a slot for a connection from addr (counted per address when perAddr) or
// answers -1008.
func (a *admission) admit(addr netip.Addr, perAddr bool) (*ticket, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total >= a.maxTotal || (perAddr && a.byAddr[addr] >= a.maxPerAddr) {
		return nil, errOverCapacity
	}
	a.total++
	if perAddr {
		a.byAddr[addr]++
	}
	return &ticket{a: a, addr: addr, perAddr: perAddr}, nil
}

func (a *admission) release(t *ticket) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total--
	if t.perAddr {
		if a.byAddr[t.addr]--; a.byAddr[t.addr] <= 0 {
			delete(a.byAddr, t.addr)
		}
	}
}

// open is the number of connections admitted and not yet released.
func (a *admission) open() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// Ticket states.
const (
	ticketPending int32 = iota
	ticketClaimed
	ticketReleased
)

// ticket is one reserved slot. The upgrade's connection handler claims it and releases it
// when the connection ends; a slot whose handler never runs (the client vanished during the
// handshake) is released after a grace period, so the counts cannot leak.
type ticket struct {
	a       *admission
	addr    netip.Addr
	perAddr bool
	state   atomic.Int32
	// onExpire, when set, releases what was prepared for a connection that never started.
	onExpire func()
}

// expireUnclaimed releases the slot after grace unless a handler claimed it by then.
func (t *ticket) expireUnclaimed(grace time.Duration) {
	time.AfterFunc(grace, func() {
		if t.state.CompareAndSwap(ticketPending, ticketReleased) {
			t.a.release(t)
			if t.onExpire != nil {
				t.onExpire()
			}
		}
	})
}

// claim marks the slot in use; false when it already expired.
func (t *ticket) claim() bool { return t.state.CompareAndSwap(ticketPending, ticketClaimed) }

// done releases a claimed slot (or an unclaimed one, when the upgrade failed).
func (t *ticket) done() {
	if t.state.CompareAndSwap(ticketClaimed, ticketReleased) || t.state.CompareAndSwap(ticketPending, ticketReleased) {
		t.a.release(t)
	}
}
