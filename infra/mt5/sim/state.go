package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// account is the live state of one login.
type account struct {
	mt5.Account // Login, Group, Currency, Leverage, Demo, TradeAllowed, Balance, Credit, UpdateTime
	group       *mt5.Group
	orders      map[int64]*order    // open pending orders
	positions   map[int64]*position // open positions
	bySym       map[string]*symAgg  // sums of the open positions per symbol
	hist        []*mt5.Order        // finished orders, in the order they finished
	histByTkt   map[int64]*mt5.Order
	deals       []*mt5.Deal
	closedPos   map[int64]bool
	orderTags   map[string][]int64 // correlation tag -> order tickets
	dealTags    map[string][]*mt5.Deal
	invLev      apd.Decimal // 1/leverage when exact
	invLevOK    bool
}

// order is an open pending order plus the bookkeeping of its trigger entry.
type order struct {
	mt5.Order
	ver      uint32 // bumped on every change; stale heap entries carry an older one
	deadline int64  // expiry instant (Unix ms), 0 for GTC
}

// position is an open position.
type position struct {
	mt5.Position
	ver uint32
}

// symbol is a symbol's specification plus its live market state.
type symbol struct {
	spec         mt5.Symbol
	scale        int64 // 10^digits
	initialBid   apd.Decimal
	spreadPoints int
	stepPoints   int
	liqLots      apd.Decimal
	liqLevels    int
	slippage     int // adverse slippage in points on market execution

	hasQuote bool
	held     bool
	bid, ask apd.Decimal
	bidK     int64 // bid in points
	askK     int64
	tickTime int64
	bidDir   int
	askDir   int
	day      dayStats
	lastSeq  uint64

	// Trigger heaps: pending orders and position stops, keyed by price in points.
	buyLimit, sellLimit, buyStop, sellStop trigHeap
	buySL, buyTP, sellSL, sellTP           trigHeap
	// holders counts open positions per login, for stop-out checks on ticks.
	holders map[int64]int
}

type dayStats struct {
	day                              int64
	open, high, low                  apd.Decimal
	bidHigh, bidLow, askHigh, askLow apd.Decimal
	deals, buyOrders, sellOrders     int64
	volume                           apd.Decimal
}

func (s *Sim) load(seed *Seed) error {
	groups, syms, err := seed.build()
	if err != nil {
		return err
	}
	off := seed.Server.TimeZoneOffsetMinutes
	s.server = mt5.ServerInfo{Name: seed.Server.Name, TimeZoneOffsetMinutes: off}
	s.groups = groups
	for _, g := range groups {
		s.groupList = append(s.groupList, *g)
	}
	sort.Slice(s.groupList, func(i, j int) bool { return s.groupList[i].Name < s.groupList[j].Name })
	s.symbols = map[string]*symbol{}
	for _, ss := range syms {
		if _, dup := s.symbols[ss.spec.Name]; dup {
			return fmt.Errorf("sim seed: duplicate symbol %s", ss.spec.Name)
		}
		y := &symbol{spec: ss.spec, scale: pow10(ss.spec.Digits), initialBid: ss.initialBid,
			spreadPoints: ss.spreadPoints, stepPoints: ss.stepPoints, liqLots: ss.liquidityLots,
			liqLevels: ss.liquidityLevels, holders: map[int64]int{}}
		y.buyLimit.max, y.sellStop.max, y.buySL.max, y.sellTP.max = true, true, true, true
		s.symbols[y.spec.Name] = y
		s.symbolList = append(s.symbolList, y)
	}
	sort.Slice(s.symbolList, func(i, j int) bool { return s.symbolList[i].spec.Name < s.symbolList[j].spec.Name })
	s.accounts = map[int64]*account{}
	for _, a := range seed.Accounts {
		g := groups[a.Group]
		bal, err1 := decOr(a.Balance, "0")
		cr, err2 := decOr(a.Credit, "0")
		if err1 != nil || err2 != nil {
			return fmt.Errorf("sim seed: account %d: bad balance or credit", a.Login)
		}
		if _, dup := s.accounts[a.Login]; dup {
			return fmt.Errorf("sim seed: duplicate login %d", a.Login)
		}
		lev := a.Leverage
		if lev == 0 {
			lev = g.Leverage
		}
		if lev <= 0 {
			return fmt.Errorf("sim seed: account %d: leverage must be positive", a.Login)
		}
		acc := &account{Account: mt5.Account{Login: a.Login, Group: g.Name, Currency: g.Currency, Leverage: lev,
			Demo: g.Demo, TradeAllowed: a.TradeAllowed == nil || *a.TradeAllowed, Balance: bal, Credit: cr},
			group: g, orders: map[int64]*order{}, positions: map[int64]*position{}, bySym: map[string]*symAgg{}, histByTkt: map[int64]*mt5.Order{},
			closedPos: map[int64]bool{}, orderTags: map[string][]int64{}, dealTags: map[string][]*mt5.Deal{}}
		inv := dec.MustQuo(one, dec.New(int64(lev), 0)) // lev > 0, checked above
		if back := dec.Mul(inv, dec.New(int64(lev), 0)); back.Cmp(&one) == 0 {
			acc.invLev, acc.invLevOK = inv, true
		}
		s.accounts[a.Login] = acc
		s.loginList = append(s.loginList, a.Login)
	}
	sort.Slice(s.loginList, func(i, j int) bool { return s.loginList[i] < s.loginList[j] })
	return nil
}

func pow10(n int) int64 {
	r := int64(1)
	for i := 0; i < n; i++ {
		r *= 10
	}
	return r
}

// toPoints converts a price to an integer number of points; ok is false when the price is
// not a whole number of points or does not fit.
func toPoints(y *symbol, p apd.Decimal) (int64, bool) {
	if p.Form != apd.Finite {
		return 0, false
	}
	q := dec.Round(p, int32(y.spec.Digits))
	if q.Cmp(&p) != 0 {
		return 0, false
	}
	v, err := q.Coeff.Int64(), error(nil)
	if !q.Coeff.IsInt64() {
		return 0, false
	}
	if q.Negative {
		v = -v
	}
	return v, err == nil
}

// fromPoints converts points back to a price with the symbol's digits.
func fromPoints(y *symbol, k int64) apd.Decimal { return dec.New(k, int32(-y.spec.Digits)) }

// addPoints returns p + n points.
func addPoints(y *symbol, p apd.Decimal, n int) apd.Decimal {
	return dec.Add(p, dec.New(int64(n), int32(-y.spec.Digits)))
}

// tag is the correlation tag of a comment: its last seven characters.
func tag(comment string) string {
	if len(comment) < 7 {
		return ""
	}
	return comment[len(comment)-7:]
}

func truncComment(c string) string {
	r := []rune(strings.ToValidUTF8(c, "?"))
	if len(r) > trading.MaxPlatformComment {
		r = r[:trading.MaxPlatformComment]
	}
	return string(r)
}

func (a *account) addHist(o *mt5.Order) {
	a.hist = append(a.hist, o)
	a.histByTkt[o.Ticket] = o
}

// addOrderTag indexes a new order's correlation tag (once per ticket, at creation).
func (a *account) addOrderTag(o *mt5.Order) {
	if t := tag(o.Comment); t != "" {
		a.orderTags[t] = append(a.orderTags[t], o.Ticket)
	}
}

func (a *account) addDeal(d *mt5.Deal) {
	a.deals = append(a.deals, d)
	if t := tag(d.Comment); t != "" {
		a.dealTags[t] = append(a.dealTags[t], d)
	}
}
