// Package wstest holds what WebSocket tests of the streams need on the client side, for the
// streams' own tests and the end-to-end tests alike.
package wstest

import (
	"context"
	"crypto/tls"
	"net"
	"syscall"
	"time"

	"github.com/fasthttp/websocket"
)

// Dialer connects from a chosen loopback source address ("" any: every 127/8 address reaches
// a local server, so a test owns its per-address count) and trusts tlsCfg (nil: plain TCP).
// rcvBuf > 0 shrinks the socket's receive buffer, which makes a client that stops reading
// slow for real. timeout bounds the TCP connect and the handshake.
func Dialer(tlsCfg *tls.Config, source string, rcvBuf int, timeout time.Duration) *websocket.Dialer {
	d := &websocket.Dialer{HandshakeTimeout: timeout,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nd := net.Dialer{Timeout: timeout}
			if source != "" {
				nd.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
			}
			if rcvBuf > 0 {
				nd.Control = func(_, _ string, c syscall.RawConn) error {
					var serr error
					if err := c.Control(func(fd uintptr) {
						serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvBuf)
					}); err != nil {
						return err
					}
					return serr
				}
			}
			return nd.DialContext(ctx, network, addr)
		}}
	if tlsCfg != nil {
		d.TLSClientConfig = tlsCfg.Clone()
	}
	return d
}
