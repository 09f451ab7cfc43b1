package streams

import (
	"strings"

	"tradesvc/events"
)

// Kind is the type of a market stream (the part of its name after '@').
type Kind uint8

// Market stream kinds.
const (
	KindTick Kind = iota
	KindBookTicker
	KindKline
	KindTicker
	KindDepth
)

// Name is a parsed market stream name: <SYMBOL>@tick, @bookTicker, @kline_<interval>,
// @ticker or @depth. The symbol is exact and case-sensitive (never lowercased).
type Name struct {
	Symbol string
	Kind   Kind
	// Interval indexes KlineIntervals (KindKline only).
	Interval int
}

// String renders the name as clients write it.
func (n Name) String() string {
	switch n.Kind {
	case KindTick:
		return n.Symbol + "@tick"
	case KindBookTicker:
		return n.Symbol + "@bookTicker"
	case KindKline:
		return n.Symbol + "@kline_" + KlineIntervals[n.Interval].Name
	case KindTicker:
		return n.Symbol + "@ticker"
	default:
		return n.Symbol + "@depth"
	}
}

var (
	errBadStreamName    = events.Reject(events.CodeInvalidSymbol, "Invalid stream name.")
	errBadKlineInterval = events.Reject(events.CodeInvalidInterval, "Invalid interval.")
)

// maxSymbolLen bounds the symbol part, so a hostile name cannot make lookups expensive.
const maxSymbolLen = 64

// ParseName parses a stream name. A malformed name or an unknown type is -1121, a kline
// stream with an unsupported interval -1120. Whether the symbol exists is checked separately
// against the symbol read model (also -1121).
func ParseName(s string) (Name, error) {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at > maxSymbolLen || !validSymbol(s[:at]) {
		return Name{}, errBadStreamName
	}
	n := Name{Symbol: s[:at]}
	switch suffix := s[at+1:]; suffix {
	case "tick":
		n.Kind = KindTick
	case "bookTicker":
		n.Kind = KindBookTicker
	case "ticker":
		n.Kind = KindTicker
	case "depth":
		n.Kind = KindDepth
	default:
		iv, ok := strings.CutPrefix(suffix, "kline_")
		if !ok {
			return Name{}, errBadStreamName
		}
		i := klineIntervalIndex(iv)
		if i < 0 {
			return Name{}, errBadKlineInterval
		}
		n.Kind, n.Interval = KindKline, i
	}
	return n, nil
}

// validSymbol accepts printable ASCII without spaces, '/', '@' or quotes: every symbol the
// trade server can name, and nothing that could break a combined URL or a JSON string.
func validSymbol(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || c == '/' || c == '@' || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}
