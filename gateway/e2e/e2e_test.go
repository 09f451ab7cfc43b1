package e2e_test

import "testing"

// quotedSymbols trade 24/7 in the default seed (FX may be closed when the suite runs) and
// cover 2, 3, 4 and 5 price digits.
var quotedSymbols = []string{"BTCUSD", "ETHUSD", "DOTUSD", "XRPUSD", "DOGEUSD"}

// TestE2E starts one whole service and runs every end-to-end group against it over HTTPS.
// Groups that must wait on the clock (rate-limit windows, closed kline bars) run in parallel
// after the others.
func TestE2E(t *testing.T) {
	e := startEnv(t, quotedSymbols...)
	t.Run("general", func(t *testing.T) { testGeneral(t, e) })
	t.Run("security", func(t *testing.T) { testSecurity(t, e) })
	t.Run("tls", func(t *testing.T) { testTLS(t, e) })
	t.Run("signatures", func(t *testing.T) { testSignatures(t, e) })
	t.Run("scope", func(t *testing.T) { testScope(t, e) })
	t.Run("validation", func(t *testing.T) { testValidation(t, e) })
	t.Run("decimals", func(t *testing.T) { testDecimals(t, e) })
	t.Run("ratelimits", func(t *testing.T) { t.Parallel(); testRateLimits(t, e) })
	t.Run("klines", func(t *testing.T) { t.Parallel(); testKlines(t, e) })
}
