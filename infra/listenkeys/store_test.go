package listenkeys_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"tradesvc/infra/listenkeys"
	"tradesvc/infra/testenv"
	"tradesvc/query"
)

var ctx = context.Background()

func candidate(n int, apiKeyID int64, now time.Time) query.ListenKey {
	key := fmt.Sprintf("%064d", n)
	return query.ListenKey{Key: key, APIKeyID: apiKeyID, APIKey: fmt.Sprintf("api%d", apiKeyID), CreatedAt: now,
		ExpiresAt: now.Add(time.Hour)}
}

// The store's rules, against the real database: one active key per API key, keepalive and
// delete only on the active one, a lapsed key retired by the next create.
func TestListenKeyStoreKeepsOneActiveKeyPerAPIKey(t *testing.T) {
	s, err := listenkeys.New(testenv.MigratedPG(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	first, err := s.Create(ctx, candidate(1, 7, now), now)
	if err != nil || first.Key != candidate(1, 7, now).Key || first.APIKey != "api7" || !first.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("create: %+v %v", first, err)
	}
	if again, err := s.Create(ctx, candidate(2, 7, now), now); err != nil || again.Key != first.Key {
		t.Fatalf("create while active: %+v %v, want the active key", again, err)
	}
	later := now.Add(30 * time.Minute)
	if k, ok, err := s.Extend(ctx, 7, "", later, later.Add(time.Hour)); err != nil || !ok || !k.ExpiresAt.Equal(later.Add(time.Hour)) {
		t.Fatalf("extend: %+v %v %v", k, ok, err)
	}
	if _, ok, _ := s.Extend(ctx, 8, first.Key, later, later); ok {
		t.Fatal("another API key extended this key")
	}
	if _, ok, _ := s.Extend(ctx, 7, candidate(3, 7, now).Key, later, later); ok {
		t.Fatal("a key that is not the active one was extended")
	}
	// Past the new expiry the key is no longer active: neither extended nor deleted, and the
	// next create retires it.
	lapsed := later.Add(2 * time.Hour)
	if _, ok, _ := s.Extend(ctx, 7, "", lapsed, lapsed.Add(time.Hour)); ok {
		t.Fatal("a lapsed key was extended")
	}
	if _, ok, _ := s.Delete(ctx, 7, "", lapsed); ok {
		t.Fatal("a lapsed key was deleted")
	}
	second, err := s.Create(ctx, candidate(4, 7, lapsed), lapsed)
	if err != nil || second.Key != candidate(4, 7, lapsed).Key {
		t.Fatalf("create after a lapse: %+v %v", second, err)
	}
	if old, ok, _ := s.Get(ctx, first.Key); !ok || !old.Deleted {
		t.Fatalf("the lapsed key is %+v %v, want retired", old, ok)
	}
	if k, ok, err := s.Delete(ctx, 7, second.Key, lapsed); err != nil || !ok || !k.Deleted {
		t.Fatalf("delete: %+v %v %v", k, ok, err)
	}
	if k, ok, _ := s.Get(ctx, second.Key); !ok || !k.Deleted || k.Active(lapsed) {
		t.Fatalf("after delete: %+v", k)
	}
	if _, ok, _ := s.Get(ctx, strings.Repeat("z", 64)); ok {
		t.Fatal("Get found a key never created")
	}
}

func TestConcurrentFirstCreatesOfOneAPIKeyAgreeOnOneKey(t *testing.T) {
	s, err := listenkeys.New(testenv.MigratedPG(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	keys := make([]string, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := s.Create(ctx, candidate(100+i, 9, now), now)
			if err != nil {
				t.Errorf("create %d: %v", i, err)
			}
			keys[i] = k.Key
		}()
	}
	wg.Wait()
	for _, k := range keys {
		if k != keys[0] {
			t.Fatalf("concurrent creates gave different keys: %v", keys)
		}
	}
}
