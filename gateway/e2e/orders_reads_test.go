package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/mt5"
)

// TestOrderReads trades on the simulator directly through its port, as a platform client
// outside the API would (no correlation tag), and reads the orders, positions and deals back
// through REST once the facts have come through the pipeline (simulator → relay → Kafka →
// projection.trading / ClickHouse → gateway).
func TestOrderReads(t *testing.T) {
	e := startEnv(t, "BTCUSD")
	ctx := context.Background()
	port := e.svc.App.Sim()
	c := e.client(e.unlimitedKey(t))
	read := func(path string, kv ...string) *gwclient.Response {
		t.Helper()
		params := map[string][]string{"login": {itoa(loginReal1)}}
		for i := 0; i+1 < len(kv); i += 2 {
			params[kv[i]] = []string{kv[i+1]}
		}
		return signed(t, c, path, params, gwclient.InQuery)
	}
	list := func(path string, kv ...string) []map[string]json.RawMessage {
		t.Helper()
		res := read(path, kv...)
		wantOK(t, res)
		var out []map[string]json.RawMessage
		decode(t, res, &out)
		return out
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}
	asJSON := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}

	opened, err := port.Send(ctx, mt5.TradeRequest{Login: loginReal1, Action: mt5.ActionDeal, Symbol: "BTCUSD",
		Type: trading.OrderBuy, Volume: dec.MustParse("0.03"), Comment: "e2e reads"})
	if err != nil || opened.Retcode != trading.RetDone || opened.Position == 0 {
		t.Fatalf("market buy: %+v %v", opened, err)
	}
	quote, err := port.Quote(ctx, "BTCUSD")
	if err != nil {
		t.Fatal(err)
	}
	limitPrice := dec.Round(dec.Mul(quote.Bid, dec.MustParse("0.5")), 2)
	placed, err := port.Send(ctx, mt5.TradeRequest{Login: loginReal1, Action: mt5.ActionPending, Symbol: "BTCUSD",
		Type: trading.OrderBuyLimit, Volume: dec.MustParse("0.01"), Price: limitPrice, Comment: "e2e limit"})
	if err != nil || placed.Retcode != trading.RetPlaced || placed.Order == 0 {
		t.Fatalf("buy limit: %+v %v", placed, err)
	}

	t.Run("positions", func(t *testing.T) {
		var pos map[string]json.RawMessage
		eventuallyNoMismatch(t, 30*time.Second, "the position in GET /v1/positions", func() string {
			for _, p := range list("/v1/positions") {
				if wantInt(t, "positionId", p["positionId"]) == opened.Position {
					pos = p
					return ""
				}
			}
			return "not listed"
		})
		if wantInt(t, "login", pos["login"]) != loginReal1 || str(pos, "symbol") != "BTCUSD" || str(pos, "side") != "BUY" ||
			str(pos, "volume") != "0.03" || str(pos, "comment") != "e2e reads" || str(pos, "sl") != "0" {
			t.Errorf("position %s", asJSON(pos))
		}
		if cmpDec(wantDecimal(t, "openPrice", pos["openPrice"], 2), dec.String(opened.Price)) != 0 {
			t.Errorf("openPrice %s, fill price %s", pos["openPrice"], dec.String(opened.Price))
		}
		wantDecimal(t, "currentPrice", pos["currentPrice"], 2)
		wantDecimal(t, "profit", pos["profit"], 4)
		wantDecimal(t, "swap", pos["swap"], 4)
		if at := wantInt(t, "openTime", pos["openTime"]); at%1000 != 0 || at == 0 {
			t.Errorf("openTime %d", at)
		}
		if len(list("/v1/positions", "symbol", "ETHUSD")) != 0 {
			t.Error("the BTCUSD position is listed under ETHUSD")
		}
		wantErr(t, read("/v1/positions", "symbol", "btcusd"), http.StatusBadRequest, -1121)
	})

	t.Run("open orders and GET /v1/order by orderId", func(t *testing.T) {
		var ord map[string]json.RawMessage
		eventuallyNoMismatch(t, 30*time.Second, "the limit order in GET /v1/openOrders", func() string {
			for _, o := range list("/v1/openOrders") {
				if wantInt(t, "orderId", o["orderId"]) == placed.Order {
					ord = o
					return ""
				}
			}
			return "not listed"
		})
		if str(ord, "type") != "BUY_LIMIT" || str(ord, "side") != "BUY" || str(ord, "status") != "NEW" ||
			str(ord, "volume") != "0.01" || str(ord, "remainingVolume") != "0.01" || str(ord, "timeInForce") != "GTC" ||
			str(ord, "stopLimitPrice") != "0" || str(ord, "tp") != "0" || wantInt(t, "expiration", ord["expiration"]) != 0 {
			t.Errorf("open order %s", asJSON(ord))
		}
		if _, ok := ord["clientOrderId"]; ok {
			t.Errorf("an order placed outside the API has no clientOrderId: %s", asJSON(ord))
		}
		if p := wantDecimal(t, "price", ord["price"], 2); cmpDec(p, dec.String(limitPrice)) != 0 {
			t.Errorf("price %s, want %s", p, dec.String(limitPrice))
		}
		res := read("/v1/order", "orderId", itoa(placed.Order))
		wantOK(t, res)
		one := fields(t, res.Body)
		if str(one, "status") != "NEW" || wantInt(t, "orderId", one["orderId"]) != placed.Order || str(one, "price") != str(ord, "price") {
			t.Errorf("GET /v1/order %s", res.Body)
		}
		wantErr(t, read("/v1/order", "orderId", "999999999"), http.StatusBadRequest, -2013)
		wantErr(t, read("/v1/order", "origClientOrderId", "never-sent"), http.StatusBadRequest, -2013)
		wantErr(t, read("/v1/order"), http.StatusBadRequest, -1102)
	})

	t.Run("all orders, oldest first, market order included", func(t *testing.T) {
		eventuallyNoMismatch(t, 30*time.Second, "both orders in GET /v1/allOrders", func() string {
			all := list("/v1/allOrders", "symbol", "BTCUSD")
			if len(all) != 2 {
				return asJSON(all)
			}
			m, p := all[0], all[1]
			if wantInt(t, "orderId", m["orderId"]) != opened.Order || str(m, "type") != "MARKET" || str(m, "status") != "FILLED" ||
				wantInt(t, "orderId", p["orderId"]) != placed.Order || str(p, "status") != "NEW" ||
				wantInt(t, "time", m["time"]) > wantInt(t, "time", p["time"]) {
				return asJSON(all)
			}
			return ""
		})
		if n := len(list("/v1/allOrders", "orderId", itoa(placed.Order))); n != 1 {
			t.Errorf("allOrders from the limit order's id: %d orders", n)
		}
		wantErr(t, read("/v1/allOrders", "startTime", itoa(nowMs()-8*86_400_000)), http.StatusBadRequest, -1127)
	})

	t.Run("closing deal in userTrades", func(t *testing.T) {
		closed, err := port.Send(ctx, mt5.TradeRequest{Login: loginReal1, Action: mt5.ActionDeal, Symbol: "BTCUSD",
			Type: trading.OrderSell, Position: opened.Position, Comment: "e2e close"})
		if err != nil || closed.Retcode != trading.RetDone {
			t.Fatalf("close: %+v %v", closed, err)
		}
		eventuallyNoMismatch(t, 30*time.Second, "the position gone from GET /v1/positions", func() string {
			for _, p := range list("/v1/positions") {
				if wantInt(t, "positionId", p["positionId"]) == opened.Position {
					return "still open"
				}
			}
			return ""
		})
		var deal map[string]json.RawMessage
		eventuallyNoMismatch(t, 30*time.Second, "the closing deal in GET /v1/userTrades", func() string {
			deals := list("/v1/userTrades", "symbol", "BTCUSD")
			for _, d := range deals {
				if wantInt(t, "positionId", d["positionId"]) == opened.Position {
					deal = d
					return ""
				}
			}
			return asJSON(deals)
		})
		if wantInt(t, "dealId", deal["dealId"]) != closed.Deal || str(deal, "entry") != "OUT" || str(deal, "side") != "SELL" ||
			str(deal, "volume") != "0.03" || str(deal, "comment") != "e2e close" || wantInt(t, "login", deal["login"]) != loginReal1 {
			t.Errorf("deal %s", asJSON(deal))
		}
		wantDecimal(t, "price", deal["price"], 2)
		wantDecimal(t, "profit", deal["profit"], 4)
		wantDecimal(t, "commission", deal["commission"], 4)
		// The opening deal is not returned (closing deals only), even from its own id.
		for _, d := range list("/v1/userTrades", "fromId", itoa(opened.Deal)) {
			if wantInt(t, "dealId", d["dealId"]) == opened.Deal {
				t.Errorf("opening deal listed: %s", asJSON(d))
			}
		}
	})
}
