package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"tradesvc/events"
)

// Signed-request parameters.
const (
	paramSignature  = "signature"
	paramTimestamp  = "timestamp"
	paramRecvWindow = "recvWindow"

	defaultRecvWindow = 5000
	maxRecvWindow     = 60000
	// leadTolerance is how far a timestamp may lie ahead of the server clock.
	leadTolerance = 1000
)

// TotalParams appends to dst the bytes that are signed: the raw query string followed
// directly by the raw body, as transmitted, with every "signature=..." segment removed. The
// spec sends the signature last; removing it wherever it stands changes nothing for such a
// request and never lets a signature sign itself.
func TotalParams(dst, query, body []byte) []byte {
	dst = appendWithoutSignature(dst, query)
	return appendWithoutSignature(dst, body)
}

func appendWithoutSignature(dst, raw []byte) []byte {
	start := len(dst)
	removedLast := false
	for len(raw) > 0 {
		seg := raw
		rest := []byte(nil)
		if i := indexByte(raw, '&'); i >= 0 {
			seg, rest = raw[:i+1], raw[i+1:] // keep the '&' with its segment
		}
		removedLast = isSignatureSegment(seg)
		if !removedLast {
			dst = append(dst, seg...)
		}
		raw = rest
	}
	// Removing the last segment leaves the '&' that separated it from the one before.
	if removedLast && len(dst) > start && dst[len(dst)-1] == '&' {
		dst = dst[:len(dst)-1]
	}
	return dst
}

func isSignatureSegment(seg []byte) bool {
	const prefix = paramSignature + "="
	if len(seg) < len(prefix) {
		return string(seg) == paramSignature || string(seg) == paramSignature+"&"
	}
	return string(seg[:len(prefix)]) == prefix
}

// Sign returns the lowercase hex HMAC-SHA256 of totalParams under secret.
func Sign(secret, totalParams []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(totalParams)
	return hex.EncodeToString(m.Sum(nil))
}

// VerifySignature reports whether sig is the hex HMAC-SHA256 of totalParams under secret,
// comparing in constant time. Anything but 64 hex digits is false.
func VerifySignature(secret, totalParams []byte, sig string) bool {
	if len(sig) != sha256.Size*2 {
		return false
	}
	var got [sha256.Size]byte
	if _, err := hex.Decode(got[:], []byte(sig)); err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(totalParams)
	return hmac.Equal(m.Sum(nil), got[:])
}

// checkSigned verifies a USER_DATA / TRADE request: timestamp (-1102 missing, -1130 not an
// integer), recvWindow (-1130 malformed or outside 1..60000), signature (-1102 missing,
// -1022 wrong) and then the timing rule (-1021). The signature is checked before the
// timing so that an unsigned caller learns nothing about the server clock.
func checkSigned(p *Params, secret, query, body []byte, now time.Time, buf *[]byte) error {
	tsRaw, err := p.Required(paramTimestamp)
	if err != nil {
		return err
	}
	ts, perr := strconv.ParseInt(tsRaw, 10, 64)
	if perr != nil {
		return errInvalid(paramTimestamp)
	}
	window := int64(defaultRecvWindow)
	if v, ok := p.Get(paramRecvWindow); ok {
		w, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || w < 1 || w > maxRecvWindow {
			return events.Reject(events.CodeInvalidData, "recvWindow must be an integer from 1 to 60000.")
		}
		window = w
	}
	sig, err := p.Required(paramSignature)
	if err != nil {
		return err
	}
	total := TotalParams((*buf)[:0], query, body)
	*buf = total[:0] // keep the grown buffer for the next request
	if !VerifySignature(secret, total, sig) {
		return events.Reject(events.CodeBadSignature, "Signature for this request is not valid.")
	}
	server := now.UnixMilli()
	if ts >= server+leadTolerance || server-ts > window {
		return events.Reject(events.CodeTimestampOutside, "Timestamp for this request is outside of the recvWindow.")
	}
	return nil
}
