package command

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// TagLen is the length of the correlation tag the executor appends to the platform comment.
const TagLen = 7

// tagAlphabet gives 62^6 (5.7e10) tags per login: a collision among the operations of one
// account is negligible, and the leading '#' tells a tag from the end of a manual comment.
const tagAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newTag returns a fresh correlation tag: '#' and six random characters of [0-9A-Za-z].
func newTag() string {
	var b [TagLen - 1]byte
	fill(b[:])
	out := make([]byte, TagLen)
	out[0] = '#'
	for i, c := range b {
		out[i+1] = tagAlphabet[int(c)%len(tagAlphabet)]
	}
	return string(out)
}

// newOperationID returns a fresh operation id (128 random bits, hex).
func newOperationID() string {
	var b [16]byte
	fill(b[:])
	return hex.EncodeToString(b[:])
}

// newClientOrderID returns the id generated for a request that sent no newClientOrderId:
// "svc-" and 32 hex digits, 36 characters, the longest a client order id may be.
func newClientOrderID() string {
	var b [16]byte
	fill(b[:])
	return "svc-" + hex.EncodeToString(b[:])
}

func fill(b []byte) {
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("command: no randomness: %v", err)) // crypto/rand never fails on Linux
	}
}
