// Package tlscheck probes a TLS listener with Go's TLS client, one offer at a time, against
// Mozilla's "intermediate" profile (infra/tls.Intermediate): each refused protocol, cipher
// suite and curve must fail the handshake, each allowed one must succeed. The service's own
// TLS tests and its end-to-end tests run the same cases, the first against a bare listener
// (with an RSA certificate too), the second against the real gateway.
package tlscheck

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// Case is one client offer and whether the profile accepts it.
type Case struct {
	Name string
	// Offer narrows a client configuration to this offer.
	Offer func(*tls.Config)
	// Accept is the profile's verdict; Want, when set, is checked on an accepted handshake.
	Accept bool
	Want   func(tls.ConnectionState) error
	// CertBound: refused whatever the server's configuration, because its certificate cannot
	// serve the offer (RSA key exchange with an ECDSA certificate).
	CertBound bool
}

func version(v uint16) func(*tls.Config) {
	return func(c *tls.Config) { c.MinVersion, c.MaxVersion = v, v }
}

func suite12(s uint16) func(*tls.Config) {
	return func(c *tls.Config) {
		c.MinVersion, c.MaxVersion, c.CipherSuites = tls.VersionTLS12, tls.VersionTLS12, []uint16{s}
	}
}

func curve(v uint16, id tls.CurveID) func(*tls.Config) {
	return func(c *tls.Config) { c.MinVersion, c.MaxVersion, c.CurvePreferences = v, v, []tls.CurveID{id} }
}

func wantSuite(s uint16) func(tls.ConnectionState) error {
	return func(st tls.ConnectionState) error {
		if st.CipherSuite != s {
			return fmt.Errorf("negotiated %s", tls.CipherSuiteName(st.CipherSuite))
		}
		return nil
	}
}

func wantCurve(id tls.CurveID) func(tls.ConnectionState) error {
	return func(st tls.ConnectionState) error {
		if st.CurveID != id {
			return fmt.Errorf("negotiated %v", st.CurveID)
		}
		return nil
	}
}

func wantVersion(v uint16) func(tls.ConnectionState) error {
	return func(st tls.ConnectionState) error {
		if st.Version != v {
			return fmt.Errorf("negotiated %s", tls.VersionName(st.Version))
		}
		return nil
	}
}

// Cases are the offers to try against a server whose certificate has an ECDSA key, or an RSA
// key when rsa is set (cipher suites of TLS 1.2 name the certificate's key type).
func Cases(rsa bool) []Case {
	var out []Case
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		out = append(out, Case{Name: "refused protocol " + tls.VersionName(v), Offer: version(v)})
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		out = append(out, Case{Name: "allowed protocol " + tls.VersionName(v), Offer: version(v), Accept: true, Want: wantVersion(v)})
	}
	allowed := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
	refused := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}
	if !rsa {
		// RSA key exchange: an ECDSA certificate cannot serve it anyway; offered for completeness.
		for _, s := range []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_RSA_WITH_AES_128_CBC_SHA} {
			out = append(out, Case{Name: "refused suite " + tls.CipherSuiteName(s), Offer: suite12(s), CertBound: true})
		}
	}
	if rsa {
		allowed = []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}
		refused = []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
			tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256, tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA,
			tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_AES_256_CBC_SHA, tls.TLS_RSA_WITH_AES_128_CBC_SHA256}
	}
	for _, s := range allowed {
		out = append(out, Case{Name: "allowed suite " + tls.CipherSuiteName(s), Offer: suite12(s), Accept: true, Want: wantSuite(s)})
	}
	for _, s := range refused {
		out = append(out, Case{Name: "refused suite " + tls.CipherSuiteName(s), Offer: suite12(s)})
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		out = append(out, Case{Name: "refused curve P-521 on " + tls.VersionName(v), Offer: curve(v, tls.CurveP521)})
		for _, id := range []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384} {
			out = append(out, Case{Name: fmt.Sprintf("allowed curve %v on %s", id, tls.VersionName(v)), Offer: curve(v, id),
				Accept: true, Want: wantCurve(id)})
		}
	}
	out = append(out, Case{Name: "allowed hybrid X25519MLKEM768 on TLS 1.3", Offer: curve(tls.VersionTLS13, tls.X25519MLKEM768),
		Accept: true, Want: wantCurve(tls.X25519MLKEM768)})
	return out
}

// Handshake dials addr with cfg, completes the handshake and returns what was negotiated.
func Handshake(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

// Check runs every case against addr with a copy of base narrowed to the case's offer and
// returns one line per case whose outcome contradicts the profile (nil: all as expected).
func Check(addr string, base *tls.Config, cases []Case) []string {
	var bad []string
	for _, c := range cases {
		cfg := base.Clone()
		c.Offer(cfg)
		st, err := Handshake(addr, cfg)
		switch {
		case c.Accept && err != nil:
			bad = append(bad, fmt.Sprintf("%s: refused (%v), want accepted", c.Name, err))
		case !c.Accept && err == nil:
			bad = append(bad, fmt.Sprintf("%s: accepted (%s, %s, %v), want refused", c.Name,
				tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), st.CurveID))
		case c.Accept && c.Want != nil:
			if werr := c.Want(st); werr != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", c.Name, werr))
			}
		}
	}
	return bad
}
