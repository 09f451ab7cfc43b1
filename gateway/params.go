package gateway

import (
	"unicode/utf8"

	"tradesvc/events"
)

// param is one decoded name=value pair.
type param struct {
	name, value string
}

// Params are a request's parameters: the query string and the form body, decoded. A name
// in both parts takes the query's value (the spec's rule).
type Params struct {
	query []param
	body  []param
}

// maxNameLen bounds parameter names; real names are short.
const maxNameLen = 64

// ParseParams decodes the raw query string and the raw form body. It answers -1100 for
// malformed percent-encoding, invalid UTF-8, control characters or a name outside
// [A-Za-z0-9_], and -1101 for more than maxParams parameters or a name repeated within one
// part. Empty segments ("a=1&&b=2") are ignored.
func ParseParams(query, body []byte, maxParams int) (*Params, error) {
	p := &Params{}
	var err error
	if p.query, err = parsePart(query, nil, maxParams); err != nil {
		return nil, err
	}
	if p.body, err = parsePart(body, nil, maxParams-len(p.query)); err != nil {
		return nil, err
	}
	return p, nil
}

func parsePart(raw []byte, dst []param, max int) ([]param, error) {
	for len(raw) > 0 {
		var seg []byte
		if i := indexByte(raw, '&'); i >= 0 {
			seg, raw = raw[:i], raw[i+1:]
		} else {
			seg, raw = raw, nil
		}
		if len(seg) == 0 {
			continue
		}
		rawName, rawValue := seg, []byte(nil)
		if i := indexByte(seg, '='); i >= 0 {
			rawName, rawValue = seg[:i], seg[i+1:]
		}
		name, ok := unescape(rawName)
		if !ok || !validName(name) {
			return nil, events.Reject(events.CodeIllegalChars, "Illegal characters found in a parameter name.")
		}
		value, ok := unescape(rawValue)
		if !ok || !validValue(value) {
			return nil, errIllegalValue(name)
		}
		for _, q := range dst {
			if q.name == name {
				return nil, events.Reject(events.CodeTooManyParams, "Duplicate values for parameter '"+name+"'.")
			}
		}
		if len(dst) >= max {
			return nil, events.Reject(events.CodeTooManyParams, "Too many parameters.")
		}
		dst = append(dst, param{name: name, value: value})
	}
	return dst, nil
}

func indexByte(b []byte, c byte) int {
	for i := range b {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// unescape decodes application/x-www-form-urlencoded bytes ('+' is a space).
func unescape(b []byte) (string, bool) {
	n := 0
	for i := 0; i < len(b); i++ {
		if b[i] == '%' || b[i] == '+' {
			n++
		}
	}
	if n == 0 {
		return string(b), true
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '+':
			out = append(out, ' ')
		case '%':
			if i+2 >= len(b) {
				return "", false
			}
			hi, ok1 := unhex(b[i+1])
			lo, ok2 := unhex(b[i+2])
			if !ok1 || !ok2 {
				return "", false
			}
			out = append(out, hi<<4|lo)
			i += 2
		default:
			out = append(out, c)
		}
	}
	return string(out), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// errIllegalValue is -1100 for the value of parameter name (validValue).
func errIllegalValue(name string) error {
	return events.Reject(events.CodeIllegalChars, "Illegal characters found in parameter '"+name+"'.")
}

// validValue refuses invalid UTF-8 and control characters (tab included).
func validValue(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// Get returns the value of name (query first) and whether it was sent.
func (p *Params) Get(name string) (string, bool) {
	for _, q := range p.query {
		if q.name == name {
			return q.value, true
		}
	}
	for _, q := range p.body {
		if q.name == name {
			return q.value, true
		}
	}
	return "", false
}

// Has reports whether name was sent (possibly empty).
func (p *Params) Has(name string) bool {
	_, ok := p.Get(name)
	return ok
}

// Len is the number of parameters received (both parts).
func (p *Params) Len() int { return len(p.query) + len(p.body) }
