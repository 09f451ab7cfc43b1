package gateway

import (
	"errors"
	"log/slog"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"tradesvc/events"
)

// envelope is the error body of every failed response. An operation that was recorded and
// then rejected also carries its status, clientOrderId and login.
type envelope struct {
	Code          events.Code `json:"code"`
	Msg           string      `json:"msg"`
	MT5RetCode    int         `json:"mt5RetCode,omitempty"`
	Status        string      `json:"status,omitempty"`
	ClientOrderID string      `json:"clientOrderId,omitempty"`
	Login         int64       `json:"login,omitempty"`
}

// statusError is a rejection answered with an HTTP status other than its code's own
// (404/405/413/418 and the like).
type statusError struct {
	status int
	code   events.Code
	msg    string
	retry  int // Retry-After seconds, 0 = none
}

func (e *statusError) Error() string { return "http " + strconv.Itoa(e.status) + ": " + e.msg }

// writeError renders err as the error envelope with the right status. It is the single place
// where errors become HTTP: rejections carry their code, unexpected errors become -1001.
func writeError(c *fiber.Ctx, log *slog.Logger, err error) error {
	var se *statusError
	if errors.As(err, &se) && se.retry > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(se.retry))
	}
	status, env := errorStatus(err)
	var rf storeFailure
	switch {
	case status == fiber.StatusInternalServerError:
		log.Error("gateway: internal error", "method", c.Method(), "path", c.Path(), "err", err)
	case errors.As(err, &rf):
		log.Error("gateway: store failed", "method", c.Method(), "path", c.Path(), "err", rf.err)
	}
	return send(c, status, env)
}

// errorEnvelope is the body err renders as (a batch slot holds it without a status).
func errorEnvelope(err error) envelope {
	_, env := errorStatus(err)
	return env
}

func errorStatus(err error) (int, envelope) {
	var rej *events.Rejection
	var op *RejectedOperation
	var se *statusError
	var fe *fiber.Error
	var rf storeFailure
	switch {
	case errors.As(err, &rf): // first: what it wraps would read as -1001
		return errorStatus(errUnavailable)
	case errors.As(err, &op):
		return op.HTTPStatus(), envelope{Code: op.Code, Msg: op.Msg, MT5RetCode: op.Retcode, Status: op.Status,
			ClientOrderID: op.ClientOrderID, Login: op.Login}
	case errors.As(err, &rej):
		return rej.Code.HTTPStatus(), envelope{Code: rej.Code, Msg: rej.Msg, MT5RetCode: rej.Retcode}
	case errors.As(err, &se):
		return se.status, envelope{Code: se.code, Msg: se.msg}
	case errors.As(err, &fe):
		return fe.Code, fiberEnvelope(fe)
	}
	return fiber.StatusInternalServerError, envelope{Code: events.CodeInternal, Msg: "Internal error; unable to process your request. Please try again."}
}

// fiberEnvelope maps errors raised by Fiber itself (routing, body size, malformed HTTP).
func fiberEnvelope(fe *fiber.Error) envelope {
	switch fe.Code {
	case fiber.StatusNotFound:
		return envelope{Code: events.CodeNotSupported, Msg: "Unknown endpoint."}
	case fiber.StatusMethodNotAllowed:
		return envelope{Code: events.CodeNotSupported, Msg: "Method not allowed for this endpoint."}
	case fiber.StatusRequestEntityTooLarge:
		return envelope{Code: events.CodeTooManyParams, Msg: "Request body too large."}
	case fiber.StatusRequestHeaderFieldsTooLarge:
		return envelope{Code: events.CodeTooManyParams, Msg: "Request headers too large."}
	case fiber.StatusRequestTimeout:
		return envelope{Code: events.CodeUnavailable, Msg: "Request timed out."}
	}
	if fe.Code >= 500 {
		return envelope{Code: events.CodeInternal, Msg: "Internal error; unable to process your request. Please try again."}
	}
	return envelope{Code: events.CodeNotSupported, Msg: "Malformed HTTP request."}
}

// storeFailure is a read, or a listen key's create, keep-alive or delete, that failed
// otherwise than with a rejection: its store could not answer (Postgres or ClickHouse down).
// None of them changes anything a retry would double, so it answers -1000, service
// unavailable (retry with backoff), as a key lookup or an order's account check that cannot
// reach the store does, rather than -1001.
type storeFailure struct{ err error }

func (e storeFailure) Error() string { return "store failed: " + e.err.Error() }
func (e storeFailure) Unwrap() error { return e.err }

// unavailable turns err into a storeFailure unless it is a rejection (or nil).
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	if status, _ := errorStatus(err); status == fiber.StatusInternalServerError {
		return storeFailure{err}
	}
	return err
}

func send(c *fiber.Ctx, status int, body envelope) error {
	c.Status(status)
	return c.JSON(body)
}

// Rejections the pipeline raises.
var (
	errKeyHeader   = events.Reject(events.CodeUnauthorized, "API-key header missing or malformed.")
	errRejectedKey = events.Reject(events.CodeRejectedKey, "Invalid API-key, IP, or permissions for action.")
	errTradingOff  = events.Reject(events.CodeTradingOff, "Trading is switched off; retry with backoff.")
	errNoExecutor  = events.Reject(events.CodeNoConnection, "No connection to the trade server; retry with backoff.")
	errUnavailable = events.ErrUnavailable
	errOutOfScope  = events.Reject(events.CodeLoginOutOfScope, "Login is out of scope, nonexistent or inactive.")
	errTradeOff    = events.Reject(events.CodeAccountTradeOff, "Trading is disabled for the account.")
	errRetired     = events.Reject(events.CodeRetired, "This endpoint has been retired.")
)
