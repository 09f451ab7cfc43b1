package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestKeysFileRoundTripsAndRefusesKeysThatCannotTrade(t *testing.T) {
	in := `{"apiKey":"k1","apiSecret":"s1","logins":[1001,1002],"readOnly":false}

{"apiKey":"k2","apiSecret":"s2","logins":[1003]}
`
	keys, err := ReadKeys(strings.NewReader(in))
	if err != nil || len(keys) != 2 || keys[0].APIKey != "k1" || !slices.Equal(keys[0].Logins, []int64{1001, 1002}) ||
		keys[1].APISecret != "s2" {
		t.Fatalf("ReadKeys = %+v, %v", keys, err)
	}
	path := filepath.Join(t.TempDir(), "keys.jsonl")
	if err := WriteKeysFile(path, keys); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("keys file mode %v (%v), want 0600: it holds secrets", st.Mode().Perm(), err)
	}
	back, err := ReadKeysFile(path)
	if err != nil || !slices.EqualFunc(back, keys, func(a, b Key) bool {
		return a.APIKey == b.APIKey && a.APISecret == b.APISecret && slices.Equal(a.Logins, b.Logins)
	}) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if none, err := ReadKeysFile(filepath.Join(t.TempDir(), "absent")); err != nil || none != nil {
		t.Fatalf("an absent file holds no keys: %v %v", none, err)
	}
	for name, bad := range map[string]string{
		"read-only": `{"apiKey":"k","apiSecret":"s","logins":[1],"readOnly":true}`,
		"no logins": `{"apiKey":"k","apiSecret":"s","logins":[]}`,
		"no secret": `{"apiKey":"k","logins":[1]}`,
		"not JSON":  `apiKey=k`,
	} {
		if _, err := ReadKeys(strings.NewReader("\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: err %v, want a refusal naming line 2", name, err)
		}
	}
}

func TestCreatedKeysCoverTheLoginsEvenly(t *testing.T) {
	logins := []int64{1001, 1002, 1003, 1004}
	var got [][]int64
	for j := range 5 {
		got = append(got, CreatedLogins(j, 1, logins))
	}
	want := [][]int64{{1001}, {1002}, {1003}, {1004}, {1001}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("one login per key: %v, want %v", got, want)
	}
	if l := CreatedLogins(1, 2, logins); !slices.Equal(l, []int64{1003, 1004}) {
		t.Fatalf("two per key, key 1: %v", l)
	}
	if l := CreatedLogins(0, 9, logins); !slices.Equal(l, logins) {
		t.Fatalf("more per key than logins: %v", l)
	}
}
