package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a real server that a test can cut: the way to take a
// dependency "down" for one service under test without stopping the shared server that
// other tests use. It stops with the test.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	moved *sync.Cond // signalled when mode changes
	mode  proxyMode
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

type proxyMode int

const (
	proxyForward proxyMode = iota
	proxyRefuse            // accepted connections are closed at once
	proxyStall             // connections are held open, nothing forwarded either way
)

// NewProxy listens on a free loopback port and forwards every connection to target.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.moved = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port, to give the service instead of the server's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and refuses new ones (closed as soon as accepted), as a
// server that went away.
func (p *Proxy) Cut() { p.set(proxyRefuse) }

// Stall stops forwarding: open connections and new ones stay open but no byte passes either
// way, as a server that hangs.
func (p *Proxy) Stall() { p.set(proxyStall) }

// Restore forwards new connections again.
func (p *Proxy) Restore() { p.set(proxyForward) }

func (p *Proxy) set(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == proxyRefuse {
		for c := range p.conns {
			_ = c.Close()
		}
	}
	p.moved.Broadcast()
}

// flowing waits while the proxy stalls; false once it refuses (the connection must end).
func (p *Proxy) flowing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == proxyStall {
		p.moved.Wait()
	}
	return p.mode == proxyForward
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		refuse := p.mode == proxyRefuse
		if refuse {
			_ = c.Close()
		} else {
			p.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if !refuse {
			p.wg.Add(1)
			go p.forward(c)
		}
	}
}

func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	if !p.flowing() {
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.mode != proxyForward { // cut while dialling
		p.mu.Unlock()
		_ = up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.drop(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && (!p.flowing() || writeAll(dst, buf[:n]) != nil) {
				break
			}
			if err != nil {
				break
			}
		}
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

func writeAll(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}

func (p *Proxy) drop(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.set(proxyRefuse)
	p.wg.Wait()
}
