package sim

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// DefaultSeed is the embedded default seed (seed/default.json, documented in docs/simulator.md).
//
//go:embed seed/default.json
var DefaultSeed []byte

// Seed is the parsed form of a seed file: the trade server's reference data and the
// starting state of its accounts. Decimals are strings in the file.
type Seed struct {
	Server           SeedServer                          `json:"server"`
	SessionTemplates map[string]map[string][]SeedSession `json:"sessionTemplates"`
	Groups           []SeedGroup                         `json:"groups"`
	Accounts         []SeedAccount                       `json:"accounts"`
	Symbols          []SeedSymbol                        `json:"symbols"`
}

// SeedServer names the server and its zone.
type SeedServer struct {
	Name                  string `json:"name"`
	TimeZoneOffsetMinutes int    `json:"timeZoneOffsetMinutes"`
}

// SeedSession is one "HH:MM"-"HH:MM" window in server time.
type SeedSession struct {
	Open  string `json:"open"`
	Close string `json:"close"`
}

// SeedGroup is an account group.
type SeedGroup struct {
	Name            string `json:"name"`
	Demo            bool   `json:"demo"`
	Currency        string `json:"currency"`
	Leverage        int    `json:"leverage"`
	MarginCall      string `json:"marginCall"`
	StopOut         string `json:"stopOut"`
	HedgeProhibited bool   `json:"hedgeProhibited"`
	FIFOClose       bool   `json:"fifoClose"`
	LimitOrders     int    `json:"limitOrders"`
	LimitPositions  int    `json:"limitPositions"`
}

// SeedAccount is an account's starting state.
type SeedAccount struct {
	Login        int64  `json:"login"`
	Group        string `json:"group"`
	Leverage     int    `json:"leverage"` // 0 = the group's
	Balance      string `json:"balance"`
	Credit       string `json:"credit"`
	TradeAllowed *bool  `json:"tradeAllowed"` // default true
}

// SeedSymbol is a symbol specification plus its quote generator's parameters.
type SeedSymbol struct {
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	Digits             int      `json:"digits"`
	TickSize           string   `json:"tickSize"`
	TickValue          string   `json:"tickValue"`
	ContractSize       string   `json:"contractSize"`
	VolumeMin          string   `json:"volumeMin"`
	VolumeMax          string   `json:"volumeMax"`
	VolumeStep         string   `json:"volumeStep"`
	VolumeLimit        string   `json:"volumeLimit"`
	StopsLevel         int      `json:"stopsLevel"`
	FreezeLevel        int      `json:"freezeLevel"`
	TradeMode          string   `json:"tradeMode"`
	ExecutionMode      string   `json:"executionMode"`
	FillModes          []string `json:"fillModes"`
	ExpirationModes    []string `json:"expirationModes"`
	OrderModes         []string `json:"orderModes"`
	MarginCalc         string   `json:"marginCalc"` // FOREX or CFD_LEVERAGE
	CurrencyBase       string   `json:"currencyBase"`
	CurrencyProfit     string   `json:"currencyProfit"`
	CurrencyMargin     string   `json:"currencyMargin"`
	SwapMode           string   `json:"swapMode"`
	SwapLong           string   `json:"swapLong"`
	SwapShort          string   `json:"swapShort"`
	Swap3Days          string   `json:"swap3Days"`
	CommissionPerLot   string   `json:"commissionPerLot"`
	CommissionCurrency string   `json:"commissionCurrency"`
	// Sessions names a template of sessionTemplates.
	Sessions string `json:"sessions"`
	// Quote generator: the first quote, the typical spread and the largest step per tick
	// (both in points).
	InitialBid   string `json:"initialBid"`
	SpreadPoints int    `json:"spreadPoints"`
	StepPoints   int    `json:"stepPoints"`
	// Liquidity: at most LiquidityLots per deal and LiquidityLevels deals per request, each
	// level one tick worse; empty means unlimited (one deal always fills).
	LiquidityLots   string `json:"liquidityLots"`
	LiquidityLevels int    `json:"liquidityLevels"`
}

// ParseSeed reads and checks a seed file.
func ParseSeed(b []byte) (*Seed, error) {
	var s Seed
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("sim seed: %w", err)
	}
	return &s, nil
}

type symbolSeed struct {
	spec            mt5.Symbol
	initialBid      apd.Decimal
	spreadPoints    int
	stepPoints      int
	liquidityLots   apd.Decimal
	liquidityLevels int
}

var weekdayKeys = []string{"SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY"}

func parseHHMM(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok {
		return 0, fmt.Errorf("time %q is not HH:MM", s)
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 24 || mm < 0 || mm > 59 || hh*60+mm > 1440 {
		return 0, fmt.Errorf("time %q is not HH:MM", s)
	}
	return hh*60 + mm, nil
}

func enumIndex(names []string, v, what string) (int, error) {
	for i, n := range names {
		if n == v {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", what, v)
}

func decOr(s, def string) (apd.Decimal, error) {
	if s == "" {
		s = def
	}
	return dec.Parse(s)
}

func (s *Seed) build() (groups map[string]*mt5.Group, syms []*symbolSeed, err error) {
	var errs []error
	groups = map[string]*mt5.Group{}
	for _, g := range s.Groups {
		mc, e1 := decOr(g.MarginCall, "100")
		so, e2 := decOr(g.StopOut, "50")
		if e := errors.Join(e1, e2); e != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", g.Name, e))
		}
		if g.Leverage <= 0 {
			errs = append(errs, fmt.Errorf("group %s: leverage must be positive", g.Name))
		}
		groups[g.Name] = &mt5.Group{Name: g.Name, Demo: g.Demo, Currency: g.Currency, Leverage: g.Leverage,
			MarginCall: mc, StopOut: so, HedgeProhibited: g.HedgeProhibited, FIFOClose: g.FIFOClose,
			LimitOrders: g.LimitOrders, LimitPositions: g.LimitPositions}
	}
	for _, a := range s.Accounts {
		if groups[a.Group] == nil {
			errs = append(errs, fmt.Errorf("account %d: unknown group %q", a.Login, a.Group))
		}
	}
	for _, y := range s.Symbols {
		ss, e := y.build(s.SessionTemplates)
		if e != nil {
			errs = append(errs, fmt.Errorf("symbol %s: %w", y.Name, e))
			continue
		}
		syms = append(syms, ss)
	}
	return groups, syms, errors.Join(errs...)
}

func (y *SeedSymbol) build(templates map[string]map[string][]SeedSession) (*symbolSeed, error) {
	var errs []error
	add := func(e error) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	sp := mt5.Symbol{Name: y.Name, Description: y.Description, Digits: y.Digits, StopsLevel: y.StopsLevel,
		FreezeLevel: y.FreezeLevel, CurrencyBase: y.CurrencyBase, CurrencyProfit: y.CurrencyProfit,
		CurrencyMargin: y.CurrencyMargin, CommissionCurrency: y.CommissionCurrency}
	if sp.CommissionCurrency == "" {
		sp.CommissionCurrency = "USD"
	}
	sp.Point = dec.New(1, int32(-y.Digits))
	for _, d := range []struct {
		dst      *apd.Decimal
		val, def string // def "": the value is required
	}{
		{&sp.TickSize, y.TickSize, dec.String(sp.Point)}, {&sp.TickValue, y.TickValue, "0"},
		{&sp.ContractSize, y.ContractSize, ""}, {&sp.VolumeMin, y.VolumeMin, "0.01"},
		{&sp.VolumeMax, y.VolumeMax, "100"}, {&sp.VolumeStep, y.VolumeStep, "0.01"},
		{&sp.VolumeLimit, y.VolumeLimit, "0"}, {&sp.SwapLong, y.SwapLong, "0"}, {&sp.SwapShort, y.SwapShort, "0"},
		{&sp.CommissionPerLot, y.CommissionPerLot, "0"},
	} {
		var e error
		*d.dst, e = decOr(d.val, d.def)
		add(e)
	}
	i, e := enumIndex(tradeModeNames, y.TradeMode, "tradeMode")
	add(e)
	sp.TradeMode = trading.TradeMode(i)
	i, e = enumIndex(execModeNames, y.ExecutionMode, "executionMode")
	add(e)
	sp.ExecutionMode = trading.ExecMode(i)
	i, e = enumIndex(swapModeNames, orDefault(y.SwapMode, "DISABLED"), "swapMode")
	add(e)
	sp.SwapMode = trading.SwapMode(i)
	i, e = enumIndex(append(append([]string{}, weekdayKeys...), "DISABLED"), orDefault(y.Swap3Days, "WEDNESDAY"), "swap3Days")
	add(e)
	sp.Swap3Days = trading.Weekday(i)
	switch orDefault(y.MarginCalc, "FOREX") {
	case "FOREX":
		sp.MarginCalc = mt5.CalcForex
	case "CFD_LEVERAGE":
		sp.MarginCalc = mt5.CalcCFDLeverage
	default:
		add(fmt.Errorf("unknown marginCalc %q", y.MarginCalc))
	}
	for _, f := range y.FillModes {
		switch f {
		case "FOK":
			sp.FillFlags |= trading.FillFlagFOK
		case "IOC":
			sp.FillFlags |= trading.FillFlagIOC
		case "BOC":
			sp.FillFlags |= trading.FillFlagBOC
		default:
			add(fmt.Errorf("unknown fill mode %q", f))
		}
	}
	for _, f := range y.ExpirationModes {
		i, e := enumIndex([]string{"GTC", "DAY", "GTD", "GTD_DAY"}, f, "expiration mode")
		add(e)
		sp.ExpirationModes |= 1 << uint(i)
	}
	for _, f := range y.OrderModes {
		i, e := enumIndex([]string{"MARKET", "LIMIT", "STOP", "STOP_LIMIT", "SL", "TP", "CLOSE_BY"}, f, "order mode")
		add(e)
		sp.OrderModes |= 1 << uint(i)
	}
	tpl, ok := templates[y.Sessions]
	if !ok {
		add(fmt.Errorf("unknown session template %q", y.Sessions))
	}
	for day, key := range weekdayKeys {
		for _, w := range tpl[key] {
			o, e1 := parseHHMM(w.Open)
			c, e2 := parseHHMM(w.Close)
			add(errors.Join(e1, e2))
			sp.Sessions[day] = append(sp.Sessions[day], mt5.Session{Open: o, Close: c})
		}
	}
	ib, e := dec.Parse(y.InitialBid)
	add(e)
	if !dec.IsMultiple(ib, sp.TickSize) {
		add(fmt.Errorf("initialBid %s is not a multiple of tickSize", y.InitialBid))
	}
	if y.Digits < 0 || y.Digits > 8 {
		add(fmt.Errorf("digits %d out of range", y.Digits))
	}
	liq, e := decOr(y.LiquidityLots, "0")
	add(e)
	return &symbolSeed{spec: sp, initialBid: ib, spreadPoints: y.SpreadPoints, stepPoints: y.StepPoints,
		liquidityLots: liq, liquidityLevels: y.LiquidityLevels}, errors.Join(errs...)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

var (
	tradeModeNames = []string{"DISABLED", "LONG_ONLY", "SHORT_ONLY", "CLOSE_ONLY", "FULL"}
	execModeNames  = []string{"REQUEST", "INSTANT", "MARKET", "EXCHANGE"}
	swapModeNames  = []string{"DISABLED", "BY_POINTS", "BY_SYMBOL_CURRENCY", "BY_MARGIN_CURRENCY", "BY_GROUP_CURRENCY", "BY_INTEREST_CURRENT", "BY_INTEREST_OPEN", "REOPEN_BY_CLOSE_PRICE", "REOPEN_BY_BID", "BY_PROFIT_CURRENCY"}
)
