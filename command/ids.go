package command

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// TagLen is the length of the correlation tag the executor appends to the platform comment.
const TagLen = 7

// tagAlphabet is the digits of a tag: '#' (which tells a tag from the end of a manual
// comment) and six base-62 digits.
const tagAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

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
