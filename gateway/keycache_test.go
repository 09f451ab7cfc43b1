package gateway

import (
	"net/netip"
	"testing"
)

// TestKeyAllowsAddr pins the source-address rule of a key: any address without a CIDR list,
// otherwise one inside a listed network, an IPv4-mapped IPv6 address counting as its IPv4.
func TestKeyAllowsAddr(t *testing.T) {
	open := newAuthKey(Key{APIKey: "k"})
	if !open.allows(netip.MustParseAddr("203.0.113.9")) {
		t.Error("a key without a CIDR list refused an address")
	}
	k := newAuthKey(Key{APIKey: "k", AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.0.2.7/32")}})
	for addr, want := range map[string]bool{"10.200.0.1": true, "::ffff:192.0.2.7": true, "192.0.2.8": false} {
		if got := k.allows(netip.MustParseAddr(addr)); got != want {
			t.Errorf("allows(%s) = %v, want %v", addr, got, want)
		}
	}
}
