package mt5

import "tradesvc/events"

// Event is the fact as the event catalogue carries it (DealAdded_v1, OrderChanged_v1,
// PositionChanged_v1, AccountChanged_v1), raw platform integers beside their names; ok is
// false for a fact kind this build does not know.
func (f Fact) Event() (events.Event, bool) {
	switch {
	case f.Kind == FactDeal && f.Deal != nil:
		d := f.Deal
		return &events.DealAdded{Fact: events.Fact{Seq: f.Seq, Login: d.Login}, DealID: d.Ticket, OrderID: d.Order,
			PositionID: d.Position, Symbol: d.Symbol, Action: int(d.Action), Entry: int(d.Entry), Volume: d.Volume, Price: d.Price,
			Profit: d.Profit, Commission: d.Commission, Swap: d.Swap, Comment: d.Comment, Time: d.Time,
			Reason: int(d.Reason)}, true
	case f.Kind == FactOrder && f.Order != nil:
		o := f.Order
		return &events.OrderChanged{Fact: events.Fact{Seq: f.Seq, Login: o.Login}, Change: f.Action.String(),
			OrderID: o.Ticket, PositionID: o.PositionID, Symbol: o.Symbol, Type: int(o.Type), State: int(o.State),
			VolumeInitial: o.VolumeInitial, VolumeCurrent: o.VolumeCurrent, Price: o.Price, StopLimitPrice: o.StopLimit,
			SL: o.SL, TP: o.TP, TypeTime: int(o.TypeTime), Expiration: o.Expiration, Comment: o.Comment,
			TimeSetup: o.TimeSetup, TimeDone: o.TimeDone, Time: f.Time}, true
	case f.Kind == FactPosition && f.Position != nil:
		p := f.Position
		return &events.PositionChanged{Fact: events.Fact{Seq: f.Seq, Login: p.Login}, Change: f.Action.String(),
			PositionID: p.Ticket, Symbol: p.Symbol, Direction: int(p.Type), Volume: p.Volume, PriceOpen: p.PriceOpen, SL: p.SL, TP: p.TP,
			Profit: p.Profit, Swap: p.Swap, Comment: p.Comment, TimeOpen: p.TimeCreate, Time: f.Time}, true
	case f.Kind == FactAccount && f.Account != nil:
		a := f.Account
		return &events.AccountChanged{Fact: events.Fact{Seq: f.Seq, Login: a.Login}, Change: f.Action.String(),
			Balance: a.Balance, Credit: a.Credit, Time: f.Time}, true
	}
	return nil, false
}

// Header is the account's identity and trading settings as the events and the admin API
// carry them.
func (a *Account) Header() events.AccountHeader {
	return events.AccountHeader{Login: a.Login, Group: a.Group, Currency: a.Currency, Leverage: a.Leverage,
		Demo: a.Demo, TradeAllowed: a.TradeAllowed}
}
