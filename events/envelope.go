// Package events is the event catalogue: one Go type per event with a versioned name, the
// envelope every event travels in, the JSON codec (decimals as strings) and the topic
// catalogue. It is the contract between every other folder and does no I/O.
package events

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"time"

	json "github.com/goccy/go-json"
)

// Event is implemented by every payload type of the catalogue.
type Event interface {
	// EventType is the versioned name, such as "OrderRequested_v1". It never changes for a
	// given Go type: a new shape gets a new version and a new type.
	EventType() string
	// PartitionKey keeps one account's (login) or one symbol's events in order.
	PartitionKey() string
}

// AccountEvent is implemented by the events of one trading account (commands, executions
// and trade-server facts), keyed by its login.
type AccountEvent interface {
	Event
	AccountLogin() int64
}

// Envelope is what travels on Kafka: identity, type, time, ordering key, correlation and the
// payload. It is the unit an auditor reads when replaying the log.
type Envelope struct {
	// ID is unique per event (random, 128 bits, hex); consumers deduplicate on it when the
	// payload carries no natural key.
	ID string `json:"id"`
	// Type is the payload's EventType.
	Type string `json:"type"`
	// OccurredAt is when the producer recorded the event, Unix ms.
	OccurredAt int64 `json:"occurredAt"`
	// Key is the partition key (login or symbol or entity).
	Key string `json:"key"`
	// CorrelationID ties every event of one client operation together (the operation id).
	CorrelationID string `json:"correlationId,omitempty"`
	// CausationID is the ID of the event that caused this one, if any.
	CausationID string `json:"causationId,omitempty"`
	// Producer names the component and instance that appended the event.
	Producer string `json:"producer,omitempty"`
	// Payload is the event itself as JSON.
	Payload json.RawMessage `json:"payload"`
}

// NewID returns a fresh random event id.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("events: no randomness: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// Wrap puts e into a new envelope stamped with now.
func Wrap(e Event, now time.Time, correlationID, causationID, producer string) (Envelope, error) {
	payload, err := json.Marshal(e) // e is an interface holding a pointer: decimals marshal as strings.
	if err != nil {
		return Envelope{}, fmt.Errorf("events: encode %s: %w", e.EventType(), err)
	}
	return Envelope{
		ID:            NewID(),
		Type:          e.EventType(),
		OccurredAt:    now.UnixMilli(),
		Key:           e.PartitionKey(),
		CorrelationID: correlationID,
		CausationID:   causationID,
		Producer:      producer,
		Payload:       payload,
	}, nil
}

// Marshal encodes the envelope.
func (env Envelope) Marshal() ([]byte, error) { return json.Marshal(env) }

// UnmarshalEnvelope decodes an envelope without decoding its payload.
func UnmarshalEnvelope(b []byte) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return env, fmt.Errorf("events: decode envelope: %w", err)
	}
	if env.Type == "" || env.ID == "" {
		return env, errors.New("events: envelope without id or type")
	}
	return env, nil
}

// ErrUnknownType is returned by Decode for a type this build does not know. Consumers skip
// such events (a newer producer may have added them) rather than fail.
var ErrUnknownType = errors.New("events: unknown event type")

// Decode returns the typed payload of env (always a pointer, such as *OrderRequested).
func Decode(env Envelope) (Event, error) {
	ctor, ok := registry[env.Type]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownType, env.Type)
	}
	e := ctor()
	if err := json.Unmarshal(env.Payload, e); err != nil {
		return nil, fmt.Errorf("events: decode %s: %w", env.Type, err)
	}
	if mayHoldNonFinite(env.Payload) {
		if err := checkFinite(reflect.ValueOf(e), env.Type); err != nil {
			return nil, err
		}
	}
	return e, nil
}

var registry = map[string]func() Event{}

func register(ctor func() Event) {
	name := ctor().EventType()
	if _, dup := registry[name]; dup {
		panic("events: duplicate event type " + name)
	}
	registry[name] = ctor
}

// Types lists every registered event type name.
func Types() []string {
	out := make([]string, 0, len(registry))
	for name := range registry {
		out = append(out, name)
	}
	return out
}

// CorrelationOf is the operation id an event belongs to, the envelope's correlation id: set
// for command and execution events, empty for trade-server facts and market data.
func CorrelationOf(e Event) string {
	switch x := e.(type) {
	case Command:
		return x.OperationHeader().OperationID
	case *ExecutionSent:
		return x.OperationID
	case *ExecutionOutcome:
		return x.OperationID
	}
	return ""
}
