package executor

import (
	"testing"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/query"
)

// The in-band answer table of docs/trading.md, row by row and kind by kind.
func TestAnswerStatusFollowsTheInBandAnswerTable(t *testing.T) {
	type row struct {
		kind   string
		market bool
		ret    trading.Retcode
		resend bool
		status string
		code   events.Code
	}
	rows := []row{
		// 10009 done
		{query.KindPlaceOrder, true, trading.RetDone, false, events.StatusFilled, 0},
		{query.KindClosePosition, false, trading.RetDone, false, events.StatusFilled, 0},
		{query.KindModifyPosition, false, trading.RetDone, false, events.StatusFilled, 0},
		{query.KindModifyOrder, false, trading.RetDone, false, events.StatusNew, 0},
		{query.KindCancelOrder, false, trading.RetDone, false, events.StatusCanceled, 0},
		// 10010 partial, 10008 placed
		{query.KindPlaceOrder, true, trading.RetDonePartial, false, events.StatusPartiallyFilled, 0},
		{query.KindClosePosition, false, trading.RetDonePartial, false, events.StatusPartiallyFilled, 0},
		{query.KindPlaceOrder, false, trading.RetPlaced, false, events.StatusNew, 0},
		// 10012 timeout
		{query.KindPlaceOrder, true, trading.RetTimeout, false, events.StatusInDoubt, events.CodeServerTimeout},
		{query.KindCancelOrder, false, trading.RetTimeout, false, events.StatusInDoubt, events.CodeServerTimeout},
		// any other: REJECTED with the mapped code
		{query.KindPlaceOrder, true, trading.RetTradeDisabled, false, events.StatusRejected, events.CodeSymbolTradeDisabled},
		{query.KindPlaceOrder, true, trading.RetRequote, false, events.StatusRejected, events.CodeRequote},
		{query.KindPlaceOrder, false, trading.RetLimitVolume, false, events.StatusRejected, events.CodeVolumeLimit},
		{query.KindClosePosition, false, trading.RetPositionClosed, false, events.StatusRejected, events.CodePositionClosed},
		{query.KindModifyOrder, false, trading.RetNoChanges, false, events.StatusRejected, events.CodeNoChanges},
		{query.KindModifyPosition, false, trading.RetNoChanges, false, events.StatusRejected, events.CodeNoChanges},
		{query.KindCancelOrder, false, trading.RetOrderChanged, false, events.StatusRejected, events.CodeOrderChanged},
		{query.KindPlaceOrder, true, trading.Retcode(10001), false, events.StatusRejected, events.CodeServerRejected},
		// a resend after a crash: "nothing left to do" means the first send was applied
		{query.KindModifyOrder, false, trading.RetNoChanges, true, events.StatusNew, 0},
		{query.KindModifyPosition, false, trading.RetNoChanges, true, events.StatusFilled, 0},
		{query.KindCancelOrder, false, trading.RetPositionClosed, true, events.StatusCanceled, 0},
		{query.KindCancelOrder, false, trading.RetOrderChanged, true, events.StatusCanceled, 0},
		{query.KindModifyOrder, false, trading.RetDone, true, events.StatusNew, 0},
		// ... and only those answers: other refusals stay refusals
		{query.KindModifyOrder, false, trading.RetInvalidPrice, true, events.StatusRejected, events.CodeInvalidPrice},
		{query.KindCancelOrder, false, trading.RetNoChanges, true, events.StatusRejected, events.CodeNoChanges},
		{query.KindModifyPosition, false, trading.RetPositionClosed, true, events.StatusRejected, events.CodePositionClosed},
	}
	for _, r := range rows {
		status, code := answerStatus(r.kind, r.market, r.ret, r.resend)
		if status != r.status || code != r.code {
			t.Errorf("%s market=%v %d resend=%v: %s %d, want %s %d", r.kind, r.market, r.ret, r.resend, status, code, r.status, r.code)
		}
	}
	// Every refusal the trade server can answer maps to the code events.CodeForRetcode gives.
	for _, ret := range trading.AllRetcodes() {
		if ret.Success() || ret == trading.RetTimeout {
			continue
		}
		status, code := answerStatus(query.KindPlaceOrder, true, ret, false)
		if status != events.StatusRejected || code != events.CodeForRetcode(int(ret)) || code == 0 {
			t.Errorf("%d: %s %d, want REJECTED %d", ret, status, code, events.CodeForRetcode(int(ret)))
		}
	}
}

// An in-band answer always carries its retcode, and the answer's tickets, price and volume.
func TestAnsweredOutcomeCarriesTheAnswer(t *testing.T) {
	o := &operation{op: events.Operation{OperationID: "op1", Login: 1001, Tag: "#abc123", Attempt: 2},
		kind: query.KindPlaceOrder, market: true}
	res := mt5.TradeResult{Retcode: trading.RetDone, Order: 7, Deal: 9, Position: 7, Price: mustDec("1.10012"), Volume: mustDec("0.10")}
	out := answered(o, res, false, 1234)
	if out.OperationID != "op1" || out.Login != 1001 || out.Tag != "#abc123" || out.Attempt != 2 || out.DecidedAt != 1234 ||
		out.Status != events.StatusFilled || out.Code != 0 || out.Retcode != 10009 || out.OrderID != 7 || out.DealID != 9 ||
		out.Position != 7 || out.Price == nil || out.Price.String() != "1.10012" || out.Volume == nil || out.Volume.String() != "0.10" ||
		out.Unanswered || out.Reconciled || out.Msg == "" {
		t.Fatalf("outcome %+v", out)
	}
	out = answered(o, mt5.TradeResult{Retcode: trading.RetTradeDisabled}, false, 1)
	if out.Status != events.StatusRejected || out.Code != int(events.CodeSymbolTradeDisabled) || out.Retcode != 10017 ||
		out.Price != nil || out.Volume != nil || out.Msg == "" {
		t.Fatalf("refusal %+v", out)
	}
}

// Without an answer and without evidence the operation keeps its kind's queued status.
func TestUnansweredKeepsTheQueuedStatus(t *testing.T) {
	for _, c := range []struct {
		kind   string
		market bool
		want   string
	}{
		{query.KindPlaceOrder, true, events.StatusAccepted},
		{query.KindPlaceOrder, false, events.StatusNew},
		{query.KindModifyOrder, false, events.StatusNew},
		{query.KindCancelOrder, false, events.StatusAccepted},
		{query.KindClosePosition, false, events.StatusAccepted},
		{query.KindModifyPosition, false, events.StatusAccepted},
	} {
		out := unanswered(&operation{kind: c.kind, market: c.market}, 1)
		if out.Status != c.want || !out.Unanswered || out.Code != 0 || out.Retcode != 0 {
			t.Errorf("%s market=%v: %+v, want %s unanswered", c.kind, c.market, out, c.want)
		}
	}
}
