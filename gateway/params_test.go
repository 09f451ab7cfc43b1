package gateway

import (
	"errors"
	"strings"
	"testing"

	"tradesvc/events"
)

func codeOf(err error) events.Code {
	var r *events.Rejection
	if errors.As(err, &r) {
		return r.Code
	}
	return 0
}

func TestParseParams(t *testing.T) {
	p, err := ParseParams([]byte("symbol=EURUSD&comment=a+b%26c&empty=&flag&&"), []byte("symbol=XAUUSD&volume=0.10"), 32)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"symbol": "EURUSD", "comment": "a b&c", "empty": "", "flag": "", "volume": "0.10"} {
		if got, ok := p.Get(name); !ok || got != want {
			t.Errorf("%s = %q,%v want %q", name, got, ok, want)
		}
	}
	if p.Has("missing") || p.Len() != 6 {
		t.Errorf("Has/Len wrong: %d", p.Len())
	}
	if _, err := p.Required("empty"); codeOf(err) != events.CodeMandatoryParam {
		t.Errorf("empty Required: %v", err)
	}
}

func TestParseParamsRejections(t *testing.T) {
	cases := []struct {
		query, body string
		code        events.Code
	}{
		{"a=%G0", "", events.CodeIllegalChars},
		{"a=%4", "", events.CodeIllegalChars},
		{"a=%00", "", events.CodeIllegalChars},
		{"a=%7F", "", events.CodeIllegalChars},
		{"a=\t", "", events.CodeIllegalChars},
		{"a=%FF", "", events.CodeIllegalChars},
		{"a-b=1", "", events.CodeIllegalChars},
		{"=1", "", events.CodeIllegalChars},
		{strings.Repeat("n", 65) + "=1", "", events.CodeIllegalChars},
		{"a=1&a=2", "", events.CodeTooManyParams},
		{"", "b=1&b=1", events.CodeTooManyParams},
		{"a=1&b=2&c=3", "d=4", events.CodeTooManyParams}, // max 3
	}
	for _, c := range cases {
		_, err := ParseParams([]byte(c.query), []byte(c.body), 3)
		if got := codeOf(err); got != c.code {
			t.Errorf("%q / %q: code %d, want %d (%v)", c.query, c.body, got, c.code, err)
		}
	}
	// the same name in query and body is not a duplicate: the query wins
	p, err := ParseParams([]byte("a=q"), []byte("a=b"), 3)
	if err != nil || p.Optional("a") != "q" {
		t.Fatalf("clash: %v %v", p, err)
	}
}

func TestTypedParams(t *testing.T) {
	p, _ := ParseParams([]byte("login=1001&bad=x&lim=0&big=1001&ok=10&neg=-1"), nil, 32)
	if l, err := p.Login(); err != nil || l != 1001 {
		t.Fatal(l, err)
	}
	q, _ := ParseParams([]byte("login=1e3"), nil, 32)
	if _, err := q.Login(); codeOf(err) != events.CodeInvalidLogin {
		t.Fatal(err)
	}
	q, _ = ParseParams(nil, nil, 32)
	if _, err := q.Login(); codeOf(err) != events.CodeMandatoryParam {
		t.Fatal(err)
	}
	if _, err := p.OptionalInt64("bad"); codeOf(err) != events.CodeInvalidData {
		t.Fatal(err)
	}
	if v, err := p.OptionalInt64("neg"); err != nil || *v != -1 {
		t.Fatal(v, err)
	}
	if v, err := p.OptionalInt64("none"); err != nil || v != nil {
		t.Fatal(v, err)
	}
	for _, name := range []string{"lim", "big", "bad"} {
		if _, err := p.OptionalIntRange(name, 1, 1000); codeOf(err) != events.CodeInvalidData {
			t.Errorf("%s: %v", name, err)
		}
	}
	if v, err := p.OptionalIntRange("ok", 1, 1000); err != nil || v != 10 {
		t.Fatal(v, err)
	}
}

func TestTotalParams(t *testing.T) {
	cases := []struct{ query, body, want string }{
		{"a=1&b=2&signature=ff", "", "a=1&b=2"},
		{"", "a=1&signature=ff", "a=1"},
		{"a=1", "b=2&signature=ff", "a=1b=2"},
		{"signature=ff&a=1", "", "a=1"},
		{"a=1&signature=ff&b=2", "", "a=1&b=2"},
		{"a=1&", "", "a=1&"}, // bytes as transmitted
		{"a=%2F", "", "a=%2F"},
		{"a=1&signatures=x", "", "a=1&signatures=x"},
		{"signature", "", ""},
	}
	for _, c := range cases {
		if got := string(TotalParams(nil, []byte(c.query), []byte(c.body))); got != c.want {
			t.Errorf("TotalParams(%q,%q) = %q, want %q", c.query, c.body, got, c.want)
		}
	}
}

func TestVerifySignature(t *testing.T) {
	secret := []byte("NhqPtmdSJYdKjVHjA7PZj4Mge3R5YNiP1e3UZjInClVN65XAbvqqM6A7H5fATj0j")
	total := []byte("symbol=LTCBTC&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559")
	// The well-known HMAC-SHA256 example of this request/secret pair.
	want := "c8db56825ae71d6d79447849e617115f4a920fa2acdcab2b053c4b2838bd6b71"
	if got := Sign(secret, total); got != want {
		t.Fatalf("Sign = %s", got)
	}
	if !VerifySignature(secret, total, want) || !VerifySignature(secret, total, strings.ToUpper(want)) {
		t.Fatal("valid signature refused")
	}
	if VerifySignature(secret, total, want[:63]+"0") || VerifySignature(secret, append(total, '1'), want) ||
		VerifySignature([]byte("x"), total, want) || VerifySignature(secret, total, "") {
		t.Fatal("invalid signature accepted")
	}
}

func FuzzParseParams(f *testing.F) {
	f.Add("symbol=EURUSD&limit=10", "login=1&signature=ab")
	f.Add("a=%ZZ&&=", "%")
	f.Add("a+b=%C3%A9", "x=1&x=2")
	f.Fuzz(func(t *testing.T, query, body string) {
		p, err := ParseParams([]byte(query), []byte(body), 32)
		if err != nil {
			if codeOf(err) != events.CodeIllegalChars && codeOf(err) != events.CodeTooManyParams {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if p.Len() > 32 {
			t.Fatalf("%d params", p.Len())
		}
		for _, q := range append(append([]param{}, p.query...), p.body...) {
			if !validName(q.name) || !validValue(q.value) {
				t.Fatalf("invalid param %q=%q accepted", q.name, q.value)
			}
		}
		_, _ = p.Login()
		_, _ = p.OptionalInt64("limit")
		_, _ = p.OptionalIntRange("limit", 1, 1000)
	})
}

func FuzzVerifySignature(f *testing.F) {
	f.Add("a=1&signature=00", "b=2", "secret", "00")
	f.Add("", "signature=", "", "zz")
	f.Fuzz(func(t *testing.T, query, body, secret, sig string) {
		total := TotalParams(nil, []byte(query), []byte(body))
		if len(total) > len(query)+len(body) {
			t.Fatal("TotalParams grew the input")
		}
		good := Sign([]byte(secret), total)
		if !VerifySignature([]byte(secret), total, good) {
			t.Fatal("own signature refused")
		}
		if VerifySignature([]byte(secret), total, sig) != (strings.EqualFold(sig, good)) {
			t.Fatalf("signature %q verified inconsistently", sig)
		}
	})
}

func TestItemCount(t *testing.T) {
	p, _ := ParseParams([]byte(`batchOrders=%5B%7B%22a%22%3A1%7D%2C%7B%7D%5D&bad=%7B%7D`), nil, 32)
	if n := p.ItemCount("batchOrders"); n != 2 {
		t.Fatalf("ItemCount = %d", n)
	}
	if p.ItemCount("bad") != 0 || p.ItemCount("none") != 0 {
		t.Fatal("non-arrays must count 0")
	}
}

// TestWithoutSignature: the command log keeps the parameters without the signature.
func TestWithoutSignature(t *testing.T) {
	for in, want := range map[string]string{
		"a=1&timestamp=2&signature=abc":       "a=1&timestamp=2",
		"signature=abc&a=1":                   "a=1",
		"a=1&signature=abc&b=2":               "a=1&b=2",
		"a=1&b=2":                             "a=1&b=2",
		"a=1&mysignature=x&timestamp=1":       "a=1&mysignature=x&timestamp=1",
		"a=1&timestampsignature=abcdef0123&b": "a=1&timestampsignature=abcdef0123&b",
		"mysignature=x&signature=abc":         "mysignature=x",
	} {
		if got := withoutSignature(in); got != want {
			t.Errorf("withoutSignature(%q) = %q, want %q", in, got, want)
		}
	}
}
