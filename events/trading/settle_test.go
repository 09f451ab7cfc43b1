package trading

import "testing"

// Which operations a same-id retry settles first, and which it sends again as the next
// attempt (docs/trading.md, "Settling what is unknown").
func TestSettlementRules(t *testing.T) {
	cases := []struct {
		name      string
		op        Operation
		unsettled bool
		afresh    bool
	}{
		{"a market order IN_DOUBT after a timeout", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusInDoubt,
			Code: -5008, Decided: true}, true, false},
		{"a close IN_DOUBT after a crash", Operation{Kind: KindClosePosition, Status: StatusInDoubt, Code: -5009, Decided: true}, true, false},
		{"a market order sent without an answer", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusAccepted,
			Decided: true}, true, false},
		{"a market order not decided yet", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusAccepted}, false, false},
		{"a pending placement without an answer follows its facts", Operation{Kind: KindPlaceOrder, Type: "BUY_LIMIT",
			Status: StatusNew, Decided: true}, false, false},
		{"a pending placement IN_DOUBT", Operation{Kind: KindPlaceOrder, Type: "BUY_LIMIT", Status: StatusInDoubt,
			Code: -5008, Decided: true}, true, false},
		{"a modification IN_DOUBT cannot be asked by tag", Operation{Kind: KindModifyOrder, Status: StatusInDoubt,
			Code: -5008, Decided: true}, false, false},
		{"not dispatched in the window", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusRejected,
			Code: -1000, Decided: true}, false, true},
		{"never sent: no connection", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusRejected,
			Code: -5015, Decided: true}, false, true},
		{"the trade server's own 10031 is final", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusRejected,
			Code: -5015, Retcode: 10031, Decided: true}, false, false},
		{"a requote is final", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusRejected, Code: -5001,
			Retcode: 10004, Decided: true}, false, false},
		{"filled", Operation{Kind: KindPlaceOrder, Type: TypeMarket, Status: StatusFilled, Decided: true, Deals: 1}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.op.Unsettled(); got != c.unsettled {
				t.Errorf("Unsettled = %v, want %v", got, c.unsettled)
			}
			if got := c.op.RetriedAfresh(); got != c.afresh {
				t.Errorf("RetriedAfresh = %v, want %v", got, c.afresh)
			}
			if c.afresh && c.op.Kind.Final(&c.op) {
				t.Errorf("Final, yet a retry sends it again")
			}
		})
	}
}
