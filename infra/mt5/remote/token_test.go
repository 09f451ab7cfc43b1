package remote

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestLoadOrCreateToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "sim.token")
	if _, err := ReadToken(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadToken of a missing file: %v", err)
	}
	tok, err := LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(tok)
	if err != nil || len(raw) != 32 {
		t.Fatalf("token %q is not 32 hex-encoded bytes", tok)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", st.Mode().Perm())
	}
	again, err := LoadOrCreateToken(path)
	if err != nil || again != tok {
		t.Fatalf("second load: %q, %v; want the same token", again, err)
	}
	if read, err := ReadToken(path); err != nil || read != tok {
		t.Fatalf("ReadToken: %q, %v", read, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestLoadOrCreateTokenConcurrentCreatorsAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.token")
	const n = 8
	toks := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := LoadOrCreateToken(path)
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		}()
	}
	wg.Wait()
	for _, tok := range toks {
		if tok != toks[0] || tok == "" {
			t.Fatalf("creators disagree: %q", toks)
		}
	}
}
