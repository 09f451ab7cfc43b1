package remote

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/infra/mt5/sim"
)

// Admin is the part of the simulator's admin hooks the server exposes under /admin,
// declared at the consumer with the simulator's own method set (*sim.Sim satisfies it).
type Admin interface {
	// SetQuote sets symbol's quote now and holds it until ResumeFeed.
	SetQuote(symbol string, bid, ask apd.Decimal) error
	// ResumeFeed releases a held symbol back to the quote generator.
	ResumeFeed(symbol string) error
	// Deposit books a balance deal (negative: withdrawal) and returns its ticket.
	Deposit(login int64, amount apd.Decimal) (int64, error)
	// SetAccountTradeAllowed switches trading on or off for one account.
	SetAccountTradeAllowed(login int64, allowed bool) error
	// SetFault replaces the injected fault (mode none clears it).
	SetFault(f sim.Fault) error
	// CurrentFault returns the injected fault.
	CurrentFault() sim.Fault
}

var _ Admin = (*sim.Sim)(nil)

// Wire shapes of the admin API. They are also what `tradesvc sim ...` prints, so their JSON
// keys are the spec's lower camel case, and decimals are strings in plain notation.

// QuoteState is a symbol's current quote and whether the admin hold is on.
type QuoteState struct {
	Symbol string `json:"symbol"`
	Bid    string `json:"bid,omitempty"`
	Ask    string `json:"ask,omitempty"`
	Time   int64  `json:"time,omitempty"`
	Held   bool   `json:"held"`
}

// DepositResult is the balance deal booked by a deposit and the account after it.
type DepositResult struct {
	Login   int64        `json:"login"`
	Deal    int64        `json:"deal"`
	Amount  string       `json:"amount"`
	Account AccountState `json:"account"`
}

// AccountState is the account record as the admin API shows it.
type AccountState struct {
	events.AccountHeader
	Balance    string `json:"balance"`
	Credit     string `json:"credit"`
	Equity     string `json:"equity"`
	Margin     string `json:"margin"`
	MarginFree string `json:"marginFree"`
}

// FaultState is the injected fault: Mode is one of sim's fault modes (none, no-answer,
// timeout, requote, disconnect, refuse, latency, shortfalls); LatencyMs is added before
// every Send; AnswerDelayMs holds the answer of every executed request that long; Retcode
// is the refusal code of mode refuse.
type FaultState struct {
	Mode          string `json:"mode"`
	LatencyMs     int64  `json:"latencyMs"`
	AnswerDelayMs int64  `json:"answerDelayMs"`
	Retcode       int    `json:"retcode,omitempty"`
}

// LoginsResult lists the trade server's logins.
type LoginsResult struct {
	Logins []int64 `json:"logins"`
}

// StateResult is the admin view of the simulator: its fault and its logins.
type StateResult struct {
	Fault  FaultState `json:"fault"`
	Logins []int64    `json:"logins"`
}

type quoteReq struct {
	Symbol string `json:"symbol"`
	Bid    string `json:"bid"`
	Ask    string `json:"ask"`
}

type depositReq struct {
	Login  int64  `json:"login"`
	Amount string `json:"amount"`
}

type accountReq struct {
	Login        int64 `json:"login"`
	TradeAllowed *bool `json:"tradeAllowed"`
}
