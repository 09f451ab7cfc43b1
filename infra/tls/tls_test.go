package tls_test

import (
	"bytes"
	stdtls "crypto/tls"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	svctls "tradesvc/infra/tls"
)

// handshake serves one TLS connection with srv and dials it as serverName with cli; it
// returns the client's handshake error.
func handshake(t *testing.T, srv, cli *stdtls.Config, serverName string) error {
	t.Helper()
	ln, err := stdtls.Listen("tcp", "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.(*stdtls.Conn).Handshake()
		io.Copy(io.Discard, c)
	})
	cli = cli.Clone()
	cli.ServerName = serverName
	conn, err := stdtls.Dial("tcp", ln.Addr().String(), cli)
	if err == nil {
		conn.Close()
	}
	ln.Close()
	wg.Wait()
	return err
}

// First run generates a CA and a loopback server certificate; a client trusting only the CA
// connects by 127.0.0.1, ::1's name and localhost; keys are private; a second run reuses
// the same files byte for byte.
func TestEnsure_GeneratesTrustedLoopbackCertificateAndReusesIt(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "tls")
	ca, cert, key, err := svctls.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{key, filepath.Join(dir, svctls.CAKeyFile)} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
	}

	srv, err := svctls.ServerConfig(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if srv.MinVersion != stdtls.VersionTLS12 {
		t.Errorf("server MinVersion = %x, want TLS 1.2", srv.MinVersion)
	}
	cli, err := svctls.ClientConfig(ca)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		if err := handshake(t, srv, cli, name); err != nil {
			t.Errorf("handshake as %s: %v", name, err)
		}
	}
	if err := handshake(t, srv, cli, "example.com"); err == nil {
		t.Error("certificate accepted for example.com")
	}

	before := readAll(t, ca, cert, key)
	ca2, cert2, key2, err := svctls.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ca2 != ca || cert2 != cert || key2 != key || !bytes.Equal(before, readAll(t, ca, cert, key)) {
		t.Fatal("second Ensure did not reuse the existing files")
	}
}

// A lost server certificate is issued again from the existing CA, so clients that already
// trust ca.pem keep working.
func TestEnsure_ReissuesServerCertificateFromExistingCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, cert, key, err := svctls.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	caBefore := readAll(t, ca)
	oldCert := readAll(t, cert)
	if err := os.Remove(cert); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := svctls.Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(caBefore, readAll(t, ca)) {
		t.Fatal("CA changed")
	}
	if bytes.Equal(oldCert, readAll(t, cert)) {
		t.Fatal("server certificate not reissued")
	}
	srv, _ := svctls.ServerConfig(cert, key)
	cli, _ := svctls.ClientConfig(ca)
	if err := handshake(t, srv, cli, "127.0.0.1"); err != nil {
		t.Fatalf("reissued certificate not trusted: %v", err)
	}
}

// A client trusting another CA refuses the server: trust comes from ca.pem, not from luck.
func TestClientConfig_RefusesServerOfAnotherCA(t *testing.T) {
	t.Parallel()
	_, cert, key, err := svctls.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _, _, err := svctls.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := svctls.ServerConfig(cert, key)
	cli, _ := svctls.ClientConfig(otherCA)
	if err := handshake(t, srv, cli, "127.0.0.1"); err == nil {
		t.Fatal("server of another CA accepted")
	}
}

// Operator-supplied files are used as they are and nothing is generated.
func TestResolve_OperatorFilesBypassGeneration(t *testing.T) {
	t.Parallel()
	_, cert, key, err := svctls.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	ca, c, k, err := svctls.Resolve(empty, cert, key)
	if err != nil || ca != "" || c != cert || k != key {
		t.Fatalf("Resolve = %q %q %q %v", ca, c, k, err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("files generated although the operator supplied theirs: %v", entries)
	}
	if _, _, _, err := svctls.Resolve(empty, cert, ""); err == nil {
		t.Fatal("certificate without key accepted")
	}
	if _, _, _, err := svctls.Resolve(empty, key, cert); err == nil {
		t.Fatal("swapped files accepted")
	}
	ca, _, _, err = svctls.Resolve(empty, "", "")
	if err != nil || ca == "" {
		t.Fatalf("generation through Resolve: %q %v", ca, err)
	}
}

// Several processes starting at once end up with one consistent CA and certificate.
func TestEnsure_ConcurrentCallsAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { _, _, _, errs[i] = svctls.Ensure(dir) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ca, cert, key, _ := svctls.Ensure(dir)
	srv, err := svctls.ServerConfig(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := svctls.ClientConfig(ca)
	if err := handshake(t, srv, cli, "localhost"); err != nil {
		t.Fatalf("inconsistent files after concurrent Ensure: %v", err)
	}
}

func readAll(t *testing.T, paths ...string) []byte {
	t.Helper()
	var out []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}
