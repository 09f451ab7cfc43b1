package wstest

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/fasthttp/websocket"
)

// Refused dials url, expects the upgrade to be refused with the service's error envelope, and
// returns the HTTP status and the envelope's code.
func Refused(t testing.TB, d *websocket.Dialer, url string) (int, int) {
	t.Helper()
	ws, res, err := d.Dial(url, nil)
	if err == nil {
		ws.Close()
		t.Fatalf("dial %s: upgraded, want a refusal", url)
	}
	if res == nil {
		t.Fatalf("dial %s: %v, no HTTP answer", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var env struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	if json.Unmarshal(body, &env) != nil || env.Msg == "" {
		t.Fatalf("dial %s: refusal body %q is not the error envelope", url, body)
	}
	return res.StatusCode, env.Code
}
