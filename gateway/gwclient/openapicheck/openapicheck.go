// Package openapicheck validates the gateway's responses against the REST contract,
// docs/openapi.yaml (OpenAPI 3.1), with kin-openapi's openapi3filter: the status must be one
// the operation declares, the declared headers (the usage headers, Retry-After) present and
// well-formed, and the body must match the response schema. A request outside every declared
// operation must be answered as the document's rules for routing errors say: 404 for an
// unknown path, 405 with Allow for a known path and another method, in the error envelope.
//
// gwclient.Client.Check takes (*Validator).Check, so every response a test receives is
// validated and a document that drifted from the service fails the test run.
package openapicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"tradesvc/gateway/gwclient"
)

// DocPath is the contract's path from the repository root.
const DocPath = "docs/openapi.yaml"

// Validator checks responses against one loaded document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// Load reads and validates the OpenAPI document at path.
func Load(path string) (*Validator, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: %w", err)
	}
	return Parse(data)
}

// Parse validates an OpenAPI document held in memory (tests of the validator itself use it
// to prove that a document disagreeing with the service is caught).
func Parse(data []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: load: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapicheck: the document is not valid OpenAPI: %w", err)
	}
	// Tests serve on ephemeral ports: match paths whatever the host.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: router: %w", err)
	}
	return &Validator{doc: doc, router: router}, nil
}

// Doc is the loaded document.
func (v *Validator) Doc() *openapi3.T { return v.doc }

// RepoRoot finds the repository root: the nearest directory at or above the working
// directory that holds go.mod and the contract (go test runs in the package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, DocPath)); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("openapicheck: no directory above the working directory holds go.mod and " + DocPath)
		}
		dir = parent
	}
}

var (
	repoOnce sync.Once
	repoV    *Validator
	repoErr  error
)

// Repo is the validator of the repository's own docs/openapi.yaml, loaded once per process.
func Repo() (*Validator, error) {
	repoOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			repoErr = err
			return
		}
		repoV, repoErr = Load(filepath.Join(root, DocPath))
	})
	return repoV, repoErr
}

// Check validates one exchange: req as sent (its body is not read) and res as received. It
// has the signature of gwclient.Client.Check.
func (v *Validator) Check(req *http.Request, res *gwclient.Response) error {
	if err := v.check(req, res); err != nil {
		return fmt.Errorf("%s %s answered %d, which docs/openapi.yaml does not allow: %w\nbody: %s",
			req.Method, req.URL.Path, res.Status, err, truncate(res.Body))
	}
	return nil
}

func (v *Validator) check(req *http.Request, res *gwclient.Response) error {
	// The router matches on the URL alone; a copy keeps the caller's request untouched.
	probe := &http.Request{Method: req.Method, URL: &url.URL{Path: req.URL.Path, RawQuery: req.URL.RawQuery}, Header: req.Header}
	if v.streamPath(req.URL.Path) {
		return v.streamAnswer(res)
	}
	route, pathParams, err := v.router.FindRoute(probe)
	var rerr *routers.RouteError
	switch {
	case errors.As(err, &rerr) && rerr.Reason == routers.ErrPathNotFound.Error():
		return v.routingError(res, http.StatusNotFound)
	case errors.As(err, &rerr) && rerr.Reason == routers.ErrMethodNotAllowed.Error():
		return v.routingError(res, http.StatusMethodNotAllowed)
	case err != nil:
		return fmt.Errorf("route: %w", err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: probe, PathParams: pathParams, Route: route},
		Status:                 res.Status,
		Header:                 res.Header,
		Body:                   io.NopCloser(bytes.NewReader(res.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// routingError checks an answer to a request no operation declares: the status the
// document's routing rules give, the error envelope, and for 405 the Allow header.
func (v *Validator) routingError(res *gwclient.Response, want int) error {
	if res.Status != want {
		return fmt.Errorf("no operation declares this method and path, so the answer must be %d, not %d", want, res.Status)
	}
	if want == http.StatusMethodNotAllowed && res.Header.Get("Allow") == "" {
		return errors.New("405 without an Allow header")
	}
	return v.envelope(res)
}

// envelope checks that res is JSON in the document's error envelope.
func (v *Validator) envelope(res *gwclient.Response) error {
	envelope := v.doc.Components.Schemas["Error"]
	if envelope == nil || envelope.Value == nil {
		return errors.New("the document has no components.schemas.Error")
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("content type %q, want application/json", ct)
	}
	var body any
	if err := json.Unmarshal(res.Body, &body); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	if err := envelope.Value.VisitJSON(body, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("body is not the error envelope: %w", err)
	}
	return nil
}

// streamPath reports whether path is one of the document's x-stream-paths (a {param} matches
// one segment).
func (v *Validator) streamPath(path string) bool {
	list, _ := v.doc.Extensions["x-stream-paths"].([]any)
	for _, p := range list {
		tmpl, _ := p.(string)
		want, got := strings.Split(tmpl, "/"), strings.Split(path, "/")
		if len(want) != len(got) {
			continue
		}
		match := true
		for i := range want {
			if !(strings.HasPrefix(want[i], "{") && got[i] != "") && want[i] != got[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// streamAnswer checks an HTTP answer of a stream URL: 400 (-1020) to plain HTTP, 503 (-1008)
// to an upgrade refused for capacity, in the error envelope.
func (v *Validator) streamAnswer(res *gwclient.Response) error {
	want := map[int]int{http.StatusBadRequest: -1020, http.StatusServiceUnavailable: -1008}
	code, ok := want[res.Status]
	if !ok {
		return fmt.Errorf("a stream URL answers plain HTTP 400 or 503, not %d", res.Status)
	}
	if err := v.envelope(res); err != nil {
		return err
	}
	var body struct{ Code int }
	if err := json.Unmarshal(res.Body, &body); err != nil || body.Code != code {
		return fmt.Errorf("a stream URL's %d carries code %d, want %d", res.Status, body.Code, code)
	}
	return nil
}

func truncate(b []byte) string {
	const max = 600
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
