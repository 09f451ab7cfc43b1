package query

import (
	"context"
	"errors"
	"fmt"
	"tradesvc/events/trading"
)

// DealHistoryReader reads the deal history (ClickHouse).
type DealHistoryReader interface {
	// UserTrades returns the login's closing trading deals of window w, ordered by deal id.
	UserTrades(ctx context.Context, login int64, w TradesWindow) ([]trading.Deal, error)
}

// UserTradesQuery asks for the deals of Login. StartTime, EndTime and FromID are nil when not
// sent; Limit 0 means the default; Now is the server time the window defaults to.
type UserTradesQuery struct {
	Login     int64
	Symbol    string
	StartTime *int64
	EndTime   *int64
	FromID    *int64
	Limit     int
	Now       int64
}

// UserTradesHandler answers GET /v1/userTrades.
type UserTradesHandler struct {
	deals   DealHistoryReader
	symbols SymbolLookup
}

// NewUserTradesHandler builds the handler.
func NewUserTradesHandler(deals DealHistoryReader, symbols SymbolLookup) (UserTradesHandler, error) {
	if deals == nil || symbols == nil {
		return UserTradesHandler{}, errors.New("query: nil DealHistoryReader or SymbolLookup")
	}
	return UserTradesHandler{deals: deals, symbols: symbols}, nil
}

// Handle returns the deal records ordered by deal id. fromId overrides the time window
// entirely (no window rule applies then); otherwise the window rules of HistoryWindow do.
// Prices are at the symbol's digits, volumes at its volume step's precision, money at 4
// places.
func (h UserTradesHandler) Handle(ctx context.Context, q UserTradesQuery) ([]DealRecord, error) {
	if q.Symbol != "" {
		if _, err := lookupSymbol(ctx, h.symbols, q.Symbol); err != nil {
			return nil, err
		}
	}
	w := TradesWindow{Symbol: q.Symbol, FromID: q.FromID, Limit: q.Limit}
	if w.Limit <= 0 {
		w.Limit = HistoryDefaultLimit
	}
	if q.FromID == nil {
		var err error
		if w.From, w.To, err = HistoryWindow(q.StartTime, q.EndTime, q.Now); err != nil {
			return nil, err
		}
	}
	deals, err := h.deals.UserTrades(ctx, q.Login, w)
	if err != nil {
		return nil, fmt.Errorf("read deals of %d: %w", q.Login, err)
	}
	out := make([]DealRecord, 0, len(deals))
	specs := map[string]*trading.SymbolSpec{}
	for _, d := range deals {
		spec, seen := specs[d.Symbol]
		if !seen {
			s, ok, err := h.symbols.Symbol(ctx, d.Symbol)
			if err != nil {
				return nil, fmt.Errorf("look up symbol %q: %w", d.Symbol, err)
			}
			if ok {
				spec = &s
			}
			specs[d.Symbol] = spec
		}
		sd, vp := symbolDigits{}, int32(-1)
		if spec != nil {
			sd, vp = symbolDigits{digits: spec.Digits, known: true}, volumePlaces(*spec, true)
		}
		out = append(out, DealRecord{Login: d.Login, DealID: d.DealID, OrderID: d.OrderID, PositionID: d.PositionID,
			Symbol: d.Symbol, Side: d.Action.Side().String(), Entry: d.Entry.String(), Volume: volumeAt(d.Volume, vp),
			Price: sd.price(d.Price), Profit: money(d.Profit), Commission: money(d.Commission), Swap: money(d.Swap),
			Comment: d.Comment, Time: d.Time})
	}
	return out, nil
}
