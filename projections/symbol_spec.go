package projections

import (
	"tradesvc/events"
	"tradesvc/query"
)

// SymbolSpecFromEvent turns the reference event into the symbol read model.
func SymbolSpecFromEvent(e *events.SymbolSpecified) query.SymbolSpec {
	sp := query.SymbolSpec{
		Symbol: e.Symbol, Description: e.Description, Digits: e.Digits,
		TickSize: e.TickSize, TickValue: e.TickValue, ContractSize: e.ContractSize,
		VolumeMin: e.VolumeMin, VolumeMax: e.VolumeMax, VolumeStep: e.VolumeStep,
		StopsLevel: e.StopsLevel, FreezeLevel: e.FreezeLevel,
		TradeMode: query.TradeMode(e.TradeMode), ExecutionMode: query.ExecutionMode(e.ExecutionMode),
		CurrencyBase: e.CurrencyBase, CurrencyProfit: e.CurrencyProfit, CurrencyMargin: e.CurrencyMargin,
		SwapMode: query.SwapMode(e.SwapMode), SwapLong: e.SwapLong, SwapShort: e.SwapShort,
		Swap3Days: query.Weekday(e.Swap3Days),
		Sessions:  make(map[query.Weekday][]query.Session, 7),
	}
	for _, m := range e.FillModes {
		sp.FillModes = append(sp.FillModes, query.FillMode(m))
	}
	for _, m := range e.ExpirationModes {
		sp.ExpirationModes = append(sp.ExpirationModes, query.ExpirationMode(m))
	}
	for _, m := range e.OrderModes {
		sp.OrderModes = append(sp.OrderModes, query.OrderMode(m))
	}
	days := query.Weekdays()
	for day, sessions := range e.Sessions {
		list := make([]query.Session, 0, len(sessions))
		for _, s := range sessions {
			list = append(list, query.Session{Open: s.Open, Close: s.Close})
		}
		sp.Sessions[days[day]] = list
	}
	return sp
}
