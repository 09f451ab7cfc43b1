#!/usr/bin/env bash
# Proves the Kafka event log is durable on disk: appends a few records to a fresh topic of the
# given profile's broker, stops the broker, starts it again, and reads the records back.
# `make test` runs it against the test broker after the Go suite.
#
#   infra/local/durability_check.sh [run|test]      (default test)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

profile=${1:-test}
case $profile in
run) DATA=$ROOT/.run PORT=19092 ;;
test) DATA=$ROOT/.run/test PORT=29092 ;;
*) die "unknown profile '$profile' (run|test)" ;;
esac
kafka() { "$HERE/kafka.sh" "$@"; }
bootstrap=127.0.0.1:$PORT
topic=durability.check.$(date +%s).$$
want=$(printf 'record-%s\n' 1 2 3)

kafka tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic "$topic" \
  --partitions 1 --replication-factor 1 >/dev/null
printf '%s\n' "$want" | kafka tool org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$bootstrap" \
  --topic "$topic" --producer-property acks=all >/dev/null
log "appended 3 records to $topic; restarting the broker"
kafka stop "$DATA" "$PORT"
kafka start "$DATA" "$PORT"
got=$(kafka tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bootstrap" --topic "$topic" \
  --from-beginning --max-messages 3 --timeout-ms 60000 2>/dev/null || true)
kafka tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --delete --topic "$topic" >/dev/null || true
if [[ "$got" != "$want" ]]; then
  die "the event log did not survive a broker restart: read back '$(echo "$got" | tr '\n' ' ')'"
fi
log "durability: 1 passed, 0 failed (3 records read back after a broker restart)"
