package trading

import (
	"strings"
	"time"
)

// The correlation tag: every operation the service sends carries one at the end of its
// platform comment ('#' and six base-62 digits), so that the trade server's orders and deals
// of it can be found again (after a crash, a send without an answer) and each deal can be
// told whose it is.

// TagLen is the length of a tag.
const TagLen = 7

// TagSpace is the number of distinct tags: 62^6.
const TagSpace = 56800235584

// MaxPlatformComment is the longest comment the trade server stores (MT5 keeps 31 characters).
const MaxPlatformComment = 31

// tagAlphabet is the digits of a tag; '#' tells a tag from the end of a manual comment.
const tagAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// FormatTag writes n (0 <= n < TagSpace) as a tag.
func FormatTag(n int64) string {
	out := [TagLen]byte{'#'}
	for i := TagLen - 1; i > 0; i-- {
		out[i] = tagAlphabet[n%62]
		n /= 62
	}
	return string(out[:])
}

// TagOf returns the tag a platform comment ends with, or "" when it carries none.
func TagOf(comment string) string {
	if len(comment) < TagLen {
		return ""
	}
	tag := comment[len(comment)-TagLen:]
	if tag[0] != '#' {
		return ""
	}
	for i := 1; i < TagLen; i++ {
		c := tag[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return ""
		}
	}
	return strings.Clone(tag)
}

// WithTag ends a platform comment with the tag, shortening the client's comment (at most 24
// characters by the contract, so only a producer bug) to keep the tag inside the characters
// the server stores: without it the operation could not be found after a crash.
func WithTag(comment, tag string) string {
	r := []rune(comment)
	if room := MaxPlatformComment - len([]rune(tag)); len(r) > room {
		r = r[:max(room, 0)]
	}
	return string(r) + tag
}

// ClientOrderIDRetention is how long a client order id stays bound to its operation (the
// spec's "at least 24 hours"): the command side's idempotency records live that long, and a
// projection that meets a command older than that cannot expect its record to be there.
const ClientOrderIDRetention = 24 * time.Hour
