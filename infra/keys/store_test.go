package keys_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/keys"
	"tradesvc/infra/testenv"
)

var credential = regexp.MustCompile(`^[A-Za-z0-9]{64}$`)

func setup(t *testing.T) (*keys.Store, *pgxpool.Pool) {
	t.Helper()
	pool := testenv.MigratedPG(t)
	return newStore(t, pool, randomKey(t)), pool
}

func newStore(t *testing.T, pool *pgxpool.Pool, master []byte) *keys.Store {
	t.Helper()
	s, err := keys.NewStore(keys.Config{Pool: pool, MasterKey: master})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, keys.MasterKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// A created key can be looked up with its secret; its logins are normalised; the listing
// shows it without the secret.
func TestStore_CreateLookupList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := setup(t)

	c, err := store.Create(ctx, keys.CreateParams{
		Logins: []int64{1002, 1001, 1002}, AllowCIDRs: []string{"10.1.2.3/8", "192.0.2.7"},
		Limits: keys.Limits{Orders10s: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !credential.MatchString(c.APIKey) || !credential.MatchString(c.APISecret) || c.APIKey == c.APISecret {
		t.Fatalf("credentials %q / %q are not two distinct 64-character [A-Za-z0-9] strings", c.APIKey, c.APISecret)
	}
	if !slices.Equal(c.Logins, []int64{1001, 1002}) || c.ReadOnly {
		t.Fatalf("created %+v", c)
	}
	ro, err := store.Create(ctx, keys.CreateParams{Logins: []int64{7}, ReadOnly: true})
	if err != nil || !ro.ReadOnly {
		t.Fatalf("read-only key: %+v %v", ro, err)
	}

	r, err := store.Lookup(ctx, c.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Secret) != c.APISecret {
		t.Fatal("looked-up secret differs from the issued one")
	}
	wantCIDRs := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}
	if !slices.Equal(r.Logins, []int64{1001, 1002}) || !slices.Equal(r.AllowCIDRs, wantCIDRs) || r.Limits.Orders10s != 5 || r.RevokedAt != 0 || r.CreatedAt == 0 {
		t.Fatalf("record %+v", r)
	}
	if !r.AllowsLogin(1002) || r.AllowsLogin(1003) {
		t.Error("AllowsLogin wrong")
	}

	list, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].APIKey != c.APIKey || list[1].APIKey != ro.APIKey {
		t.Fatalf("list %+v", list)
	}
	for _, rec := range list {
		if rec.Secret != nil {
			t.Fatal("List returned a secret")
		}
	}

	if _, err := store.Lookup(ctx, strings.Repeat("A", 64)); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("unknown key: %v, want ErrNotFound", err)
	}
	if _, err := store.Lookup(ctx, "short"); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("malformed key: %v, want ErrNotFound", err)
	}
}

// The secret is not in the database in any readable form, and a ciphertext is bound to its
// key and to the master key.
func TestStore_SecretEncryptedAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, pool := setup(t)
	a, err := store.Create(ctx, keys.CreateParams{Logins: []int64{1}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Create(ctx, keys.CreateParams{Logins: []int64{2}})
	if err != nil {
		t.Fatal(err)
	}

	var ciphertext, nonce []byte
	var rowText string
	if err := pool.QueryRow(ctx, `SELECT secret_ciphertext, secret_nonce, k::text FROM cmd.api_keys k WHERE api_key = $1`, a.APIKey).
		Scan(&ciphertext, &nonce, &rowText); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"ciphertext": ciphertext, "nonce": nonce, "row": []byte(rowText)} {
		if bytes.Contains(b, []byte(a.APISecret)) || bytes.Contains(b, []byte(a.APISecret[:16])) {
			t.Fatalf("%s column holds the secret in clear", name)
		}
	}
	if len(ciphertext) != len(a.APISecret)+16 {
		t.Errorf("ciphertext has %d bytes, want secret + 16-byte GCM tag", len(ciphertext))
	}

	// Another master key cannot read it, and says so (not "not found", not garbage).
	other := newStore(t, pool, randomKey(t))
	if r, err := other.Lookup(ctx, a.APIKey); err == nil || errors.Is(err, keys.ErrNotFound) || r.Secret != nil {
		t.Fatalf("lookup under a wrong master key: %v, secret %q", err, r.Secret)
	}

	// A's ciphertext moved onto B's row does not decrypt: the API key is authenticated data.
	if _, err := pool.Exec(ctx, `UPDATE cmd.api_keys SET secret_ciphertext = $1, secret_nonce = $2 WHERE api_key = $3`,
		ciphertext, nonce, b.APIKey); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Lookup(ctx, b.APIKey); err == nil {
		t.Fatal("a ciphertext copied to another key decrypted")
	}
}

// Revoked keys stop authenticating but stay listed; scoping replaces logins of active keys.
func TestStore_RevokeAndScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := setup(t)
	c, err := store.Create(ctx, keys.CreateParams{Logins: []int64{1001}})
	if err != nil {
		t.Fatal(err)
	}

	if err := store.Scope(ctx, c.APIKey, []int64{1003, 1002, 1003}); err != nil {
		t.Fatal(err)
	}
	r, err := store.Lookup(ctx, c.APIKey)
	if err != nil || !slices.Equal(r.Logins, []int64{1002, 1003}) {
		t.Fatalf("after Scope: %v %v", r.Logins, err)
	}
	if err := store.Scope(ctx, c.APIKey, []int64{0}); err == nil {
		t.Fatal("login 0 accepted")
	}

	if err := store.Revoke(ctx, c.APIKey); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Lookup(ctx, c.APIKey); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("revoked key: %v, want ErrNotFound", err)
	}
	if err := store.Revoke(ctx, c.APIKey); err != nil {
		t.Fatalf("second revoke: %v", err)
	}
	if err := store.Scope(ctx, c.APIKey, []int64{1}); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("scope of a revoked key: %v, want ErrNotFound", err)
	}
	if err := store.Revoke(ctx, strings.Repeat("z", 64)); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("revoke unknown: %v, want ErrNotFound", err)
	}
	list, err := store.List(ctx)
	if err != nil || len(list) != 1 || list[0].RevokedAt == 0 {
		t.Fatalf("list after revoke: %+v %v", list, err)
	}
}

func TestStore_CreateRefusesBadParams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := setup(t)
	for name, p := range map[string]keys.CreateParams{
		"negative login": {Logins: []int64{-5}},
		"bad cidr":       {Logins: []int64{1}, AllowCIDRs: []string{"10.0.0.0/33"}},
		"not an address": {Logins: []int64{1}, AllowCIDRs: []string{"example.com"}},
		"negative limit": {Logins: []int64{1}, Limits: keys.Limits{WeightPerMinute: -1}},
	} {
		if _, err := store.Create(ctx, p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNewStore_Validates(t *testing.T) {
	t.Parallel()
	if _, err := keys.NewStore(keys.Config{MasterKey: make([]byte, 16)}); err == nil {
		t.Fatal("no pool and a 16-byte key accepted")
	}
}
