package streams

import "encoding/binary"

// WebSocket frame opcodes the server writes (RFC 6455, 5.2).
const (
	opText  = 0x1
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xA
)

// textFrame frames payload as one final, unmasked text frame. A server's frames carry no
// mask, so one framed payload is the same bytes for every connection: the market hub frames
// each update once and every subscriber's writer copies it into its next batch.
func textFrame(payload []byte) []byte { return appendFrame(nil, opText, payload) }

// appendFrame appends one final frame of opcode op to b.
func appendFrame(b []byte, op byte, payload []byte) []byte {
	n := len(payload)
	switch {
	case n <= 125:
		b = append(b, 0x80|op, byte(n))
	case n <= 0xFFFF:
		b = append(b, 0x80|op, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 0x80|op, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}
