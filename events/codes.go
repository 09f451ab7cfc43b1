package events

import "strconv"

// Code is one of the service's stable negative error codes (the spec's error tables).
// Clients branch on it; the HTTP status follows from it (HTTPStatus) and is decided here,
// in one place, for every layer that produces a rejection.
type Code int

// -10xx general, server, network.
const (
	// CodeOK is not an error: the operation succeeded (platform retcodes 10008-10010).
	CodeOK Code = 0
	// CodeUnavailable: unknown execution status (reserved) or service unavailable.
	CodeUnavailable Code = -1000
	// CodeInternal: internal error.
	CodeInternal Code = -1001
	// CodeUnauthorized: key header missing or malformed.
	CodeUnauthorized Code = -1002
	// CodeTooManyRequests: REQUEST_WEIGHT breached.
	CodeTooManyRequests Code = -1003
	// CodeUnexpectedResponse: unexpected response from the trade server (reserved).
	CodeUnexpectedResponse Code = -1006
	// CodeTimeout: trade server timeout (reserved).
	CodeTimeout Code = -1007
	// CodeOverloaded: overloaded; did not execute.
	CodeOverloaded Code = -1008
	// CodeUnsupportedOrderCombination (reserved).
	CodeUnsupportedOrderCombination Code = -1014
	// CodeTooManyOrders: the ORDERS bucket is breached.
	CodeTooManyOrders Code = -1015
	// CodeRetired: retired endpoint; permanent.
	CodeRetired Code = -1016
	// CodeTradingOff: the trading surface is switched off.
	CodeTradingOff Code = -1017
	// CodeNotSupported: operation not supported (also: unknown path or method, see docs/openapi.yaml).
	CodeNotSupported Code = -1020
	// CodeTimestampOutside: timestamp outside the recvWindow.
	CodeTimestampOutside Code = -1021
	// CodeBadSignature: invalid signature.
	CodeBadSignature Code = -1022
)

// -11xx request validation (all HTTP 400).
const (
	CodeIllegalChars          Code = -1100
	CodeTooManyParams         Code = -1101
	CodeMandatoryParam        Code = -1102
	CodeUnknownParam          Code = -1103 // reserved
	CodeUnreadParam           Code = -1104 // reserved
	CodeEmptyParam            Code = -1105 // reserved
	CodeParamNotRequired      Code = -1106
	CodeBadPrecision          Code = -1111 // reserved
	CodeInvalidTIF            Code = -1115
	CodeInvalidOrderType      Code = -1116
	CodeInvalidSide           Code = -1117
	CodeEmptyNewClientOrderID Code = -1118
	CodeBadClientOrderID      Code = -1119
	CodeInvalidInterval       Code = -1120
	CodeInvalidSymbol         Code = -1121
	CodeInvalidLogin          Code = -1122
	CodeInvalidListenKey      Code = -1125
	CodeSpanTooBig            Code = -1127
	CodeBadCombination        Code = -1128
	CodeInvalidData           Code = -1130
	CodeBatchSize             Code = -1131
	CodeDuplicateInBatch      Code = -1132
	CodeClientOrderIDReused   Code = -1133
)

// -20xx processing and authorisation.
const (
	CodeNewOrderRejected  Code = -2010
	CodeCancelRejected    Code = -2011 // reserved
	CodeNoSuchOrder       Code = -2013
	CodeBadKeyFormat      Code = -2014 // reserved
	CodeRejectedKey       Code = -2015
	CodeNoMoney           Code = -2018
	CodeWrongSideOfMarket Code = -2021
	CodeLoginOutOfScope   Code = -2022
	CodeNoSuchPosition    Code = -2023
	CodeAccountTradeOff   Code = -2024
)

// -40xx symbol and group rules (all HTTP 400).
const (
	CodePriceNegative       Code = -4001
	CodeInvalidPrice        Code = -4002
	CodeVolumeNotPositive   Code = -4003
	CodeInvalidVolume       Code = -4004
	CodeVolumeAboveMax      Code = -4005
	CodeVolumeBelowMin      Code = -4006
	CodeVolumeStep          Code = -4007
	CodeTickSize            Code = -4008
	CodeStopsTooClose       Code = -4009
	CodeMarketClosed        Code = -4010
	CodeSymbolTradeDisabled Code = -4011
	CodeInvalidExpiration   Code = -4012
	CodeLongOnly            Code = -4013
	CodeShortOnly           Code = -4014
	CodeCloseOnly           Code = -4015
	CodeOrderModeNotAllowed Code = -4016
	CodeFillMode            Code = -4017
	CodeOrderCountLimit     Code = -4018
	CodePositionCountLimit  Code = -4019
	CodeVolumeLimit         Code = -4020
	CodeFrozen              Code = -4021
	CodeHedgeProhibited     Code = -4022
	CodeFIFO                Code = -4023
	CodeCloseVolumeExceeds  Code = -4024
	CodeCloseOrderExists    Code = -4025
)

// -50xx execution.
const (
	CodeRequote           Code = -5001
	CodePriceChanged      Code = -5002
	CodeNoPrice           Code = -5003
	CodeOrderChanged      Code = -5004
	CodeNoChanges         Code = -5005
	CodePositionClosed    Code = -5006
	CodeServerRejected    Code = -5007
	CodeServerTimeout     Code = -5008
	CodeStatusUnknown     Code = -5009
	CodeServerCanceled    Code = -5010
	CodeServerBusy        Code = -5011
	CodeAutoTradingOff    Code = -5012
	CodeDealerBlocked     Code = -5013
	CodeOnlyReal          Code = -5014
	CodeNoConnection      Code = -5015
	CodeInvalidOrderKind  Code = -5016
	CodeInvalidRequest    Code = -5017
	CodeRoutingRuleReject Code = -5018
)

// httpStatus lists every code whose status is not the 400 of its family.
var httpStatus = map[Code]int{
	CodeUnavailable:                 503,
	CodeInternal:                    500,
	CodeUnauthorized:                401,
	CodeTooManyRequests:             429,
	CodeUnexpectedResponse:          503,
	CodeTimeout:                     504,
	CodeOverloaded:                  503,
	CodeUnsupportedOrderCombination: 400,
	CodeTooManyOrders:               429,
	CodeRetired:                     410,
	CodeTradingOff:                  503,
	CodeNotSupported:                400,
	CodeTimestampOutside:            400,
	CodeBadSignature:                401,
	CodeBadKeyFormat:                401,
	CodeRejectedKey:                 401,
	CodeServerTimeout:               504,
	CodeStatusUnknown:               503,
	CodeServerBusy:                  503,
	CodeNoConnection:                503,
}

// HTTPStatus is the HTTP status that carries c, per the spec's error tables: -11xx, -20xx
// (but -2014/-2015: 401), -40xx and most -50xx are 400; the -10xx codes and the 5xx
// execution codes are listed individually. An unknown code is treated as 500.
func (c Code) HTTPStatus() int {
	if s, ok := httpStatus[c]; ok {
		return s
	}
	switch {
	case c == CodeOK:
		return 200
	case c <= -1100 && c > -1200, c <= -2000 && c > -2100, c <= -4000 && c > -4100, c <= -5000 && c > -5100:
		return 400
	}
	return 500
}

// String renders the code as its number ("-1121").
func (c Code) String() string { return strconv.Itoa(int(c)) }

// retcodes maps the trade server's return codes (mt5RetCode) to service codes.
var retcodes = map[int]Code{
	10004: CodeRequote,
	10006: CodeServerRejected,
	10007: CodeServerCanceled,
	10011: CodeServerRejected,
	10012: CodeServerTimeout,
	10013: CodeInvalidRequest,
	10014: CodeInvalidVolume,
	10015: CodeInvalidPrice,
	10016: CodeStopsTooClose,
	10017: CodeSymbolTradeDisabled,
	10018: CodeMarketClosed,
	10019: CodeNoMoney,
	10020: CodePriceChanged,
	10021: CodeNoPrice,
	10022: CodeInvalidExpiration,
	10023: CodeOrderChanged,
	10024: CodeServerBusy,
	10025: CodeNoChanges,
	10026: CodeAutoTradingOff,
	10027: CodeAutoTradingOff,
	10028: CodeDealerBlocked,
	10029: CodeFrozen,
	10030: CodeFillMode,
	10031: CodeNoConnection,
	10032: CodeOnlyReal,
	10033: CodeOrderCountLimit,
	10034: CodeVolumeLimit,
	10035: CodeInvalidOrderKind,
	10036: CodePositionClosed,
	10038: CodeCloseVolumeExceeds,
	10039: CodeCloseOrderExists,
	10040: CodePositionCountLimit,
	10041: CodeRoutingRuleReject,
	10042: CodeLongOnly,
	10043: CodeShortOnly,
	10044: CodeCloseOnly,
	10045: CodeFIFO,
	10046: CodeHedgeProhibited,
}

// Platform success return codes.
const (
	RetcodePlaced  = 10008 // pending order placed
	RetcodeDone    = 10009 // request completed (filled)
	RetcodePartial = 10010 // partially completed
)

// IsSuccessRetcode reports whether ret is one of the platform's success codes.
func IsSuccessRetcode(ret int) bool {
	return ret == RetcodePlaced || ret == RetcodeDone || ret == RetcodePartial
}

// CodeForRetcode maps a trade-server return code to the service code the client sees.
// Success codes give CodeOK. Anything the spec does not map (including the intermediate
// codes 10001-10003, 10005, 10037 should they ever surface) is a generic server rejection,
// -5007: the request did not execute, which is what the server's refusal means.
func CodeForRetcode(ret int) Code {
	if IsSuccessRetcode(ret) {
		return CodeOK
	}
	if c, ok := retcodes[ret]; ok {
		return c
	}
	return CodeServerRejected
}

// Rejection is a business refusal with a stable code: what command handlers return, what
// outcome events carry and what the gateway renders as the error envelope. Retcode is the
// trade server's return code when it answered (0 otherwise).
type Rejection struct {
	Code    Code
	Msg     string
	Retcode int
}

// ErrUnavailable is -1000 for a store or service the request needed that could not be
// reached: nothing was done.
var ErrUnavailable = Reject(CodeUnavailable, "Service unavailable; nothing was done. Retry with backoff.")

// Reject builds a *Rejection without a trade-server return code.
func Reject(code Code, msg string) *Rejection { return &Rejection{Code: code, Msg: msg} }

// Error renders the rejection for logs: "code -1121: Invalid symbol." (plus the retcode).
func (r *Rejection) Error() string {
	s := "code " + r.Code.String() + ": " + r.Msg
	if r.Retcode != 0 {
		s += " (mt5RetCode " + strconv.Itoa(r.Retcode) + ")"
	}
	return s
}

// HTTPStatus is the status of the rejection's code.
func (r *Rejection) HTTPStatus() int { return r.Code.HTTPStatus() }
