package streams

import (
	"testing"

	"tradesvc/events"
)

func TestParseNameAcceptsEveryStreamTypeInExactCase(t *testing.T) {
	cases := map[string]Name{
		"BTCUSD@tick":         {Symbol: "BTCUSD", Kind: KindTick},
		"EURUSD.m@bookTicker": {Symbol: "EURUSD.m", Kind: KindBookTicker},
		"XAUUSD@kline_1m":     {Symbol: "XAUUSD", Kind: KindKline, Interval: 0},
		"XAUUSD@kline_1d":     {Symbol: "XAUUSD", Kind: KindKline, Interval: 7},
		"US500@ticker":        {Symbol: "US500", Kind: KindTicker},
		"btcusd@depth":        {Symbol: "btcusd", Kind: KindDepth}, // syntax only: existence is checked apart
	}
	for in, want := range cases {
		got, err := ParseName(in)
		if err != nil || got != want {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("%+v renders %q, want %q", got, got.String(), in)
		}
	}
}

func TestParseNameRefusesMalformedNamesAndUnknownTypesWith1121(t *testing.T) {
	for _, in := range []string{"", "BTCUSD", "@tick", "BTCUSD@", "BTCUSD@TICK", "BTCUSD@Tick", "BTCUSD@trade",
		"BTCUSD@bookticker", "BTC USD@tick", "BTC/USD@tick", "BTCUSD@kline", "BTCUSD@tick@tick", "BTC\"USD@tick"} {
		_, err := ParseName(in)
		if rej, ok := err.(*events.Rejection); !ok || rej.Code != events.CodeInvalidSymbol {
			t.Errorf("ParseName(%q) = %v, want -1121", in, err)
		}
	}
}

func TestParseNameRefusesUnsupportedKlineIntervalsWith1120(t *testing.T) {
	for _, in := range []string{"BTCUSD@kline_", "BTCUSD@kline_1w", "BTCUSD@kline_1M", "BTCUSD@kline_3m", "BTCUSD@kline_1H"} {
		_, err := ParseName(in)
		if rej, ok := err.(*events.Rejection); !ok || rej.Code != events.CodeInvalidInterval {
			t.Errorf("ParseName(%q) = %v, want -1120", in, err)
		}
	}
}
