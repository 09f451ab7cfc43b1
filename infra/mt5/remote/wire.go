package remote

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"tradesvc/infra/mt5"
)

// Wire error codes. They are part of the protocol: the client maps each back to its
// sentinel so that errors.Is works across the process boundary.
const (
	codeNoAnswer      = "no_answer"
	codeTimeout       = "timeout"
	codeDisconnected  = "disconnected"
	codeUnknownLogin  = "unknown_login"
	codeUnknownSymbol = "unknown_symbol"
	codeNoQuote       = "no_quote"
	codeClosed        = "closed"
	codeCursorAhead   = "cursor_ahead"
	codeCanceled      = "canceled"
	codeDeadline      = "deadline_exceeded"
	codeBadRequest    = "bad_request"
	codeUnauthorized  = "unauthorized"
	codeNotFound      = "not_found"
	codeInternal      = "internal"
)

// sentinels maps wire codes to the errors they stand for, in the order the server tests
// them (the first match names the code).
var sentinels = []struct {
	code   string
	err    error
	status int
}{
	{codeNoAnswer, mt5.ErrNoAnswer, http.StatusGatewayTimeout},
	{codeTimeout, mt5.ErrTimeout, http.StatusGatewayTimeout},
	{codeDisconnected, mt5.ErrDisconnected, http.StatusServiceUnavailable},
	{codeUnknownLogin, mt5.ErrUnknownLogin, http.StatusNotFound},
	{codeUnknownSymbol, mt5.ErrUnknownSymbol, http.StatusNotFound},
	{codeNoQuote, mt5.ErrNoQuote, http.StatusNotFound},
	{codeClosed, mt5.ErrClosed, http.StatusServiceUnavailable},
	{codeCursorAhead, mt5.ErrCursorAhead, http.StatusConflict},
	{codeCanceled, context.Canceled, 499},
	{codeDeadline, context.DeadlineExceeded, http.StatusGatewayTimeout},
	{codeBadRequest, ErrBadRequest, http.StatusBadRequest},
	{codeUnauthorized, ErrUnauthorized, http.StatusUnauthorized},
	{codeNotFound, ErrNotFound, http.StatusNotFound},
}

// ErrBadRequest is returned (client side) when the server refused the request's arguments,
// and used (server side) to mark argument errors of the admin API.
var ErrBadRequest = errors.New("remote: bad request")

// ErrUnauthorized is returned when the server refused the bearer token.
var ErrUnauthorized = errors.New("remote: unauthorized (wrong or missing token)")

// ErrNotFound is returned for an endpoint the server does not have (an older or newer peer).
var ErrNotFound = errors.New("remote: no such endpoint")

// wireError is the JSON body of every non-2xx answer.
type wireError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// classify names the wire code and HTTP status of err.
func classify(err error) (code string, status int) {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code, s.status
		}
	}
	return codeInternal, http.StatusInternalServerError
}

// RemoteError is an error answered by the server. It unwraps to the sentinel its code names
// (mt5.ErrUnknownLogin, mt5.ErrNoAnswer, ...), so callers test it with errors.Is.
type RemoteError struct {
	Status  int    // HTTP status of the answer
	Code    string // wire code
	Message string // the server's error text
	err     error  // sentinel, nil for unknown codes
}

func (e *RemoteError) Error() string {
	if strings.HasPrefix(e.Message, "remote: ") {
		return e.Message
	}
	if e.Message != "" {
		return "remote: " + e.Message
	}
	return "remote: " + e.Code
}

// Unwrap returns the sentinel of the code, if any.
func (e *RemoteError) Unwrap() error { return e.err }

func newRemoteError(status int, we wireError) *RemoteError {
	re := &RemoteError{Status: status, Code: we.Error, Message: we.Message}
	for _, s := range sentinels {
		if s.code == we.Error {
			re.err = s.err
			break
		}
	}
	return re
}

// Request bodies of the port endpoints. Responses are the mt5 types themselves, always
// marshalled through a pointer so that apd.Decimal (pointer-receiver MarshalText) encodes
// as its exact text.

type loginTagReq struct {
	Login int64  `json:"login"`
	Tag   string `json:"tag"`
}

type pollReq struct {
	After  uint64 `json:"after"`
	Max    int    `json:"max"`
	WaitMs int64  `json:"waitMs"`
}

type loginReq struct {
	Login int64 `json:"login"`
}

type historyReq struct {
	Login int64 `json:"login"`
	From  int64 `json:"from"`
	To    int64 `json:"to"`
}

type symbolReq struct {
	Symbol string `json:"symbol"`
}

type factsResp struct {
	Facts []mt5.Fact `json:"facts"`
}

type ticksResp struct {
	Ticks []mt5.Tick `json:"ticks"`
}
