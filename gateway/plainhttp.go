package gateway

import (
	"errors"
	"net"
	"sync"
	"time"
)

// plainHTTPRefuser wraps the TCP listener under TLS. A connection whose first byte is not a
// TLS handshake record gets a JSON 400 (-1020) and is closed, so a plain-HTTP client sees a
// clear refusal instead of a hang or a garbled handshake. Sniffing happens on the
// connection's first read (in its serving goroutine), never in Accept.
type plainHTTPRefuser struct {
	net.Listener
	timeout time.Duration
}

func (l *plainHTTPRefuser) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, timeout: l.timeout}, nil
}

// tlsHandshakeRecord is the content type byte that starts every TLS ClientHello.
const tlsHandshakeRecord = 0x16

const plainHTTPResponse = "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 58\r\n\r\n" +
	`{"code":-1020,"msg":"Plain HTTP is refused; use HTTPS."}` + "\r\n"

var errPlainHTTP = errors.New("gateway: plain HTTP on the TLS port")

type sniffConn struct {
	net.Conn
	timeout time.Duration
	once    sync.Once
	first   []byte
	err     error
}

func (c *sniffConn) Read(b []byte) (int, error) {
	c.once.Do(c.sniff)
	if c.err != nil {
		return 0, c.err
	}
	if len(c.first) > 0 {
		n := copy(b, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

func (c *sniffConn) sniff() {
	// This read runs under the deadline the HTTP server sets before reading a request
	// (ReadTimeout), so a silent client is dropped.
	buf := make([]byte, 1)
	if _, err := c.Conn.Read(buf); err != nil {
		c.err = err
		return
	}
	if buf[0] != tlsHandshakeRecord {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
		_, _ = c.Conn.Write([]byte(plainHTTPResponse))
		_ = c.Conn.Close()
		c.err = errPlainHTTP
		return
	}
	c.first = buf
}
