package e2e_test

import (
	"strings"
	"testing"
	"time"

	"tradesvc/infra/tls/tlscheck"
)

// testTLS (issue 17): the gateway's real listener follows Mozilla's intermediate profile, as
// Go's TLS client sees it offer by offer (each refused protocol, suite and curve fails the
// handshake, each allowed one succeeds), and serves a certificate valid for at most 366 days.
func testTLS(t *testing.T, e *env) {
	addr := strings.TrimPrefix(e.svc.BaseURL, "https://")
	base := e.svc.TLS.Clone()
	base.ServerName = "127.0.0.1"
	t.Run("intermediate profile, offer by offer", func(t *testing.T) {
		for _, line := range tlscheck.Check(addr, base, tlscheck.Cases(false)) {
			t.Error(line)
		}
	})
	t.Run("the served certificate lives at most 366 days", func(t *testing.T) {
		st, err := tlscheck.Handshake(addr, base)
		if err != nil {
			t.Fatal(err)
		}
		c := st.PeerCertificates[0]
		if life := c.NotAfter.Sub(c.NotBefore); life > 366*24*time.Hour {
			t.Fatalf("server certificate valid for %v (%v to %v), want at most 366 days", life, c.NotBefore, c.NotAfter)
		}
	})
}
