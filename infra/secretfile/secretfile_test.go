package secretfile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestCreateExclusiveWritesPrivateFileOnceAndKeepsTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "secret")
	created, err := CreateExclusive(path, []byte("first"))
	if err != nil || !created {
		t.Fatalf("first create: %v %v", created, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, err %v; want 0600", st.Mode().Perm(), err)
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, want 0700", dst.Mode().Perm())
	}
	created, err = CreateExclusive(path, []byte("second"))
	if err != nil || created {
		t.Fatalf("second create: %v %v; want not created", created, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Fatalf("content %q, want the first writer's", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestConcurrentCreatorsAgreeOnOneWinner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	var wg sync.WaitGroup
	wins := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			content := []byte{byte('a' + i)}
			created, err := CreateExclusive(path, content)
			if err != nil {
				t.Error(err)
			}
			if created {
				wins <- string(content)
			}
		}()
	}
	wg.Wait()
	close(wins)
	var winners []string
	for w := range wins {
		winners = append(winners, w)
	}
	b, _ := os.ReadFile(path)
	if len(winners) != 1 || winners[0] != string(b) {
		t.Fatalf("winners %v, file %q; want exactly one winner whose content stands", winners, b)
	}
}

// LoadOrCreate creates the file once, in the encoded form, and every later call (or a racing
// one) reads that same secret.
func TestLoadOrCreateCreatesOnceAndReadsTheStoredSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir", "token")
	read := func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return string(b), err
	}
	encode := func(raw []byte) []byte { return []byte(fmt.Sprintf("%x", raw)) }
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = LoadOrCreate(path, 16, encode, read)
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("call %d: %q %v; want %q like the first", i, got[i], errs[i], got[0])
		}
	}
	if len(got[0]) != 32 {
		t.Fatalf("secret %q: want 16 bytes as 32 hex digits", got[0])
	}
	if again, err := LoadOrCreate(path, 16, encode, read); err != nil || again != got[0] {
		t.Fatalf("later call: %q %v; want the stored %q", again, err, got[0])
	}
}
