package sim

import (
	"encoding/json"
	"errors"
	"testing"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/infra/testenv"
)

// seedWithoutGBPRate is the default seed with GBPUSD turned into EURGBP: its profit and
// commission are in GBP, and no symbol quotes GBP against USD any more.
func seedWithoutGBPRate(t *testing.T) []byte {
	t.Helper()
	var seed map[string]any
	if err := json.Unmarshal(DefaultSeed, &seed); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range seed["symbols"].([]any) {
		y := s.(map[string]any)
		if y["name"] == "GBPUSD" {
			y["name"], y["currencyBase"], y["currencyMargin"] = "EURGBP", "EUR", "EUR"
			y["currencyProfit"], y["commissionCurrency"], y["initialBid"] = "GBP", "GBP", "0.85000"
			found = true
		}
	}
	if !found {
		t.Fatal("the default seed has no GBPUSD to turn into EURGBP")
	}
	b, err := json.Marshal(seed)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openWithoutGBPRate(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, clock: testenv.NewClock(tuesdayNoon), dir: t.TempDir(), ctx: t.Context()}
	s, err := Open(Config{DataDir: h.dir, Seed: seedWithoutGBPRate(t), Clock: h.clock, RNGSeed: 7, Sync: SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	h.s = s
	t.Cleanup(func() { _ = s.Close() })
	return h
}

// Regression: a conversion without a rate returned zero with a dropped "ok", so the
// commission of such a trade was booked as 0.00.
func TestConversionWithoutARateIsAnErrorNotZero(t *testing.T) {
	h := openWithoutGBPRate(t)
	h.s.mu.Lock()
	v, err := h.s.convert(D("7.00"), "GBP", "USD")
	h.s.mu.Unlock()
	var noRate *NoRateError
	if !errors.As(err, &noRate) || noRate.From != "GBP" || noRate.To != "USD" {
		t.Fatalf("convert 7.00 GBP to USD = %s, %v; want a NoRateError GBP→USD", v.String(), err)
	}
	h.s.mu.Lock()
	usd, err := h.s.convert(D("10"), "EUR", "USD") // through EURUSD, which has a quote
	h.s.mu.Unlock()
	if err != nil || usd.IsZero() {
		t.Fatalf("convert 10 EUR to USD = %s, %v", usd.String(), err)
	}
}

func TestTradeNeedingAMissingRateIsRefusedAndChangesNothing(t *testing.T) {
	h := openWithoutGBPRate(t)
	before, err := h.s.Account(h.ctx, 1001)
	if err != nil {
		t.Fatal(err)
	}
	h.mustCode(trading.RetPriceOff, mt5.TradeRequest{Login: 1001, Action: mt5.ActionDeal, Symbol: "EURGBP",
		Type: trading.OrderBuy, Volume: D("0.10")})
	ps, err := h.s.Positions(h.ctx, 1001)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 0 {
		t.Fatalf("a refused trade left %d positions", len(ps))
	}
	after, err := h.s.Account(h.ctx, 1001)
	if err != nil {
		t.Fatal(err)
	}
	if after.Balance.Cmp(&before.Balance) != 0 {
		t.Fatalf("balance %s → %s after a refused trade", before.Balance.String(), after.Balance.String())
	}
	// A symbol whose currencies do convert still trades.
	h.mustCode(trading.RetDone, mt5.TradeRequest{Login: 1001, Action: mt5.ActionDeal, Symbol: "EURUSD",
		Type: trading.OrderBuy, Volume: D("0.10")})
}
