package gwclient

// Security is an endpoint's security type, as the spec names it.
type Security string

// Security types.
const (
	SecNone       Security = "NONE"
	SecMarketData Security = "MARKET_DATA"
	SecUserStream Security = "USER_STREAM"
	SecUserData   Security = "USER_DATA"
	SecTrade      Security = "TRADE"
)

// Keyed reports whether the endpoint requires the key header.
func (s Security) Keyed() bool { return s != SecNone }

// Signed reports whether requests carry timestamp and signature.
func (s Security) Signed() bool { return s == SecUserData || s == SecTrade }

// endpoints is the security of every REST endpoint by "METHOD /path". It is the
// x-security-type of docs/openapi.yaml's operations and of the gateway's routes: tests in
// openapicheck and gateway keep the three equal.
var endpoints = map[string]Security{
	"GET /v1/ping":                SecNone,
	"GET /v1/time":                SecNone,
	"GET /v1/exchangeInfo":        SecNone,
	"GET /v1/ticker/price":        SecMarketData,
	"GET /v1/ticker/bookTicker":   SecMarketData,
	"GET /v1/ticker/24hr":         SecMarketData,
	"GET /v1/klines":              SecMarketData,
	"GET /v1/ticks":               SecMarketData,
	"POST /v1/order":              SecTrade,
	"PUT /v1/order":               SecTrade,
	"DELETE /v1/order":            SecTrade,
	"GET /v1/order":               SecUserData,
	"GET /v1/openOrders":          SecUserData,
	"GET /v1/allOrders":           SecUserData,
	"GET /v1/positions":           SecUserData,
	"PUT /v1/position":            SecTrade,
	"DELETE /v1/position":         SecTrade,
	"DELETE /v1/allOpenPositions": SecTrade,
	"POST /v1/batchOrders":        SecTrade,
	"GET /v1/account":             SecUserData,
	"GET /v1/accounts":            SecUserData,
	"GET /v1/userTrades":          SecUserData,
	"POST /v1/listenKey":          SecUserStream,
	"PUT /v1/listenKey":           SecUserStream,
	"DELETE /v1/listenKey":        SecUserStream,
}

// EndpointSecurity returns the security type of method and path; ok is false for an endpoint
// the table does not know (a retired or unknown path).
func EndpointSecurity(method, path string) (s Security, ok bool) {
	s, ok = endpoints[method+" "+path]
	return s, ok
}

// Endpoints returns a copy of the table, keyed by "METHOD /path".
func Endpoints() map[string]Security {
	out := make(map[string]Security, len(endpoints))
	for k, v := range endpoints {
		out[k] = v
	}
	return out
}
