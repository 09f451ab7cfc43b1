package keys_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"tradesvc/infra/keys"
)

// The key file is created on first use (0600, 32 bytes) and read back unchanged later.
func TestLoadOrCreateMasterKey_CreatesPrivateFileOnceAndReusesIt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run", "master.key")
	k1, err := keys.LoadOrCreateMasterKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || st.Size() != keys.MasterKeySize || len(k1) != keys.MasterKeySize {
		t.Fatalf("key file mode %v size %d, key %d bytes", st.Mode().Perm(), st.Size(), len(k1))
	}
	k2, err := keys.LoadOrCreateMasterKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load returned another key (err %v)", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

// Processes starting together agree on one key.
func TestLoadOrCreateMasterKey_ConcurrentCreatorsAgree(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "master.key")
	got := make([][]byte, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i], errs[i] = keys.LoadOrCreateMasterKey(path) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(got[i], got[0]) {
			t.Fatal("concurrent creators got different keys")
		}
	}
}

func TestLoadOrCreateMasterKey_RefusesReadableByOthers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "master.key")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.LoadOrCreateMasterKey(path); err == nil {
		t.Fatal("world-readable master key accepted")
	}
}

// An operator-supplied key (hex or base64) wins over the file, which is then not created.
func TestResolveMasterKey_SuppliedValue(t *testing.T) {
	t.Parallel()
	want := bytes.Repeat([]byte{0xAB}, 32)
	path := filepath.Join(t.TempDir(), "master.key")
	for _, s := range []string{hex.EncodeToString(want), base64.StdEncoding.EncodeToString(want), base64.RawURLEncoding.EncodeToString(want)} {
		got, err := keys.ResolveMasterKey(s, path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: %x %v", s, got, err)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("key file created although a key was supplied")
	}
	for _, bad := range []string{"abcd", hex.EncodeToString(want[:16]), "not base64 at all!"} {
		if _, err := keys.ResolveMasterKey(bad, path); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
