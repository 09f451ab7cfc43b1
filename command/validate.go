package command

import (
	"context"
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/query"
)

// Validator checks requests against the symbol specifications and the latest quotes (both
// read from projections), before anything is recorded or queued.
type Validator struct {
	symbols SymbolReader
	quotes  QuoteReader
	// quoteMaxAge is how old a quote may be and still be used for the price checks (-2021,
	// -4009); an older one leaves them to the trade server. A held quote is always fresh.
	quoteMaxAge time.Duration
}

// NewValidator builds a validator; quoteMaxAge 0 means 30 s.
func NewValidator(symbols SymbolReader, quotes QuoteReader, quoteMaxAge time.Duration) (*Validator, error) {
	if symbols == nil || quotes == nil {
		return nil, fmt.Errorf("command: validator needs symbols and quotes")
	}
	if quoteMaxAge <= 0 {
		quoteMaxAge = 30 * time.Second
	}
	return &Validator{symbols: symbols, quotes: quotes, quoteMaxAge: quoteMaxAge}, nil
}

// symbol resolves an exact symbol name or answers -1121.
func (v *Validator) symbol(ctx context.Context, name string) (trading.SymbolSpec, error) {
	spec, ok, err := v.symbols.Symbol(ctx, name)
	if err != nil {
		return spec, fmt.Errorf("look up symbol %q: %w", name, err)
	}
	if !ok || spec.Symbol != name {
		return spec, events.Reject(events.CodeInvalidSymbol, "Invalid symbol.")
	}
	return spec, nil
}

// freshQuote returns the symbol's quote when it may be used for price checks.
func (v *Validator) freshQuote(symbol string, now time.Time) (query.Quote, bool) {
	q, ok := v.quotes.Quote(symbol)
	if !ok {
		return q, false
	}
	return q, q.Held || now.UnixMilli()-q.Time <= v.quoteMaxAge.Milliseconds()
}

// order is a validated new order: the request, the symbol's specification, and the quote it
// was validated against.
type order struct {
	OrderRequest
	spec trading.SymbolSpec
	// QuotedPrice is the price a REQUEST or INSTANT symbol's market order is sent with: the
	// side of the quote the client was shown (the trade server requotes when it moved).
	QuotedPrice *apd.Decimal
	// Quote is the fresh quote the order was validated against (nil: none was fresh).
	Quote *query.Quote
}

// Order checks a decoded order against the symbol (-1121) and its rules (-40xx), then its
// prices against a fresh quote (-2021, -4009).
func (v *Validator) Order(ctx context.Context, r OrderRequest, now time.Time) (order, error) {
	o := order{OrderRequest: r}
	var err error
	if o.spec, err = v.symbol(ctx, r.Symbol); err != nil {
		return o, err
	}
	buy, pending := r.Type.IsBuy(), r.Type.IsPending()
	if err := tradeModeAllows(o.spec, buy, true); err != nil {
		return o, err
	}
	if !trading.AllowsOrderMode(&o.spec, r.Type.Mode()) {
		return o, events.Reject(events.CodeOrderModeNotAllowed, "Order type not allowed for the symbol.")
	}
	if err := stopModesAllow(o.spec, r.SL, r.TP); err != nil {
		return o, err
	}
	if pending && !trading.AllowsExpiration(&o.spec, r.TimeInForce) {
		return o, events.Reject(events.CodeInvalidExpiration, "Time in force not allowed for the symbol.")
	}
	if err := volumeRules(o.spec, r.Volume, true); err != nil {
		return o, err
	}
	for _, pr := range []*apd.Decimal{r.Price, r.StopLimitPrice, r.SL, r.TP} {
		if err := tickRule(o.spec, pr); err != nil {
			return o, err
		}
	}
	q, fresh := v.freshQuote(r.Symbol, now)
	if !fresh {
		return o, nil // the trade server checks the prices (its refusal carries mt5RetCode)
	}
	o.Quote = &q
	if !pending {
		if mode, _ := trading.ParseExecMode(o.spec.ExecutionMode); mode.Requotes() {
			qp := q.Bid
			if buy {
				qp = q.Ask
			}
			o.QuotedPrice = &qp
		}
		ref := q.Ask // the closing side: a buy closes at the bid, a sell at the ask
		if buy {
			ref = q.Bid
		}
		return o, stopsDistance(o.spec, buy, ref, r.SL, r.TP)
	}
	if err := pendingPriceRules(o.spec, r.Type, *r.Price, q); err != nil {
		return o, err
	}
	open := *r.Price
	if r.StopLimitPrice != nil {
		open = *r.StopLimitPrice
	}
	return o, stopsDistance(o.spec, buy, open, r.SL, r.TP)
}

// tradeModeAllows applies the symbol's trade mode to an operation that opens (or not) a
// position on the given side: -4011 disabled, -4015 close only, -4013 long only, -4014 short only.
func tradeModeAllows(spec trading.SymbolSpec, buy, opening bool) error {
	mode, known := trading.ParseTradeMode(spec.TradeMode)
	if !known {
		mode = trading.TradeDisabled
	}
	switch mode {
	case trading.TradeFull:
		return nil
	case trading.TradeDisabled:
		if opening || known {
			return events.Reject(events.CodeSymbolTradeDisabled, "Trading is disabled for the symbol.")
		}
	case trading.TradeCloseOnly:
		if opening {
			return events.Reject(events.CodeCloseOnly, "The symbol is close only.")
		}
	case trading.TradeLongOnly:
		if opening && !buy {
			return events.Reject(events.CodeLongOnly, "The symbol is long only.")
		}
	case trading.TradeShortOnly:
		if opening && buy {
			return events.Reject(events.CodeShortOnly, "The symbol is short only.")
		}
	}
	return nil
}

// stopModesAllow: an sl needs the symbol's SL order mode, a tp its TP mode (-4016).
func stopModesAllow(spec trading.SymbolSpec, sl, tp *apd.Decimal) error {
	if sl != nil && !trading.AllowsOrderMode(&spec, trading.ModeSL) {
		return events.Reject(events.CodeOrderModeNotAllowed, "Stop loss is not allowed for the symbol.")
	}
	if tp != nil && !trading.AllowsOrderMode(&spec, trading.ModeTP) {
		return events.Reject(events.CodeOrderModeNotAllowed, "Take profit is not allowed for the symbol.")
	}
	return nil
}

// volumeRules: below volumeMin -4006, above volumeMax -4005, off volumeStep -4007. A full
// close is never refused for its step (step is false).
func volumeRules(spec trading.SymbolSpec, vol apd.Decimal, step bool) error {
	switch {
	case vol.Cmp(&spec.VolumeMin) < 0:
		return events.Reject(events.CodeVolumeBelowMin, "Volume is below volumeMin "+dec.String(spec.VolumeMin)+".")
	case vol.Cmp(&spec.VolumeMax) > 0:
		return events.Reject(events.CodeVolumeAboveMax, "Volume is above volumeMax "+dec.String(spec.VolumeMax)+".")
	case step && !dec.IsMultiple(vol, spec.VolumeStep):
		return events.Reject(events.CodeVolumeStep, "Volume is not a multiple of volumeStep "+dec.String(spec.VolumeStep)+".")
	}
	return nil
}

// tickRule: a price must be a multiple of the symbol's tick size (-4008).
func tickRule(spec trading.SymbolSpec, price *apd.Decimal) error {
	if price == nil || spec.TickSize.IsZero() || dec.IsMultiple(*price, spec.TickSize) {
		return nil
	}
	return events.Reject(events.CodeTickSize, "Price is not a multiple of tickSize "+dec.String(spec.TickSize)+".")
}

// points is |a-b| in the symbol's points (10^-digits).
func points(spec trading.SymbolSpec, a, b apd.Decimal) apd.Decimal {
	d := dec.Sub(a, b)
	d.Negative = false
	return dec.Mul(d, dec.New(1, spec.Digits))
}

// atLeastStops reports whether a and b are at least the stops level apart.
func atLeastStops(spec trading.SymbolSpec, a, b apd.Decimal) bool {
	p := points(spec, a, b)
	lvl := dec.New(int64(spec.StopsLevel), 0)
	return p.Cmp(&lvl) >= 0
}

// stopsDistance checks sl and tp of a buy or sell against ref: on the protective side of it
// (a buy's sl below, tp above) and at least stopsLevel points away, else -4009.
func stopsDistance(spec trading.SymbolSpec, buy bool, ref apd.Decimal, sl, tp *apd.Decimal) error {
	bad := events.Reject(events.CodeStopsTooClose, "Stops are too close to the market or on the wrong side of it.")
	if sl != nil {
		below := sl.Cmp(&ref) < 0
		if below != buy || !atLeastStops(spec, *sl, ref) {
			return bad
		}
	}
	if tp != nil {
		above := tp.Cmp(&ref) > 0
		if above != buy || !atLeastStops(spec, *tp, ref) {
			return bad
		}
	}
	return nil
}

// pendingPriceRules: a pending price must be on its side of the market (-2021: a buy limit
// below the ask, a sell limit above the bid, a buy stop above the ask, a sell stop below the
// bid) and at least stopsLevel points from it (-4009).
func pendingPriceRules(spec trading.SymbolSpec, typ trading.OrderType, price apd.Decimal, q query.Quote) error {
	ref := q.Bid
	if typ.IsBuy() {
		ref = q.Ask
	}
	c := price.Cmp(&ref)
	var ok bool
	switch typ {
	case trading.OrderBuyLimit:
		ok = c < 0
	case trading.OrderSellLimit:
		ok = c > 0
	case trading.OrderBuyStop, trading.OrderBuyStopLimit:
		ok = c > 0
	case trading.OrderSellStop, trading.OrderSellStopLimit:
		ok = c < 0
	}
	if !ok {
		return events.Reject(events.CodeWrongSideOfMarket, "Order price is on the wrong side of the market.")
	}
	if !atLeastStops(spec, price, ref) {
		return events.Reject(events.CodeStopsTooClose, "Order price is too close to the market.")
	}
	return nil
}
