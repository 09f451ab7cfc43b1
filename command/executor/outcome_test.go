package executor

import (
	"testing"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// The in-band answer table of docs/trading.md, row by row and kind by kind.
func TestAnswerStatusFollowsTheInBandAnswerTable(t *testing.T) {
	type row struct {
		kind   trading.Kind
		market bool
		ret    trading.Retcode
		resend bool
		status trading.Status
		code   events.Code
	}
	rows := []row{
		// 10009 done
		{trading.KindPlaceOrder, true, trading.RetDone, false, trading.StatusFilled, 0},
		{trading.KindClosePosition, false, trading.RetDone, false, trading.StatusFilled, 0},
		{trading.KindModifyPosition, false, trading.RetDone, false, trading.StatusFilled, 0},
		{trading.KindModifyOrder, false, trading.RetDone, false, trading.StatusNew, 0},
		{trading.KindCancelOrder, false, trading.RetDone, false, trading.StatusCanceled, 0},
		// 10010 partial, 10008 placed
		{trading.KindPlaceOrder, true, trading.RetDonePartial, false, trading.StatusPartiallyFilled, 0},
		{trading.KindClosePosition, false, trading.RetDonePartial, false, trading.StatusPartiallyFilled, 0},
		{trading.KindPlaceOrder, false, trading.RetPlaced, false, trading.StatusNew, 0},
		// 10012 timeout
		{trading.KindPlaceOrder, true, trading.RetTimeout, false, trading.StatusInDoubt, events.CodeServerTimeout},
		{trading.KindCancelOrder, false, trading.RetTimeout, false, trading.StatusInDoubt, events.CodeServerTimeout},
		// any other: REJECTED with the mapped code
		{trading.KindPlaceOrder, true, trading.RetTradeDisabled, false, trading.StatusRejected, events.CodeSymbolTradeDisabled},
		{trading.KindPlaceOrder, true, trading.RetRequote, false, trading.StatusRejected, events.CodeRequote},
		{trading.KindPlaceOrder, false, trading.RetLimitVolume, false, trading.StatusRejected, events.CodeVolumeLimit},
		{trading.KindClosePosition, false, trading.RetPositionClosed, false, trading.StatusRejected, events.CodePositionClosed},
		{trading.KindModifyOrder, false, trading.RetNoChanges, false, trading.StatusRejected, events.CodeNoChanges},
		{trading.KindModifyPosition, false, trading.RetNoChanges, false, trading.StatusRejected, events.CodeNoChanges},
		{trading.KindCancelOrder, false, trading.RetOrderChanged, false, trading.StatusRejected, events.CodeOrderChanged},
		{trading.KindPlaceOrder, true, trading.Retcode(10001), false, trading.StatusRejected, events.CodeServerRejected},
		// a resend after a crash: "nothing left to do" means the first send was applied
		{trading.KindModifyOrder, false, trading.RetNoChanges, true, trading.StatusNew, 0},
		{trading.KindModifyPosition, false, trading.RetNoChanges, true, trading.StatusFilled, 0},
		{trading.KindCancelOrder, false, trading.RetPositionClosed, true, trading.StatusCanceled, 0},
		{trading.KindCancelOrder, false, trading.RetOrderChanged, true, trading.StatusCanceled, 0},
		{trading.KindModifyOrder, false, trading.RetDone, true, trading.StatusNew, 0},
		// ... and only those answers: other refusals stay refusals
		{trading.KindModifyOrder, false, trading.RetInvalidPrice, true, trading.StatusRejected, events.CodeInvalidPrice},
		{trading.KindCancelOrder, false, trading.RetNoChanges, true, trading.StatusRejected, events.CodeNoChanges},
		{trading.KindModifyPosition, false, trading.RetPositionClosed, true, trading.StatusRejected, events.CodePositionClosed},
	}
	for _, r := range rows {
		typ := ""
		if r.kind == trading.KindPlaceOrder {
			typ = "BUY_LIMIT"
			if r.market {
				typ = "MARKET"
			}
		}
		status, code := answerStatus(&operation{kind: r.kind, typ: typ}, r.ret, r.resend)
		if status != r.status || code != r.code {
			t.Errorf("%s market=%v %d resend=%v: %s %d, want %s %d", r.kind, r.market, r.ret, r.resend, status, code, r.status, r.code)
		}
	}
	// Every refusal the trade server can answer maps to the code events.CodeForRetcode gives.
	for _, ret := range trading.AllRetcodes() {
		if ret.Success() || ret == trading.RetTimeout {
			continue
		}
		status, code := answerStatus(&operation{kind: trading.KindPlaceOrder, typ: "MARKET"}, ret, false)
		if status != trading.StatusRejected || code != events.CodeForRetcode(int(ret)) || code == 0 {
			t.Errorf("%d: %s %d, want REJECTED %d", ret, status, code, events.CodeForRetcode(int(ret)))
		}
	}
}

// An in-band answer always carries its retcode, and the answer's tickets, price and volume.
func TestAnsweredOutcomeCarriesTheAnswer(t *testing.T) {
	o := &operation{op: events.Operation{OperationID: "op1", Login: 1001, Tag: "#abc123", Attempt: 2},
		kind: trading.KindPlaceOrder, typ: "MARKET"}
	res := mt5.TradeResult{Retcode: trading.RetDone, Order: 7, Deal: 9, Position: 7, Price: mustDec("1.10012"), Volume: mustDec("0.10")}
	out := answered(o, res, false, 1234)
	if out.OperationID != "op1" || out.Login != 1001 || out.Tag != "#abc123" || out.Attempt != 2 || out.DecidedAt != 1234 ||
		out.Status != string(trading.StatusFilled) || out.Code != 0 || out.Retcode != 10009 || out.OrderID != 7 || out.DealID != 9 ||
		out.Position != 7 || out.Price == nil || out.Price.String() != "1.10012" || out.Volume == nil || out.Volume.String() != "0.10" ||
		out.Unanswered || out.Reconciled || out.Msg == "" {
		t.Fatalf("outcome %+v", out)
	}
	out = answered(o, mt5.TradeResult{Retcode: trading.RetTradeDisabled}, false, 1)
	if out.Status != string(trading.StatusRejected) || out.Code != int(events.CodeSymbolTradeDisabled) || out.Retcode != 10017 ||
		out.Price != nil || out.Volume != nil || out.Msg == "" {
		t.Fatalf("refusal %+v", out)
	}
}

// Without an answer and without evidence the operation keeps its kind's queued status.
func TestUnansweredKeepsTheQueuedStatus(t *testing.T) {
	for _, c := range []struct {
		kind trading.Kind
		typ  string
		want trading.Status
	}{
		{trading.KindPlaceOrder, "MARKET", trading.StatusAccepted},
		{trading.KindPlaceOrder, "BUY_LIMIT", trading.StatusNew},
		{trading.KindModifyOrder, "BUY_LIMIT", trading.StatusNew},
		{trading.KindCancelOrder, "BUY_LIMIT", trading.StatusAccepted},
		{trading.KindClosePosition, "", trading.StatusAccepted},
		{trading.KindModifyPosition, "", trading.StatusAccepted},
	} {
		out := unanswered(&operation{kind: c.kind, typ: c.typ}, 1)
		if out.Status != string(c.want) || !out.Unanswered || out.Code != 0 || out.Retcode != 0 {
			t.Errorf("%s %s: %+v, want %s unanswered", c.kind, c.typ, out, c.want)
		}
	}
}
