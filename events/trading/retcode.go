package trading

import "strconv"

// Retcode is a trade-server return code (TRADE_RETCODE_*), the wire's mt5RetCode.
type Retcode int

// Return codes 10004..10046. Success codes are Placed, Done and DonePartial.
const (
	RetRequote            Retcode = 10004
	RetReject             Retcode = 10006
	RetCancel             Retcode = 10007
	RetPlaced             Retcode = 10008
	RetDone               Retcode = 10009
	RetDonePartial        Retcode = 10010
	RetError              Retcode = 10011
	RetTimeout            Retcode = 10012
	RetInvalid            Retcode = 10013
	RetInvalidVolume      Retcode = 10014
	RetInvalidPrice       Retcode = 10015
	RetInvalidStops       Retcode = 10016
	RetTradeDisabled      Retcode = 10017
	RetMarketClosed       Retcode = 10018
	RetNoMoney            Retcode = 10019
	RetPriceChanged       Retcode = 10020
	RetPriceOff           Retcode = 10021
	RetInvalidExpiration  Retcode = 10022
	RetOrderChanged       Retcode = 10023
	RetTooManyRequests    Retcode = 10024
	RetNoChanges          Retcode = 10025
	RetServerDisablesAT   Retcode = 10026
	RetClientDisablesAT   Retcode = 10027
	RetLocked             Retcode = 10028
	RetFrozen             Retcode = 10029
	RetInvalidFill        Retcode = 10030
	RetConnection         Retcode = 10031
	RetOnlyReal           Retcode = 10032
	RetLimitOrders        Retcode = 10033
	RetLimitVolume        Retcode = 10034
	RetInvalidOrder       Retcode = 10035
	RetPositionClosed     Retcode = 10036
	RetInvalidCloseVolume Retcode = 10038
	RetCloseOrderExist    Retcode = 10039
	RetLimitPositions     Retcode = 10040
	RetRejectCancel       Retcode = 10041
	RetLongOnly           Retcode = 10042
	RetShortOnly          Retcode = 10043
	RetCloseOnly          Retcode = 10044
	RetFIFOClose          Retcode = 10045
	RetHedgeProhibited    Retcode = 10046
)

var retcodeNames = map[Retcode]string{
	RetRequote: "REQUOTE", RetReject: "REJECT", RetCancel: "CANCEL", RetPlaced: "PLACED",
	RetDone: "DONE", RetDonePartial: "DONE_PARTIAL", RetError: "ERROR", RetTimeout: "TIMEOUT",
	RetInvalid: "INVALID", RetInvalidVolume: "INVALID_VOLUME", RetInvalidPrice: "INVALID_PRICE",
	RetInvalidStops: "INVALID_STOPS", RetTradeDisabled: "TRADE_DISABLED", RetMarketClosed: "MARKET_CLOSED",
	RetNoMoney: "NO_MONEY", RetPriceChanged: "PRICE_CHANGED", RetPriceOff: "PRICE_OFF",
	RetInvalidExpiration: "INVALID_EXPIRATION", RetOrderChanged: "ORDER_CHANGED",
	RetTooManyRequests: "TOO_MANY_REQUESTS", RetNoChanges: "NO_CHANGES",
	RetServerDisablesAT: "SERVER_DISABLES_AT", RetClientDisablesAT: "CLIENT_DISABLES_AT",
	RetLocked: "LOCKED", RetFrozen: "FROZEN", RetInvalidFill: "INVALID_FILL", RetConnection: "CONNECTION",
	RetOnlyReal: "ONLY_REAL", RetLimitOrders: "LIMIT_ORDERS", RetLimitVolume: "LIMIT_VOLUME",
	RetInvalidOrder: "INVALID_ORDER", RetPositionClosed: "POSITION_CLOSED",
	RetInvalidCloseVolume: "INVALID_CLOSE_VOLUME", RetCloseOrderExist: "CLOSE_ORDER_EXIST",
	RetLimitPositions: "LIMIT_POSITIONS", RetRejectCancel: "REJECT_CANCEL", RetLongOnly: "LONG_ONLY",
	RetShortOnly: "SHORT_ONLY", RetCloseOnly: "CLOSE_ONLY", RetFIFOClose: "FIFO_CLOSE",
	RetHedgeProhibited: "HEDGE_PROHIBITED",
}

// String is the TRADE_RETCODE_ suffix, or the number for codes outside the table.
func (r Retcode) String() string {
	if n, ok := retcodeNames[r]; ok {
		return n
	}
	return strconv.Itoa(int(r))
}

// Success reports whether the request was carried out (placed, done or partially done).
func (r Retcode) Success() bool { return r == RetPlaced || r == RetDone || r == RetDonePartial }

// AllRetcodes lists every code of the table in ascending order (for tests and docs).
func AllRetcodes() []Retcode {
	out := make([]Retcode, 0, len(retcodeNames))
	for c := Retcode(10000); c <= 10046; c++ {
		if _, ok := retcodeNames[c]; ok {
			out = append(out, c)
		}
	}
	return out
}
