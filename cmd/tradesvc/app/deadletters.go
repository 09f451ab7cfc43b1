package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"tradesvc/events"
	"tradesvc/infra/config"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
)

// DeadLetter is one parked message as `tradesvc dlq list` prints it.
type DeadLetter struct {
	DLQTopic  string `json:"dlqTopic"`
	DLQOffset int64  `json:"dlqOffset"`
	// Consumer is the projection (or "executor") that parked it; Topic, Partition and
	// Offset say where the original is in the log.
	Consumer  string `json:"consumer"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	// Value is the original bytes as text, ValueBase64 when they are not UTF-8.
	Value       string    `json:"value,omitempty"`
	ValueBase64 []byte    `json:"valueBase64,omitempty"`
	EventType   string    `json:"eventType,omitempty"`
	Error       string    `json:"error"`
	Attempts    int       `json:"attempts"`
	LoggedAt    time.Time `json:"loggedAt,omitzero"`
	ParkedAt    time.Time `json:"parkedAt,omitzero"`
	Replayed    bool      `json:"replayed"`
	ReplayedAt  time.Time `json:"replayedAt,omitzero"`

	raw kafka.DeadLetter
}

// ListDeadLetters reads the dead-letter topics of every topic of the log; all includes the
// parked messages already replayed.
func ListDeadLetters(ctx context.Context, cfg config.Config, all bool) ([]DeadLetter, error) {
	kcfg := kafka.Config{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix, ClientID: "tradesvc-dlq"}
	var topics []string
	for _, t := range events.DeadLetterTopics() {
		topics = append(topics, kcfg.Topic(t.Name))
	}
	raw, err := kafka.ReadDeadLetters(ctx, kcfg, topics)
	if err != nil {
		return nil, err
	}
	out := make([]DeadLetter, 0, len(raw))
	for _, dl := range raw {
		if dl.Replayed && !all {
			continue
		}
		e := DeadLetter{DLQTopic: dl.DLQTopic, DLQOffset: dl.DLQOffset, Consumer: strings.TrimPrefix(dl.Group, cfg.TopicPrefix),
			Topic: dl.Topic, Partition: dl.Partition, Offset: dl.Offset, Key: string(dl.Key), Error: dl.Error,
			Attempts: dl.Attempts, LoggedAt: dl.Timestamp, ParkedAt: dl.ParkedAt, Replayed: dl.Replayed,
			ReplayedAt: dl.ReplayedAt, raw: dl}
		if utf8.Valid(dl.Value) {
			e.Value = string(dl.Value)
		} else {
			e.ValueBase64 = dl.Value
		}
		if env, err := events.UnmarshalEnvelope(dl.Value); err == nil {
			e.EventType = env.Type
		}
		out = append(out, e)
	}
	return out, nil
}

// ReplayFailure is a parked message `tradesvc dlq replay` could not re-apply; it stays
// parked (pending) for the next replay.
type ReplayFailure struct {
	DeadLetter
	ReplayError string `json:"replayError"`
}

// ReplayResult is what `tradesvc dlq replay` did.
type ReplayResult struct {
	Replayed []DeadLetter    `json:"replayed"`
	Failed   []ReplayFailure `json:"failed"`
	Skipped  []ReplayFailure `json:"skipped"`
}

// ReplayDeadLetters re-applies the pending parked messages (of one projection, when
// projection is not empty) through the projection that parked them, in the order they were
// parked, and marks each one that applies as replayed. What it does and why it is safe:
//
//   - A parked message is decoded by this build and handed to the projection's Apply, as
//     the projection's own consumer would have done. It is not appended to the log again:
//     every other consumer of the topic already applied it (or parked it itself), and a
//     re-append would reach them twice under a new offset.
//   - Applying it late is safe because every projection applies events idempotently and
//     moves a row only forward by the event's own sequence or time, never by arrival order
//     (reference data by spec time and observation time, the trading read models and the
//     ClickHouse bars by feed sequence; a late tick or deal is inserted, a bar it is older
//     than is left alone). A replay interrupted after Apply and before its mark applies the
//     event again, harmlessly.
//   - A message that still cannot be decoded or applied stays parked and is reported under
//     failed; a message parked by a consumer that is not a projection (the executor: a
//     command is never re-executed late) is left parked and reported under skipped.
func ReplayDeadLetters(ctx context.Context, cfg config.Config, log *slog.Logger, projection string) (res ReplayResult, err error) {
	if projection != "" && !isProjection(projection) {
		return res, fmt.Errorf("unknown projection %q (want one of %s)", projection, ProjectionNames())
	}
	pending, err := ListDeadLetters(ctx, cfg, false)
	if err != nil {
		return res, err
	}
	res = ReplayResult{Replayed: []DeadLetter{}, Failed: []ReplayFailure{}, Skipped: []ReplayFailure{}}
	if len(pending) == 0 {
		return res, nil
	}
	cfg.Roles = []string{config.RoleProjector}
	a, err := New(ctx, cfg, log)
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := a.Close(); cerr != nil {
			err = fmt.Errorf("%w (and closing: %v)", err, cerr)
		}
	}()
	set, err := a.projectionSet(nil)
	if err != nil {
		return res, err
	}
	for _, dl := range pending {
		name := projectionOf(dl.Consumer)
		if projection != "" && name != projection {
			continue
		}
		p, ok := set[name]
		if !ok {
			res.Skipped = append(res.Skipped, ReplayFailure{DeadLetter: dl,
				ReplayError: "parked by " + dl.Consumer + ", which is not a projection: it is never replayed"})
			continue
		}
		msg, derr := batch.Decode(dl.raw.Message())
		if derr != nil {
			res.Failed = append(res.Failed, ReplayFailure{DeadLetter: dl, ReplayError: "still undecodable: " + derr.Error()})
			continue
		}
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		aerr := p.Apply(actx, []batch.Message{msg})
		cancel()
		if aerr != nil {
			res.Failed = append(res.Failed, ReplayFailure{DeadLetter: dl, ReplayError: aerr.Error()})
			continue
		}
		if err := a.deadLetters.MarkReplayed(ctx, dl.raw); err != nil {
			return res, fmt.Errorf("%s offset %d applied but not marked replayed (a later replay applies it again, harmlessly): %w",
				dl.DLQTopic, dl.DLQOffset, err)
		}
		dl.Replayed = true
		res.Replayed = append(res.Replayed, dl)
		log.Info("dead letter replayed", "projection", name, "topic", dl.Topic, "partition", dl.Partition, "offset", dl.Offset)
	}
	return res, nil
}

func isProjection(name string) bool {
	for _, n := range projectionNames {
		if n == name {
			return true
		}
	}
	return false
}

// projectionOf is the projection a consumer group belongs to: a replay group
// (projections.Replay, "<name>.replay.<n>") parks under its projection's name.
func projectionOf(consumer string) string {
	if i := strings.Index(consumer, ".replay."); i > 0 {
		return consumer[:i]
	}
	return consumer
}
