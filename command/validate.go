package command

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/query"
)

// Order types and sides of the spec.
const (
	TypeMarket = "MARKET"
	SideBuy    = "BUY"
	SideSell   = "SELL"
)

// pendingTypes are the pending order types: the side each implies and the order mode the
// symbol must allow for it.
var pendingTypes = map[string]struct {
	buy  bool
	mode query.OrderMode
}{
	"BUY_LIMIT": {true, "LIMIT"}, "SELL_LIMIT": {false, "LIMIT"},
	"BUY_STOP": {true, "STOP"}, "SELL_STOP": {false, "STOP"},
	"BUY_STOP_LIMIT": {true, "STOP_LIMIT"}, "SELL_STOP_LIMIT": {false, "STOP_LIMIT"},
}

// IsPendingType reports whether t is one of the six pending order types.
func IsPendingType(t string) bool { _, ok := pendingTypes[t]; return ok }

func isStopLimit(t string) bool { return t == "BUY_STOP_LIMIT" || t == "SELL_STOP_LIMIT" }

// Times in force.
var timesInForce = []string{"GTC", "DAY", "GTD", "GTD_DAY"}

func needsExpiration(tif string) bool { return tif == "GTD" || tif == "GTD_DAY" }

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
func (v *Validator) symbol(ctx context.Context, name string) (query.SymbolSpec, error) {
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

// order is a validated POST /v1/order (or batch item).
type order struct {
	spec           query.SymbolSpec
	Symbol         string
	Side           string
	Type           string
	Volume         apd.Decimal
	Price          *apd.Decimal
	StopLimitPrice *apd.Decimal
	SL, TP         *apd.Decimal
	TimeInForce    string
	Expiration     int64
	Comment        string
	QuotedPrice    *apd.Decimal
	// Quote is the fresh quote the order was validated against (nil: none was fresh).
	Quote *query.Quote
}

// Order validates the parameters of a new order in the spec's order: the parameters
// themselves (-11xx), the symbol (-1121) and its rules (-40xx), then the prices against a
// fresh quote (-2021, -4009).
func (v *Validator) Order(ctx context.Context, p Params, now time.Time) (order, error) {
	var o order
	var err error
	if o.Comment, err = comment(p); err != nil {
		return o, err
	}
	if o.Symbol, err = required(p, "symbol"); err != nil {
		return o, err
	}
	if o.Type, err = required(p, "type"); err != nil {
		return o, err
	}
	pt, pending := pendingTypes[o.Type]
	if o.Type != TypeMarket && !pending {
		return o, events.Reject(events.CodeInvalidOrderType, "Invalid order type.")
	}
	side, sideSent := optional(p, "side")
	switch {
	case sideSent && side != SideBuy && side != SideSell:
		return o, events.Reject(events.CodeInvalidSide, "Invalid side.")
	case !pending && !sideSent:
		return o, errMandatory("side")
	case pending && sideSent && (side == SideBuy) != pt.buy:
		return o, events.Reject(events.CodeInvalidSide, "Side disagrees with the order type.")
	}
	o.Side = side
	if pending {
		o.Side = SideSell
		if pt.buy {
			o.Side = SideBuy
		}
	}
	buy := o.Side == SideBuy
	vol, err := required(p, "volume")
	if err != nil {
		return o, err
	}
	if o.Volume, err = dec.Parse(vol); err != nil {
		return o, errInvalid("volume")
	}
	if o.Volume.Sign() <= 0 {
		return o, events.Reject(events.CodeVolumeNotPositive, "Volume must be greater than 0.")
	}
	if pending {
		if _, ok := optional(p, "price"); !ok {
			return o, errMandatory("price")
		}
		if o.Price, err = decimalParam(p, "price"); err != nil {
			return o, err
		}
		if o.Price.Sign() <= 0 {
			return o, events.Reject(events.CodePriceNegative, "Price must be greater than 0.")
		}
	}
	if isStopLimit(o.Type) {
		if _, ok := optional(p, "stopLimitPrice"); !ok {
			return o, errMandatory("stopLimitPrice")
		}
		if o.StopLimitPrice, err = decimalParam(p, "stopLimitPrice"); err != nil {
			return o, err
		}
		if o.StopLimitPrice.Sign() <= 0 {
			return o, events.Reject(events.CodePriceNegative, "Stop-limit price must be greater than 0.")
		}
	} else if _, sent := p.Get("stopLimitPrice"); sent {
		return o, events.Reject(events.CodeParamNotRequired, "Parameter 'stopLimitPrice' is only for stop-limit orders.")
	}
	if o.SL, o.TP, err = stops(p); err != nil {
		return o, err
	}
	if err := o.timeInForce(p, pending, now); err != nil {
		return o, err
	}
	if o.spec, err = v.symbol(ctx, o.Symbol); err != nil {
		return o, err
	}
	if err := tradeModeAllows(o.spec, buy, true); err != nil {
		return o, err
	}
	mode := query.OrderMode("MARKET")
	if pending {
		mode = pt.mode
	}
	if !slices.Contains(o.spec.OrderModes, mode) {
		return o, events.Reject(events.CodeOrderModeNotAllowed, "Order type not allowed for the symbol.")
	}
	if err := stopModesAllow(o.spec, o.SL, o.TP); err != nil {
		return o, err
	}
	if pending && !slices.Contains(o.spec.ExpirationModes, query.ExpirationMode(o.TimeInForce)) {
		return o, events.Reject(events.CodeInvalidExpiration, "Time in force not allowed for the symbol.")
	}
	if err := volumeRules(o.spec, o.Volume, true); err != nil {
		return o, err
	}
	for _, pr := range []*apd.Decimal{o.Price, o.StopLimitPrice, o.SL, o.TP} {
		if err := tickRule(o.spec, pr); err != nil {
			return o, err
		}
	}
	q, fresh := v.freshQuote(o.Symbol, now)
	if !fresh {
		return o, nil // the trade server checks the prices (its refusal carries mt5RetCode)
	}
	o.Quote = &q
	if !pending {
		if o.spec.ExecutionMode == "REQUEST" || o.spec.ExecutionMode == "INSTANT" {
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
		return o, stopsDistance(o.spec, buy, ref, o.SL, o.TP)
	}
	if err := pendingPriceRules(o.spec, o.Type, buy, *o.Price, q); err != nil {
		return o, err
	}
	open := *o.Price
	if o.StopLimitPrice != nil {
		open = *o.StopLimitPrice
	}
	return o, stopsDistance(o.spec, buy, open, o.SL, o.TP)
}

// timeInForce reads timeInForce and expiration: on MARKET -1106; unknown -1115; GTD and
// GTD_DAY need an expiration (-1102) that is positive and in the future (-4012).
func (o *order) timeInForce(p Params, pending bool, now time.Time) error {
	tif, sent := p.Get("timeInForce")
	if !pending {
		if sent {
			return events.Reject(events.CodeParamNotRequired, "Parameter 'timeInForce' is not taken by MARKET orders.")
		}
		return nil
	}
	if !sent || tif == "" {
		tif = "GTC"
	}
	if !slices.Contains(timesInForce, tif) {
		return events.Reject(events.CodeInvalidTIF, "Invalid timeInForce.")
	}
	o.TimeInForce = tif
	if !needsExpiration(tif) {
		return nil
	}
	if _, ok := optional(p, "expiration"); !ok {
		return errMandatory("expiration")
	}
	exp, err := int64Param(p, "expiration")
	if err != nil {
		return err
	}
	if *exp <= 0 || (tif == "GTD" && *exp <= now.UnixMilli()) {
		return events.Reject(events.CodeInvalidExpiration, "Invalid expiration.")
	}
	o.Expiration = *exp
	return nil
}

// stops reads sl and tp: malformed -1130, negative -4001; zero (or absent) is none (nil).
func stops(p Params) (sl, tp *apd.Decimal, err error) {
	read := func(name string) (*apd.Decimal, error) {
		d, err := decimalParam(p, name)
		if err != nil || d == nil {
			return nil, err
		}
		if d.Sign() < 0 {
			return nil, events.Reject(events.CodePriceNegative, "Parameter '"+name+"' must not be negative.")
		}
		if d.IsZero() {
			return nil, nil
		}
		return d, nil
	}
	if sl, err = read("sl"); err != nil {
		return nil, nil, err
	}
	tp, err = read("tp")
	return sl, tp, err
}

// tradeModeAllows applies the symbol's trade mode to an operation that opens (or not) a
// position on the given side: -4011 disabled, -4015 close only, -4013 long only, -4014 short only.
func tradeModeAllows(spec query.SymbolSpec, buy, opening bool) error {
	switch spec.TradeMode {
	case "FULL":
		return nil
	case "DISABLED":
		return events.Reject(events.CodeSymbolTradeDisabled, "Trading is disabled for the symbol.")
	case "CLOSE_ONLY":
		if opening {
			return events.Reject(events.CodeCloseOnly, "The symbol is close only.")
		}
	case "LONG_ONLY":
		if opening && !buy {
			return events.Reject(events.CodeLongOnly, "The symbol is long only.")
		}
	case "SHORT_ONLY":
		if opening && buy {
			return events.Reject(events.CodeShortOnly, "The symbol is short only.")
		}
	default:
		if opening {
			return events.Reject(events.CodeSymbolTradeDisabled, "Trading is disabled for the symbol.")
		}
	}
	return nil
}

// stopModesAllow: an sl needs the symbol's SL order mode, a tp its TP mode (-4016).
func stopModesAllow(spec query.SymbolSpec, sl, tp *apd.Decimal) error {
	if sl != nil && !slices.Contains(spec.OrderModes, "SL") {
		return events.Reject(events.CodeOrderModeNotAllowed, "Stop loss is not allowed for the symbol.")
	}
	if tp != nil && !slices.Contains(spec.OrderModes, "TP") {
		return events.Reject(events.CodeOrderModeNotAllowed, "Take profit is not allowed for the symbol.")
	}
	return nil
}

// volumeRules: below volumeMin -4006, above volumeMax -4005, off volumeStep -4007. A full
// close is never refused for its step (step is false).
func volumeRules(spec query.SymbolSpec, vol apd.Decimal, step bool) error {
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
func tickRule(spec query.SymbolSpec, price *apd.Decimal) error {
	if price == nil || spec.TickSize.IsZero() || dec.IsMultiple(*price, spec.TickSize) {
		return nil
	}
	return events.Reject(events.CodeTickSize, "Price is not a multiple of tickSize "+dec.String(spec.TickSize)+".")
}

// points is |a-b| in the symbol's points (10^-digits).
func points(spec query.SymbolSpec, a, b apd.Decimal) apd.Decimal {
	d := dec.Sub(a, b)
	d.Negative = false
	return dec.Mul(d, dec.New(1, spec.Digits))
}

// atLeastStops reports whether a and b are at least the stops level apart.
func atLeastStops(spec query.SymbolSpec, a, b apd.Decimal) bool {
	p := points(spec, a, b)
	lvl := dec.New(int64(spec.StopsLevel), 0)
	return p.Cmp(&lvl) >= 0
}

// stopsDistance checks sl and tp of a buy or sell against ref: on the protective side of it
// (a buy's sl below, tp above) and at least stopsLevel points away, else -4009.
func stopsDistance(spec query.SymbolSpec, buy bool, ref apd.Decimal, sl, tp *apd.Decimal) error {
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
func pendingPriceRules(spec query.SymbolSpec, typ string, buy bool, price apd.Decimal, q query.Quote) error {
	ref := q.Bid
	if buy {
		ref = q.Ask
	}
	c := price.Cmp(&ref)
	var ok bool
	switch typ {
	case "BUY_LIMIT":
		ok = c < 0
	case "SELL_LIMIT":
		ok = c > 0
	case "BUY_STOP", "BUY_STOP_LIMIT":
		ok = c > 0
	case "SELL_STOP", "SELL_STOP_LIMIT":
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
