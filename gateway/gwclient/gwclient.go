// Package gwclient builds and sends requests to the REST gateway the way a client of the
// spec does: the X-SVC-APIKEY header, and for signed endpoints timestamp, recvWindow and a
// lowercase hex HMAC-SHA256 signature over the query string followed by the body. Tests,
// end-to-end suites and benchmarks share it.
package gwclient

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// HeaderAPIKey is the key header.
const HeaderAPIKey = "X-SVC-APIKEY"

// Placement says where the parameters of a request travel.
type Placement int

const (
	// InQuery puts every parameter (and the signature) in the query string.
	InQuery Placement = iota
	// InBody puts every parameter (and the signature) in a form body.
	InBody
	// Split puts the parameters in the query string and timestamp, recvWindow and signature
	// in the body (the two parts are signed joined without a separator).
	Split
)

// Client talks to one gateway with one key.
type Client struct {
	// BaseURL is like https://127.0.0.1:8443 (no trailing slash).
	BaseURL string
	// APIKey and Secret are the credentials; APIKey empty sends no key header.
	APIKey string
	Secret []byte
	// HTTP is the client used (NewHTTPClient builds one that trusts a CA).
	HTTP *http.Client
	// Now is the clock for timestamps (default time.Now).
	Now func() time.Time
	// RecvWindow is sent when non-zero.
	RecvWindow int64
	// Check, when set, is called with every request sent and its buffered response; an error
	// it returns is returned with the response (openapicheck validates against the contract).
	Check func(*http.Request, *Response) error
}

// Response is a buffered answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ErrorBody is the error envelope.
type ErrorBody struct {
	Code       int    `json:"code"`
	Msg        string `json:"msg"`
	MT5RetCode int    `json:"mt5RetCode,omitempty"`
}

// Err decodes the body as the error envelope; ok is false when it is not one.
func (r *Response) Err() (ErrorBody, bool) {
	var e ErrorBody
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code == 0 {
		return e, false
	}
	return e, true
}

// JSON decodes the body into v.
func (r *Response) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// NewHTTPClient returns a keep-alive client trusting the PEM CA (nil: system roots), with
// up to conns connections per host.
func NewHTTPClient(caPEM []byte, conns int) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("gwclient: no certificate in CA PEM")
		}
		cfg.RootCAs = pool
	}
	tr := &http.Transport{TLSClientConfig: cfg, MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: false}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, nil
}

// Sign returns the lowercase hex HMAC-SHA256 of totalParams under secret.
func Sign(secret []byte, totalParams string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(totalParams))
	return hex.EncodeToString(m.Sum(nil))
}

// SignParams adds timestamp (and recvWindow when > 0) to params and returns the raw query
// string and body with the signature appended last where placement puts it.
func SignParams(secret []byte, params url.Values, placement Placement, timestamp, recvWindow int64) (rawQuery, body string) {
	all := url.Values{}
	for k, v := range params {
		all[k] = append([]string(nil), v...)
	}
	signing := url.Values{}
	signing.Set("timestamp", strconv.FormatInt(timestamp, 10))
	if recvWindow > 0 {
		signing.Set("recvWindow", strconv.FormatInt(recvWindow, 10))
	}
	switch placement {
	case InQuery:
		for k, v := range signing {
			all[k] = v
		}
		rawQuery = all.Encode()
		rawQuery += "&signature=" + Sign(secret, rawQuery)
	case InBody:
		for k, v := range signing {
			all[k] = v
		}
		body = all.Encode()
		body += "&signature=" + Sign(secret, body)
	case Split:
		rawQuery = all.Encode()
		body = signing.Encode()
		body += "&signature=" + Sign(secret, rawQuery+body)
	}
	return rawQuery, body
}

// Public sends a request without a key header; params go in the query string.
func (c *Client) Public(ctx context.Context, method, path string, params url.Values) (*Response, error) {
	return c.send(ctx, method, path, params.Encode(), "", false)
}

// Keyed sends a MARKET_DATA / USER_STREAM style request: key header, no signature.
func (c *Client) Keyed(ctx context.Context, method, path string, params url.Values) (*Response, error) {
	return c.send(ctx, method, path, params.Encode(), "", true)
}

// Signed sends a USER_DATA / TRADE request with params placed as asked.
func (c *Client) Signed(ctx context.Context, method, path string, params url.Values, placement Placement) (*Response, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	q, b := SignParams(c.Secret, params, placement, now().UnixMilli(), c.RecvWindow)
	return c.send(ctx, method, path, q, b, true)
}

// Raw sends exactly the given raw query and body (body as a form when non-empty).
func (c *Client) Raw(ctx context.Context, method, path, rawQuery, body string, withKey bool) (*Response, error) {
	return c.send(ctx, method, path, rawQuery, body, withKey)
}

func (c *Client) send(ctx context.Context, method, path, rawQuery, body string, withKey bool) (*Response, error) {
	u := c.BaseURL + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("gwclient: build request: %w", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if withKey && c.APIKey != "" {
		req.Header.Set(HeaderAPIKey, c.APIKey)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gwclient: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("gwclient: read body: %w", err)
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Body: b}
	if c.Check != nil {
		if err := c.Check(req, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// ClockOffset is the server's clock minus the local clock now, read from GET /v1/time with
// half the round trip assumed each way. A client that signs with now plus the offset never
// earns -1021 from a skewed local clock.
func ClockOffset(ctx context.Context, c *Client, now func() time.Time) (time.Duration, error) {
	before := now()
	res, err := c.Public(ctx, http.MethodGet, "/v1/time", nil)
	if err != nil {
		return 0, err
	}
	after := now()
	var body struct {
		ServerTime int64 `json:"serverTime"`
	}
	if res.Status != http.StatusOK || res.JSON(&body) != nil || body.ServerTime == 0 {
		return 0, fmt.Errorf("GET /v1/time answered %d: %s", res.Status, res.Body)
	}
	local := before.Add(after.Sub(before) / 2)
	return time.UnixMilli(body.ServerTime).Sub(local), nil
}
