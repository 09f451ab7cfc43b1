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

// ServerConfig loads a PEM certificate (chain) and key for a TLS server that accepts TLS 1.2
// and newer.
func ServerConfig(certPath, keyPath string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("tls: load %s / %s: %w", certPath, keyPath, err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
	}, nil
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
