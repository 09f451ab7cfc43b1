package trading

import (
	"testing"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
)

func dp(s string) *apd.Decimal {
	d := dec.MustParse(s)
	return &d
}

// fills sums deals given as volume/price pairs, the first deal being ticket 500.
func fills(pairs ...string) Fills {
	var f Fills
	for i := 0; i+1 < len(pairs); i += 2 {
		v, p := dec.MustParse(pairs[i]), dec.MustParse(pairs[i+1])
		if f.Count == 0 {
			f.FirstPrice, f.DealID, f.OrderID, f.PositionID = p, 500, 400, 400
		}
		f.Count++
		f.Volume = dec.Add(f.Volume, v)
		f.VolumePrice = dec.Add(f.VolumePrice, dec.Mul(v, p))
		f.LastTime = 1000 * int64(f.Count)
	}
	return f
}

func market(vol string) Inputs {
	return Inputs{Kind: KindPlaceOrder, Type: "MARKET", Volume: dp(vol), Attempt: 1, RequestedAt: 10,
		Digits: 5, DigitsOK: true}
}

func pending(vol string) Inputs {
	in := market(vol)
	in.Type = "BUY_LIMIT"
	return in
}

func decStr(d *apd.Decimal) string {
	if d == nil {
		return "<nil>"
	}
	return dec.String(*d)
}

func TestDeriveMarketOrderStates(t *testing.T) {
	cases := []struct {
		name                 string
		in                   Inputs
		status               Status
		code, retcode        int
		orderID, dealID      int64
		executed, price      string
		wantUpdatedAtAtLeast int64
	}{
		{name: "queued market order is ACCEPTED", in: market("1"), status: "ACCEPTED", executed: "<nil>", price: "<nil>"},
		{name: "in-band 10009 answer fills it",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "FILLED", Retcode: 10009, OrderID: 7, DealID: 8, PositionID: 7,
					Price: dp("1.10005"), Volume: dp("1"), DecidedAt: 50}
				return in
			}(), status: "FILLED", retcode: 10009, orderID: 7, dealID: 8, executed: "1", price: "1.10005", wantUpdatedAtAtLeast: 50},
		{name: "one deal of two is PARTIALLY_FILLED at its exact price",
			in:     func() Inputs { in := market("1"); in.Fills = fills("0.4", "1.10001"); return in }(),
			status: "PARTIALLY_FILLED", orderID: 400, dealID: 500, executed: "0.4", price: "1.10001"},
		{name: "deals reaching the volume fill it at the volume-weighted price rounded to digits+2",
			in:     func() Inputs { in := market("1"); in.Fills = fills("0.4", "1.10001", "0.6", "1.10002"); return in }(),
			status: "FILLED", orderID: 400, dealID: 500, executed: "1.0", price: "1.1000160"},
		{name: "an in-band FILLED answer stands while its deals are still arriving",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "FILLED", Retcode: 10009, OrderID: 7, DealID: 8, Price: dp("1.1"), Volume: dp("1")}
				in.Fills = fills("0.4", "1.10001")
				return in
			}(), status: "FILLED", retcode: 10009, orderID: 7, dealID: 8, executed: "1", price: "1.1"},
		{name: "a server refusal is REJECTED with its code and retcode",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "REJECTED", Code: -2018, Retcode: 10019}
				return in
			}(), status: "REJECTED", code: -2018, retcode: 10019, executed: "<nil>", price: "<nil>"},
		{name: "IN_DOUBT carries its code",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "IN_DOUBT", Code: -5008, Retcode: 10012}
				return in
			}(), status: "IN_DOUBT", code: -5008, retcode: 10012, executed: "<nil>", price: "<nil>"},
		{name: "a deal settles IN_DOUBT to FILLED and clears the code",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "IN_DOUBT", Code: -5009}
				in.Fills = fills("1", "1.2")
				return in
			}(), status: "FILLED", orderID: 400, dealID: 500, executed: "1", price: "1.2"},
		{name: "REJECTED -1000 holds for its own attempt",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "REJECTED", Code: -1000}
				return in
			}(), status: "REJECTED", code: -1000, executed: "<nil>", price: "<nil>"},
		{name: "a new attempt resets the older attempt's REJECTED -1000",
			in: func() Inputs {
				in := market("1")
				in.Attempt = 2
				in.Out = &Outcome{Attempt: 1, Status: "REJECTED", Code: -1000}
				return in
			}(), status: "ACCEPTED", executed: "<nil>", price: "<nil>"},
		{name: "a late fill of a REJECTED -1000 operation still lands",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "REJECTED", Code: -1000}
				in.Fills = fills("1", "1.3")
				return in
			}(), status: "FILLED", orderID: 400, dealID: 500, executed: "1", price: "1.3"},
		{name: "an Unanswered outcome leaves the queued status",
			in: func() Inputs {
				in := market("1")
				in.Out = &Outcome{Attempt: 1, Status: "ACCEPTED", Unanswered: true}
				return in
			}(), status: "ACCEPTED", executed: "<nil>", price: "<nil>"},
		{name: "an outcome before its command (no kind yet) shows the outcome",
			in:     Inputs{Out: &Outcome{Attempt: 1, Status: "FILLED", Retcode: 10009, OrderID: 3, Volume: dp("1"), Price: dp("2")}},
			status: "FILLED", retcode: 10009, orderID: 3, executed: "<nil>", price: "<nil>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Derive(c.in)
			if d.Status != c.status || d.Code != c.code || d.Retcode != c.retcode || d.OrderID != c.orderID ||
				d.DealID != c.dealID || decStr(d.ExecutedVolume) != c.executed || decStr(d.ExecPrice) != c.price {
				t.Fatalf("derived %+v (executed %s, price %s); want status %s code %d retcode %d order %d deal %d executed %s price %s",
					d, decStr(d.ExecutedVolume), decStr(d.ExecPrice), c.status, c.code, c.retcode, c.orderID, c.dealID, c.executed, c.price)
			}
			if d.UpdatedAt < c.wantUpdatedAtAtLeast || d.UpdatedAt < c.in.RequestedAt {
				t.Fatalf("updatedAt %d", d.UpdatedAt)
			}
		})
	}
}

func TestDerivePendingPlacementFollowsItsOrderOnlyWhenTheOutcomeNamedIt(t *testing.T) {
	placed := func(o *PendingOrder) Inputs {
		in := pending("1")
		in.Out = &Outcome{Attempt: 1, Status: "NEW", Retcode: 10008, OrderID: 9, Price: dp("1.05"), Volume: dp("1")}
		in.Order = o
		return in
	}
	for _, c := range []struct {
		name   string
		in     Inputs
		status Status
	}{
		{"queued pending placement is NEW", pending("1"), "NEW"},
		{"placed, order not projected yet: NEW", placed(nil), "NEW"},
		{"resting order: NEW", placed(&PendingOrder{Open: true, State: 1}), "NEW"},
		{"partly filled resting order: PARTIALLY_FILLED", placed(&PendingOrder{Open: true, State: 3}), "PARTIALLY_FILLED"},
		{"triggered and filled: FILLED", placed(&PendingOrder{State: 4}), "FILLED"},
		{"canceled: CANCELED", placed(&PendingOrder{State: 2}), "CANCELED"},
		{"expired: EXPIRED", placed(&PendingOrder{State: 6}), "EXPIRED"},
		{"refused: REJECTED", placed(&PendingOrder{State: 5}), "REJECTED"},
		{"Unanswered (shortfall): stays NEW whatever its order does", func() Inputs {
			in := pending("1")
			in.Out = &Outcome{Attempt: 1, Status: "NEW", Unanswered: true}
			in.Order = &PendingOrder{State: 2}
			return in
		}(), "NEW"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Derive(c.in)
			if d.Status != c.status {
				t.Fatalf("status %s, want %s (%+v)", d.Status, c.status, d)
			}
			if d.ExecutedVolume != nil {
				t.Fatalf("a placement's answer is no execution: executed %s", decStr(d.ExecutedVolume))
			}
		})
	}
	// A resting order's answer names it; an Unanswered one does not.
	if d := Derive(placed(&PendingOrder{Open: true, State: 1})); d.OrderID != 9 || d.Retcode != 10008 {
		t.Fatalf("placed: %+v", d)
	}
}

func TestDeriveFullCloseIsFilledWhenThePositionClosesOrTheAnswerSaysSo(t *testing.T) {
	closeOp := func() Inputs {
		return Inputs{Kind: KindClosePosition, Attempt: 1, Fills: fills("0.5", "100.1")}
	}
	if d := Derive(closeOp()); d.Status != "PARTIALLY_FILLED" {
		t.Fatalf("deal of an open position: %s", d.Status)
	}
	in := closeOp()
	in.PositionClosed = true
	if d := Derive(in); d.Status != "FILLED" || decStr(d.ExecutedVolume) != "0.5" {
		t.Fatalf("position closed: %+v", d)
	}
	in = closeOp()
	in.Out = &Outcome{Attempt: 1, Status: "FILLED", Retcode: 10009, Volume: dp("0.5")}
	if d := Derive(in); d.Status != "FILLED" || d.Retcode != 10009 {
		t.Fatalf("answered FILLED: %+v", d)
	}
	// A partial close names its volume: it is FILLED when the deals reach it.
	in = closeOp()
	in.Volume = dp("0.5")
	if d := Derive(in); d.Status != "FILLED" {
		t.Fatalf("partial close of 0.5: %s", d.Status)
	}
}

func TestDeriveAveragesAtTheDealsOwnPrecisionWhenTheSymbolIsUnknown(t *testing.T) {
	in := market("3")
	in.DigitsOK = false
	in.Fills = fills("1", "10.1", "2", "10.2")
	// (10.1 + 20.4) / 3 = 10.1666...: 1 place of its own + 2.
	if d := Derive(in); decStr(d.ExecPrice) != "10.167" {
		t.Fatalf("price %s", decStr(d.ExecPrice))
	}
}

func TestVisibleChangeIgnoresMessageAndScaleOnly(t *testing.T) {
	a := Derived{Status: "FILLED", ExecutedVolume: dp("1.0")}
	b := Derived{Status: "FILLED", ExecutedVolume: dp("1"), Msg: "x"}
	if VisibleChange(a, b) {
		t.Fatal("1.0 and 1 are the same executed volume")
	}
	if !AnyChange(a, b) {
		t.Fatal("msg changed")
	}
	if !VisibleChange(a, Derived{Status: "FILLED", ExecutedVolume: dp("1"), Retcode: 10009}) {
		t.Fatal("retcode changed")
	}
}

func TestTagOfReadsOnlyAWellFormedTrailingTag(t *testing.T) {
	for comment, want := range map[string]string{
		"my order#Ab3xZ9": "#Ab3xZ9",
		"#Ab3xZ9":         "#Ab3xZ9",
		"Ab3xZ9":          "",
		"x#Ab3x-9":        "",
		"":                "",
		"sl 1.2":          "",
	} {
		if got := TagOf(comment); got != want {
			t.Errorf("TagOf(%q) = %q, want %q", comment, got, want)
		}
	}
}
