package streams

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// RFC 6455 5.2: FIN and the opcode, no mask bit from a server, then a 7-bit, 16-bit or
// 64-bit length.
func TestFramesCarryTheRFCHeaderForEachLengthClass(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 65535, 65536, 70000} {
		p := bytes.Repeat([]byte{'x'}, n)
		f := textFrame(p)
		if f[0] != 0x81 {
			t.Fatalf("len %d: first byte %#x, want FIN|text", n, f[0])
		}
		var hdr, got int
		switch {
		case n <= 125:
			hdr, got = 2, int(f[1])
		case n <= 65535:
			hdr, got = 4, int(binary.BigEndian.Uint16(f[2:4]))
			if f[1] != 126 {
				t.Fatalf("len %d: length marker %d, want 126", n, f[1])
			}
		default:
			hdr, got = 10, int(binary.BigEndian.Uint64(f[2:10]))
			if f[1] != 127 {
				t.Fatalf("len %d: length marker %d, want 127", n, f[1])
			}
		}
		if got != n || len(f) != hdr+n || !bytes.Equal(f[hdr:], p) {
			t.Fatalf("len %d: header says %d, frame is %d bytes", n, got, len(f))
		}
	}
	if c := appendFrame(nil, opClose, []byte{0x03, 0xe8}); !bytes.Equal(c, []byte{0x88, 2, 0x03, 0xe8}) {
		t.Fatalf("close frame %x", c)
	}
}
