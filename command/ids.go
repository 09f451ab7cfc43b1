package command

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// newOperationID returns a fresh operation id (128 random bits, hex).
func newOperationID() string {
	var b [16]byte
	fill(b[:])
	return hex.EncodeToString(b[:])
}

// NewClientOrderID returns the id generated for a request that sent no newClientOrderId:
// "svc-" and 32 hex digits, 36 characters, the longest a client order id may be.
func NewClientOrderID() string {
	var b [16]byte
	fill(b[:])
	return "svc-" + hex.EncodeToString(b[:])
}

func fill(b []byte) {
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("command: no randomness: %v", err)) // crypto/rand never fails on Linux
	}
}
