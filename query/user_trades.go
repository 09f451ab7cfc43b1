package query

import (
	"context"
	"fmt"
	"tradesvc/events/trading"
)

// DealHistoryReader reads the deal history (ClickHouse).
type DealHistoryReader interface {
	// UserTrades returns the login's closing trading deals of window w, ordered by deal id.
	UserTrades(ctx context.Context, login int64, w TradesWindow) ([]trading.Deal, error)
}

// UserTradesHandler answers GET /v1/userTrades.
type UserTradesHandler struct{ withSymbols[DealHistoryReader] }

// Handle returns the deal records ordered by deal id. fromId overrides the time window
// entirely (no window rule applies then); otherwise the window rules of HistoryWindow do.
func (h UserTradesHandler) Handle(ctx context.Context, q HistoryQuery) ([]DealRecord, error) {
	if err := h.knownSymbol(ctx, q.Symbol); err != nil {
		return nil, err
	}
	w := TradesWindow{Symbol: q.Symbol, FromID: q.FromID, Limit: q.limit()}
	if q.FromID == nil {
		var err error
		if w.From, w.To, err = HistoryWindow(q.StartTime, q.EndTime, q.Now); err != nil {
			return nil, err
		}
	}
	deals, err := h.read.UserTrades(ctx, q.Login, w)
	if err != nil {
		return nil, fmt.Errorf("read deals of %d: %w", q.Login, err)
	}
	return renderWithSpecs(ctx, h.symbols, deals, func(d trading.Deal) string { return d.Symbol }, toDealRecord)
}

// toDealRecord formats prices at the symbol's digits, volumes at its volume step's precision
// and money at 4 places.
func toDealRecord(d trading.Deal, s symbolSpec) DealRecord {
	sd, vp := s.digits(), volumePlaces(s.SymbolSpec, s.ok)
	return DealRecord{Login: d.Login, DealID: d.DealID, OrderID: d.OrderID, PositionID: d.PositionID,
		Symbol: d.Symbol, Side: d.Action.Side().String(), Entry: d.Entry.String(), Volume: volumeAt(d.Volume, vp),
		Price: sd.price(d.Price), Profit: money(d.Profit), Commission: money(d.Commission), Swap: money(d.Swap),
		Comment: d.Comment, Time: d.Time}
}
