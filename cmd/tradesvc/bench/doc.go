// Package bench is `tradesvc bench`: a load generator that runs in its own process and talks
// to the service only as a client does (HTTPS REST signed by gateway/gwclient, the user data
// stream over WSS), so that a broker can size a deployment with it and the service's own
// benchmarks measure what a client sees.
//
// Load is open loop: order i is due at start + i/rate whatever happened to earlier orders,
// each is sent from its own goroutine, and its latency counts from when it was due, so a
// slow service shows as latency (and as answers it could not give), never as a lower
// offered rate. The load is spread over as many API keys as the per-key rate limits need
// (ORDERS per 10 s and per minute, REQUEST_WEIGHT per minute, read live from
// GET /v1/exchangeInfo), with a headroom so that no key is ever throttled.
//
// Every run measures, with the same settings and in the same run, the floor an order cannot
// go below (one HTTPS keep-alive round trip, two chained Kafka produce-and-consume hops with
// the service's producer and consumer settings, one synchronous Postgres commit) and prints
// the ratio of the answer's p50 to it. Every acknowledged order is verified FILLED through
// the REST API afterwards, paced under the keys' weight budgets; one that is not is a lost
// order and makes the run fail.
package bench
