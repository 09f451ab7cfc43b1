package tls_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	stdtls "crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	svctls "tradesvc/infra/tls"
	"tradesvc/infra/tls/tlscheck"
)

// serve accepts TLS connections with cfg and completes each handshake until the test ends;
// it returns the listener's address.
func serve(t *testing.T, cfg *stdtls.Config) string {
	t.Helper()
	ln, err := stdtls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*stdtls.Conn).Handshake()
			c.Close()
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// permissive accepts everything Go can negotiate, with the same certificate: refused offers
// must succeed against it, proving that the client really offers them and that the refusal
// is the profile's.
func permissive(cfg *stdtls.Config) *stdtls.Config {
	p := &stdtls.Config{Certificates: cfg.Certificates, MinVersion: stdtls.VersionTLS10, MaxVersion: stdtls.VersionTLS13,
		CurvePreferences: []stdtls.CurveID{stdtls.X25519MLKEM768, stdtls.X25519, stdtls.CurveP256, stdtls.CurveP384, stdtls.CurveP521}}
	for _, s := range append(stdtls.CipherSuites(), stdtls.InsecureCipherSuites()...) {
		p.CipherSuites = append(p.CipherSuites, s.ID)
	}
	return p
}

func checkProfile(t *testing.T, srv, cli *stdtls.Config, rsa bool) {
	t.Helper()
	cases := tlscheck.Cases(rsa)
	for _, line := range tlscheck.Check(serve(t, srv), cli, cases) {
		t.Error(line)
	}
	var refused []tlscheck.Case
	for _, c := range cases {
		if !c.Accept && !c.CertBound {
			c.Accept, c.Want = true, nil
			refused = append(refused, c)
		}
	}
	for _, line := range tlscheck.Check(serve(t, permissive(srv)), cli, refused) {
		t.Errorf("control (a permissive server): %s", line)
	}
}

// Issue 17: the service's TLS follows Mozilla's intermediate profile, with its generated
// ECDSA certificate: TLS 1.0 and 1.1 refused, CBC suites refused, P-521 refused; TLS 1.2 and
// 1.3, ECDHE with AES-GCM or ChaCha20-Poly1305, X25519, P-256, P-384 and X25519MLKEM768 accepted.
func TestServerConfig_FollowsTheIntermediateProfile(t *testing.T) {
	t.Parallel()
	ca, cert, key, err := svctls.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := svctls.ServerConfig(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := svctls.ClientConfig(ca)
	if err != nil {
		t.Fatal(err)
	}
	cli.ServerName = "127.0.0.1"
	checkProfile(t, srv, cli, false)
}

// An operator's RSA certificate gets the same profile: ECDHE_RSA with AEAD accepted; RSA key
// exchange, CBC and 3DES refused.
func TestServerConfig_FollowsTheIntermediateProfileWithAnRSACertificate(t *testing.T) {
	t.Parallel()
	certPath, keyPath, pool := rsaCertificate(t)
	srv, err := svctls.ServerConfig(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	checkProfile(t, srv, &stdtls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, true)
}

// The generated server certificate is valid for at most 366 days (the CA may live longer).
func TestEnsure_ServerCertificateLivesAtMost366Days(t *testing.T) {
	t.Parallel()
	ca, cert, _, err := svctls.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := parseCert(t, cert)
	if life := c.NotAfter.Sub(c.NotBefore); life > 366*24*time.Hour || life < 300*24*time.Hour {
		t.Fatalf("server certificate valid for %v (%v to %v), want at most 366 days", life, c.NotBefore, c.NotAfter)
	}
	if svctls.MaxServerLifetime != 366*24*time.Hour {
		t.Fatalf("MaxServerLifetime %v", svctls.MaxServerLifetime)
	}
	if a := parseCert(t, ca); !a.IsCA || a.NotAfter.Sub(a.NotBefore) < 366*24*time.Hour {
		t.Fatalf("CA %v to %v", a.NotBefore, a.NotAfter)
	}
}

// A server certificate issued with the old two-year lifetime is issued again on the next
// start, from the same CA (clients that trust ca.pem keep working).
func TestEnsure_ReissuesACertificateValidForTooLong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, cert, key, err := svctls.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	caBefore := readAll(t, ca)
	// What an older version wrote: the same names and key, valid for 730 days.
	caCert := parseCert(t, ca)
	caKey := parseKey(t, filepath.Join(dir, svctls.CAKeyFile))
	old := parseCert(t, cert)
	srvKey := parseKey(t, key)
	tmpl := *old
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = tmpl.NotBefore.Add(730 * 24 * time.Hour)
	tmpl.SerialNumber = big.NewInt(42)
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, caCert, srvKey.(crypto.Signer).Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := svctls.Ensure(dir); err != nil {
		t.Fatal(err)
	}
	c := parseCert(t, cert)
	if c.SerialNumber.Cmp(big.NewInt(42)) == 0 || c.NotAfter.Sub(c.NotBefore) > svctls.MaxServerLifetime {
		t.Fatalf("the 730-day certificate was kept: %v to %v", c.NotBefore, c.NotAfter)
	}
	if string(caBefore) != string(readAll(t, ca)) {
		t.Fatal("CA changed")
	}
	srv, _ := svctls.ServerConfig(cert, key)
	cli, _ := svctls.ClientConfig(ca)
	if err := handshake(t, srv, cli, "127.0.0.1"); err != nil {
		t.Fatalf("reissued certificate not trusted: %v", err)
	}
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(readAll(t, path))
	if b == nil {
		t.Fatalf("%s: not PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func parseKey(t *testing.T, path string) any {
	t.Helper()
	b, _ := pem.Decode(readAll(t, path))
	if b == nil {
		t.Fatalf("%s: not PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rsaCertificate writes a self-signed RSA certificate for 127.0.0.1 (an operator's files) and
// returns its paths and a pool trusting it.
func rsaCertificate(t *testing.T) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath = filepath.Join(dir, "op.pem"), filepath.Join(dir, "op-key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return certPath, keyPath, pool
}
