package gwclient_test

import (
	"net/url"
	"strings"
	"testing"

	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
)

// The client's signing agrees with the gateway's verification in every placement.
func TestSignParamsAgreesWithGateway(t *testing.T) {
	secret := []byte("s3cret")
	params := url.Values{"login": {"1001"}, "comment": {"a b&c"}}
	for _, pl := range []gwclient.Placement{gwclient.InQuery, gwclient.InBody, gwclient.Split} {
		q, b := gwclient.SignParams(secret, params, pl, 1_700_000_000_000, 5000)
		sig := ""
		for _, part := range []string{q, b} {
			if i := strings.Index(part, "signature="); i >= 0 {
				sig = part[i+len("signature="):]
			}
		}
		if !strings.HasSuffix(q+b, "signature="+sig) || len(sig) != 64 {
			t.Fatalf("%v: signature not last: %q %q", pl, q, b)
		}
		total := gateway.TotalParams(nil, []byte(q), []byte(b))
		if !gateway.VerifySignature(secret, total, sig) {
			t.Fatalf("%v: gateway refuses %q %q", pl, q, b)
		}
		if !strings.Contains(q+b, "timestamp=1700000000000") || !strings.Contains(q+b, "recvWindow=5000") {
			t.Fatalf("%v: %q %q", pl, q, b)
		}
	}
}
