package keys

import (
	"crypto/rand"
	"fmt"
)

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// CredentialLength is the length of API keys and API secrets.
const CredentialLength = 64

// RandomString returns n characters drawn uniformly from [A-Za-z0-9] (about 5.95 bits each,
// 381 bits for 64), rejecting bytes >= 248 so that no character is more likely than another:
// API keys and secrets, and listen keys.
func RandomString(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("keys: random: %w", err)
		}
		for _, b := range buf {
			if b < 248 && len(out) < n { // 248 = 4 * 62
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out), nil
}

// ValidAPIKey reports whether s has the shape of an API key (64 characters [A-Za-z0-9]), so
// that the gateway can refuse garbage without a database round trip.
func ValidAPIKey(s string) bool { return IsRandomString(s, CredentialLength) }

// IsRandomString reports whether s has the shape of what RandomString(n) draws: n characters
// [A-Za-z0-9].
func IsRandomString(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
