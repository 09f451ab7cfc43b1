package kafka

import (
	"errors"

	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// KeyMetadata is the message metadata entry whose value becomes the Kafka message key
// (the partition key: login, symbol or entity). Every message the service publishes must
// carry it; the key also comes back in the metadata of consumed messages.
const KeyMetadata = "partition_key"

// TypeMetadata is the message metadata entry (so a Kafka header) that carries the event
// type, so that a consumer skips the types it does not apply without decoding them.
const TypeMetadata = "event_type"

// FactSeqMetadata is the message metadata entry (a Kafka header) that carries a trade-server
// fact's feed sequence, so that a consumer skips a copy of a fact it applied already without
// decoding it.
const FactSeqMetadata = "fact_seq"

// ErrNoKey is returned when a message to publish has no KeyMetadata.
var ErrNoKey = errors.New("kafka: message has no " + KeyMetadata + " metadata")

// WithKey sets the partition key of msg and returns msg.
func WithKey(msg *message.Message, key string) *message.Message {
	msg.Metadata.Set(KeyMetadata, key)
	return msg
}

// Marshaler returns the watermill-kafka marshaler of the service: watermill's wire format
// (payload as the value, metadata and message UUID as headers) with the Kafka key taken
// from KeyMetadata. A message without a key is refused rather than spread round-robin,
// because unkeyed events of one account could overtake each other.
func Marshaler() wkafka.MarshalerUnmarshaler {
	return wkafka.NewWithPartitioningMarshaler(func(_ string, msg *message.Message) (string, error) {
		key := msg.Metadata.Get(KeyMetadata)
		if key == "" {
			return "", ErrNoKey
		}
		return key, nil
	})
}
