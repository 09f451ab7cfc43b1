package tls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

const (
	caLifetime = 10 * 365 * 24 * time.Hour
	// MaxServerLifetime is the longest validity (NotAfter - NotBefore) a generated server
	// certificate may have: 366 days, the intermediate profile's limit (browsers refuse
	// longer ones). A certificate found with a longer one (issued by an older version, for
	// two years) is issued again.
	MaxServerLifetime = 366 * 24 * time.Hour
	// serverLifetime, with the hour NotBefore is backdated by, stays within it.
	serverLifetime = 365 * 24 * time.Hour
	backdate       = time.Hour
	// renewBefore: a server certificate this close to expiry is replaced on start.
	renewBefore = 30 * 24 * time.Hour
)

// serverNames are the names the generated server certificate is valid for.
var serverNames = struct {
	IPs []net.IP
	DNS []string
}{IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNS: []string{"localhost"}}

// Ensure makes sure dir holds a local CA (ECDSA P-256, 10 years) and a server certificate
// for 127.0.0.1, ::1 and localhost signed by it (365 days), and returns their paths. Existing
// files are reused; a server certificate that is missing, unreadable, not signed by the CA,
// within 30 days of expiry or valid for longer than MaxServerLifetime is issued again from
// the existing CA, so clients that trust ca.pem keep working; only when the CA itself is
// missing, broken or within 30 days of expiry is everything generated afresh. Keys are
// written 0600. Concurrent calls (several processes starting together) are serialised by a
// lock file. It runs when the service starts: a certificate is renewed by a restart at most
// 11 months after it was issued.
func Ensure(dir string) (caPEMPath, certPath, keyPath string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", "", fmt.Errorf("tls: create %s: %w", dir, err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return "", "", "", err
	}
	defer unlock()

	caPEMPath = filepath.Join(dir, CAFile)
	caKeyPath := filepath.Join(dir, CAKeyFile)
	certPath = filepath.Join(dir, ServerFile)
	keyPath = filepath.Join(dir, ServerKeyFile)
	now := time.Now()

	ca, caKey, err := loadPair(caPEMPath, caKeyPath)
	if err != nil || !ca.IsCA || now.After(ca.NotAfter.Add(-renewBefore)) {
		if ca, caKey, err = newCA(caPEMPath, caKeyPath, now); err != nil {
			return "", "", "", err
		}
	}
	if serverValid(certPath, keyPath, ca, now) {
		return caPEMPath, certPath, keyPath, nil
	}
	if err := newServer(certPath, keyPath, ca, caKey, now); err != nil {
		return "", "", "", err
	}
	return caPEMPath, certPath, keyPath, nil
}

func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tls: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("tls: lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

func serverValid(certPath, keyPath string, ca *x509.Certificate, now time.Time) bool {
	cert, _, err := loadPair(certPath, keyPath)
	if err != nil || now.After(cert.NotAfter.Add(-renewBefore)) || cert.NotAfter.Sub(cert.NotBefore) > MaxServerLifetime {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"127.0.0.1", "::1", "localhost"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: now}); err != nil {
			return false
		}
	}
	return true
}

func newCA(certPath, keyPath string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "tradesvc local CA", Organization: []string{"tradesvc"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: create CA: %w", err)
	}
	if err := writePair(certPath, keyPath, der, key); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newServer(certPath, keyPath string, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tls: server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "localhost", Organization: []string{"tradesvc"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(serverLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  serverNames.IPs,
		DNSNames:     serverNames.DNS,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("tls: create server certificate: %w", err)
	}
	return writePair(certPath, keyPath, der, key)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// writePair writes the key first (0600) and then the certificate, each through a temporary
// file and a rename, so a crash never leaves half a file behind.
func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("tls: marshal key: %w", err)
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return writeFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("tls: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, mode); err != nil { // WriteFile keeps the mode of an existing file
		return fmt.Errorf("tls: chmod %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("tls: rename %s: %w", path, err)
	}
	return nil
}

func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	parsed, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, nil, errors.New("key does not match certificate")
	}
	return cert, key, nil
}
