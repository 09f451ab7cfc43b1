package remote

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"time"

	"tradesvc/infra/mt5"
)

// Long-poll bounds of /port/facts and /port/ticks: a poll answers (possibly empty) after at
// most MaxPollWait, well under the idle timeouts of any proxy or client in between.
const (
	MaxPollWait     = 25 * time.Second
	DefaultPollWait = 20 * time.Second
	// MaxPollBatch caps the number of facts or ticks of one answer.
	MaxPollBatch = 10000
	// maxBody caps a request body; the largest legitimate one is a TradeRequest.
	maxBody = 1 << 20
)

// ServerConfig configures NewServer.
type ServerConfig struct {
	// Port is the trade server being exposed (the simulator).
	Port mt5.TradeServer
	// Admin is the simulator's admin hooks; nil leaves the /admin endpoints answering 404.
	Admin Admin
	// Token is the bearer token every request must carry.
	Token string
	// Logger receives one line per failed request; nil discards.
	Logger *slog.Logger
	// Context, when set, is the serving role's lifetime: once it ends, waiting long polls
	// answer at once (empty) so that http.Server.Shutdown is not held up for a poll's wait.
	Context context.Context
}

// Validate reports a missing port or token.
func (c ServerConfig) Validate() error {
	if c.Port == nil {
		return errors.New("remote: ServerConfig.Port is nil")
	}
	if strings.TrimSpace(c.Token) == "" {
		return errors.New("remote: ServerConfig.Token is empty")
	}
	return nil
}

// server is the http.Handler returned by NewServer.
type server struct {
	port  mt5.TradeServer
	admin Admin
	token []byte
	log   *slog.Logger
	mux   *http.ServeMux
	life  context.Context
}

// NewServer returns the HTTP handler of the port and admin API. Serve it on loopback only
// (plain HTTP); it refuses every request without the right bearer token with a 401.
// A config that fails Validate is a wiring bug: NewServer panics with the reason (call
// Validate first to handle it as an error).
func NewServer(cfg ServerConfig) http.Handler {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	life := cfg.Context
	if life == nil {
		life = context.Background()
	}
	s := &server{port: cfg.Port, admin: cfg.Admin, token: []byte(cfg.Token), log: log, mux: http.NewServeMux(), life: life}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: %s %s", ErrNotFound, r.Method, r.URL.Path))
	})
	s.routePort()
	if cfg.Admin != nil {
		s.routeAdmin()
	}
	return s
}

// ServeHTTP authenticates and dispatches.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, fmt.Errorf("%w", ErrUnauthorized))
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tok), s.token) == 1
}

// handle registers a POST endpoint whose body decodes into Req and whose result is written
// as JSON. fn must return a pointer (or slice) so that decimals marshal as text.
func handle[Req any](s *server, path string, fn func(r *http.Request, req *Req) (any, error)) {
	s.mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		req := new(Req)
		if err := decodeBody(w, r, req); err != nil {
			writeError(w, err)
			return
		}
		out, err := fn(r, req)
		if err != nil {
			if code, _ := classify(err); code == codeInternal || code == codeBadRequest {
				s.log.Warn("remote: request failed", "path", path, "err", err)
			}
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

func decodeBody(w http.ResponseWriter, r *http.Request, into any) error {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(body)
	if err := dec.Decode(into); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty body: every field keeps its zero value
		}
		return fmt.Errorf("%w: body: %v", ErrBadRequest, err)
	}
	return nil
}

// writeJSON writes v, which must be a pointer or a slice: a struct value holding an
// apd.Decimal would marshal the decimal's internals instead of its text.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if k := reflect.ValueOf(v).Kind(); k != reflect.Pointer && k != reflect.Slice {
		writeError(w, fmt.Errorf("remote: internal: response of kind %s is not a pointer", k))
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, fmt.Errorf("remote: encode response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, err error) {
	code, status := classify(err)
	b, _ := json.Marshal(&wireError{Error: code, Message: err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
