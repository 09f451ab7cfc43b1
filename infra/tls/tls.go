// Package tls provides the service's TLS material: a local certificate authority and a
// server certificate for the loopback addresses, generated on first run and reused after,
// unless the operator supplies a certificate and key of their own.
//
// Clients trust the generated CA (ca.pem; `make run` exports it as TRADESVC_CA_CERT), never
// "insecure skip verify".
package tls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// File names inside the TLS directory (RUN_DIR/tls by default).
const (
	CAFile        = "ca.pem"
	CAKeyFile     = "ca-key.pem"
	ServerFile    = "server.pem"
	ServerKeyFile = "server-key.pem"
)

// ServerConfig loads a PEM certificate (chain) and key for a TLS server held to Mozilla's
// "intermediate" profile (see Intermediate).
func ServerConfig(certPath, keyPath string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("tls: load %s / %s: %w", certPath, keyPath, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}}
	Intermediate(cfg)
	return cfg, nil
}

// Intermediate holds a server configuration to Mozilla's "intermediate" profile: TLS 1.2 and
// 1.3 only; for TLS 1.2 only ECDHE key exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305),
// so no CBC suite and no RSA key exchange (TLS 1.3's suites are all AEAD); key exchange on
// X25519, P-256 or P-384 (and TLS 1.3's hybrid X25519MLKEM768), so no P-521. Go's defaults
// would also accept two ECDHE CBC suites and P-521.
func Intermediate(cfg *tls.Config) {
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS13
	cfg.CipherSuites = IntermediateSuites()
	cfg.CurvePreferences = IntermediateCurves()
}

// IntermediateSuites are the TLS 1.2 cipher suites of the intermediate profile (a new slice
// on every call). The RSA ones serve an operator's RSA certificate.
func IntermediateSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// IntermediateCurves are the key exchanges of the intermediate profile (a new slice on every
// call).
func IntermediateCurves() []tls.CurveID {
	return []tls.CurveID{tls.X25519MLKEM768, tls.X25519, tls.CurveP256, tls.CurveP384}
}

// ClientConfig returns a client configuration that trusts only the CA certificates in the
// PEM file at caPath (tests, the CLI, the benchmark client).
func ClientConfig(caPath string) (*tls.Config, error) {
	pemBytes, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("tls: read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("tls: %s holds no PEM certificate", caPath)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}

// Resolve picks the server certificate: the operator's files when certPath and keyPath are
// given (nothing is generated; caPEMPath is then empty, as the CA is the operator's
// business), otherwise the generated ones under dir (see Ensure). Giving only one of the
// two is an error.
func Resolve(dir, certPath, keyPath string) (caPEMPath, cert, key string, err error) {
	switch {
	case certPath != "" && keyPath != "":
		if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
			return "", "", "", fmt.Errorf("tls: operator certificate: %w", err)
		}
		return "", certPath, keyPath, nil
	case certPath != "" || keyPath != "":
		return "", "", "", errors.New("tls: give both a certificate and a key, or neither")
	default:
		return Ensure(dir)
	}
}
