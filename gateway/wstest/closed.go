package wstest

import (
	"errors"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// Closed reads ws until the server's close frame (at most within) and returns its code and
// reason with the frames that came before it; a connection that ends without one fails t.
func Closed(t testing.TB, ws *websocket.Conn, within time.Duration) (code int, reason string, frames [][]byte) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(within))
	for {
		_, data, err := ws.ReadMessage()
		if err == nil {
			frames = append(frames, data)
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Text, frames
		}
		t.Fatalf("the connection ended without a close frame: %v (after %d frames)", err, len(frames))
	}
}
