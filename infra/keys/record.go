package keys

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// Limits are a key's own rate limits; 0 means the service default.
type Limits struct {
	WeightPerMinute int `json:"weightPerMinute"`
	Orders10s       int `json:"orders10s"`
	Orders1m        int `json:"orders1m"`
}

// Record is a stored key. Secret is filled by Lookup only (List never returns secrets).
type Record struct {
	ID         int64          `json:"id"`
	APIKey     string         `json:"apiKey"`
	Secret     []byte         `json:"-"`
	Logins     []int64        `json:"logins"`
	ReadOnly   bool           `json:"readOnly"`
	AllowCIDRs []netip.Prefix `json:"allowCidrs"`
	Limits     Limits         `json:"limits"`
	// Times in Unix milliseconds; RevokedAt is 0 while the key is active.
	CreatedAt int64 `json:"createdAt"`
	UpdatedAt int64 `json:"updatedAt"`
	RevokedAt int64 `json:"revokedAt,omitempty"`
}

// AllowsLogin reports whether the key may act on login.
func (r Record) AllowsLogin(login int64) bool {
	_, found := slices.BinarySearch(r.Logins, login) // stored sorted
	return found
}

// normalizeLogins sorts and deduplicates logins and refuses non-positive ones.
func normalizeLogins(logins []int64) ([]int64, error) {
	out := slices.Clone(logins)
	for _, l := range out {
		if l <= 0 {
			return nil, fmt.Errorf("keys: login %d is not a positive number", l)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []int64{}
	}
	return out, nil
}

// parseCIDRs accepts networks ("10.0.0.0/8") and single addresses ("192.0.2.7", stored as /32
// or /128), and returns them in canonical masked form.
func parseCIDRs(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("keys: %q is neither a CIDR network nor an IP address", s)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func unixMs(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UnixMilli()
}
