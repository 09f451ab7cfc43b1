// Package remote carries the trade-server port (mt5.TradeServer) and the simulator's admin
// hooks over plain HTTP on loopback, so that the simulator can run in its own process
// (`tradesvc serve --roles sim`) and the executor can be killed and restarted while the
// trade server keeps its state.
//
// The wire is one JSON POST endpoint per port method (/port/...) and per admin method
// (/admin/...). Every request carries `Authorization: Bearer <token>`; the token lives in a
// 0600 file (LoadOrCreateToken). Decimals travel as JSON strings in apd's own text form, so
// a value comes back with the same coefficient and exponent it left with. Errors of the
// port travel as stable codes and come back as the same sentinel errors (errors.Is works on
// the client side). Facts and ticks are long polls with a bounded wait.
//
// A transport failure never turns into a trade-server answer: Send returns an error that
// wraps mt5.ErrNoAnswer (the outcome is unknown and the caller reconciles by its tag), and
// the read calls return an error that wraps mt5.ErrDisconnected.
package remote
