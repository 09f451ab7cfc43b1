package relay

import (
	"fmt"

	"tradesvc/events"
	"tradesvc/infra/mt5"

	"github.com/cockroachdb/apd/v3"
)

// Conversions from the trade-server port to the event catalogue. Enumerations of reference
// data leave here as the spec's names; trade facts keep the raw platform integers.

func hhmm(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

func symbolEvent(s mt5.Symbol, now int64) *events.SymbolSpecified {
	e := &events.SymbolSpecified{Time: now, SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{
		Symbol: s.Name, Description: s.Description, Digits: int32(s.Digits),
		TickSize: s.TickSize, TickValue: s.TickValue, ContractSize: s.ContractSize,
		VolumeMin: s.VolumeMin, VolumeMax: s.VolumeMax, VolumeStep: s.VolumeStep,
		StopsLevel: int32(s.StopsLevel), FreezeLevel: int32(s.FreezeLevel),
		TradeMode: s.TradeMode.String(), ExecutionMode: s.ExecutionMode.String(),
		FillModes: s.FillFlags.Names(), ExpirationModes: s.ExpirationModes.Names(), OrderModes: s.OrderModes.Names(),
		CurrencyBase: s.CurrencyBase, CurrencyProfit: s.CurrencyProfit, CurrencyMargin: s.CurrencyMargin,
		SwapMode: s.SwapMode.String(), SwapLong: s.SwapLong, SwapShort: s.SwapShort, Swap3Days: s.Swap3Days.String(),
	}}
	for day, sessions := range s.Sessions {
		e.Sessions[day] = []events.Session{}
		for _, ss := range sessions {
			e.Sessions[day] = append(e.Sessions[day], events.Session{Open: hhmm(ss.Open), Close: hhmm(ss.Close)})
		}
	}
	return e
}

func accountEvent(a mt5.Account) *events.AccountSnapshot {
	return &events.AccountSnapshot{
		AccountHeader: a.Header(), Active: true, Balance: a.Balance, Credit: a.Credit, Equity: a.Equity,
		Margin: a.Margin, FreeMargin: a.MarginFree, Profit: a.Profit, MarginLevel: a.MarginLevel, Time: a.UpdateTime,
	}
}

func tickEvent(t mt5.Tick) *events.TickReceived {
	return &events.TickReceived{Seq: t.Seq, Symbol: t.Symbol, Bid: t.Bid, Ask: t.Ask, Last: t.Last,
		Volume: t.Volume, BidDirection: t.BidDirection, AskDirection: t.AskDirection, Time: t.Time, Held: t.Held}
}

func dayStatsEvent(d mt5.DayStats) *events.DayStatsUpdated {
	return &events.DayStatsUpdated{Symbol: d.Symbol, OpenPrice: d.Open, HighPrice: d.High, LowPrice: d.Low,
		LastPrice: d.Last, BidPrice: d.Bid, AskPrice: d.Ask, BidHigh: d.BidHigh, BidLow: d.BidLow,
		AskHigh: d.AskHigh, AskLow: d.AskLow, PriceChange: d.PriceChange, PriceChangePercent: d.PriceChangePercent,
		Volatility: d.Volatility, TradeDeals: d.Deals, Volume: d.Volume, BuyOrders: d.BuyOrders,
		SellOrders: d.SellOrders, Time: d.Time}
}
