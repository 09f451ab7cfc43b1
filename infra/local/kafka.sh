#!/usr/bin/env bash
# Apache Kafka 4.x (KRaft, one node acting as broker and controller) as a local process:
#   kafka.sh install|start|stop|status DATA_DIR PORT
#   kafka.sh classpath            prints the class path (downloads the jars if needed)
#   kafka.sh tool CLASS ARGS...   runs a Kafka tool class (TopicCommand, ConsoleProducer, ...)
#   jars      $TRADESVC_CACHE_DIR/kafka-libs-<pom hash>/ (default ~/.cache/tradesvc; outside .run so that
#             `make clean` does not force a new download), resolved by Maven from infra/local/kafka/pom.xml
#   config    DATA_DIR/kafka-conf/{server.properties,log4j2.properties}
#   data      DATA_DIR/kafka/ (log.dirs and KRaft metadata; formatted once)
#   log, pid  DATA_DIR/logs/kafka-server.log (+ kafka.out for the JVM), DATA_DIR/pids/kafka.pid
# Broker on 127.0.0.1:PORT (PLAINTEXT), controller on 127.0.0.1:PORT+1.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

cmd=${1:?usage: kafka.sh install|start|stop|status DATA_DIR PORT | classpath | tool CLASS ARGS...}
DATA=${2:-}
PORT=${3:-}
POM=$HERE/kafka/pom.xml
CACHE=${TRADESVC_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tradesvc}
LIBS=$CACHE/kafka-libs-$(sha256sum "$POM" | cut -c1-12)
HEAP=${TRADESVC_KAFKA_HEAP:-512m}

install() {
  command -v java >/dev/null || apt_install openjdk-17-jre-headless
  [[ -f $LIBS/.complete ]] && return 0
  command -v mvn >/dev/null || apt_install maven
  mkdir -p "$CACHE"
  # One download at a time even when `make run` and `make test` start together.
  exec 9>"$CACHE/kafka-libs.lock"
  flock 9
  if [[ ! -f $LIBS/.complete ]]; then
    log "downloading the Kafka broker jars from Maven Central into $LIBS"
    local tmp
    tmp=$(mktemp -d "$CACHE/kafka-libs.tmp.XXXXXX")
    if ! mvn -B -ntp -Dstyle.color=never -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$tmp" >"$CACHE/kafka-libs.mvn.log" 2>&1; then
      tail -n 40 "$CACHE/kafka-libs.mvn.log" >&2
      rm -rf "$tmp"
      die "maven could not resolve the Kafka broker (full output: $CACHE/kafka-libs.mvn.log)"
    fi
    rm -rf "$HERE/kafka/target"
    touch "$tmp/.complete"
    rm -rf "$LIBS"
    mv "$tmp" "$LIBS"
    # Jars of an older pom.xml are no longer used by this checkout.
    find "$CACHE" -maxdepth 1 -type d -name 'kafka-libs-*' ! -path "$LIBS" ! -name 'kafka-libs.tmp.*' -exec rm -rf {} +
    log "kafka jars ready ($(find "$LIBS" -name '*.jar' | wc -l) jars)"
  fi
  flock -u 9
  exec 9>&-
}

# Quiet logging for one-shot tool runs (format, topic admin, console producer/consumer).
TOOLS_LOG4J=$CACHE/log4j2-tools.properties
write_tools_log4j() {
  [[ -s $TOOLS_LOG4J ]] && return 0
  mkdir -p "$CACHE"
  cat >"$TOOLS_LOG4J.tmp.$$" <<EOF
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
EOF
  mv "$TOOLS_LOG4J.tmp.$$" "$TOOLS_LOG4J"
}

java_cp() {
  write_tools_log4j
  java -Xmx256m -Dlog4j2.configurationFile="$TOOLS_LOG4J" -cp "$LIBS/*" "$@"
}

case $cmd in
classpath) install; echo "$LIBS/*"; exit 0 ;;
# kafka.sh tool CLASS ARGS...: runs a Kafka tool, e.g.
#   kafka.sh tool org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:19092 --list
tool) install; shift; java_cp "$@"; exit ;;
esac
[[ -n $DATA && -n $PORT ]] || die "usage: kafka.sh $cmd DATA_DIR PORT"

CPORT=$((PORT + 1))
KDATA=$DATA/kafka
CONFDIR=$DATA/kafka-conf
PROPS=$CONFDIR/server.properties
LOGF=$DATA/logs/kafka-server.log
OUT=$DATA/logs/kafka.out
PIDF=$DATA/pids/kafka.pid

running() { pid_alive "$PIDF" && port_open "$PORT"; }

write_conf() {
  mkdir -p "$CONFDIR" "$KDATA" "$DATA/logs"
  cat >"$PROPS" <<EOF
# written by infra/local/kafka.sh on every start; edits are overwritten
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$KDATA
auto.create.topics.enable=false
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
delete.topic.enable=true
# Retention is left to each topic's own config (the service sets it when it creates its topics).
EOF
  # Broker log: rolling file, bounded. Tool runs (format) log warnings to stderr only.
  cat >"$CONFDIR/log4j2.properties" <<EOF
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = $LOGF
appender.file.filePattern = $LOGF.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
EOF
}

format_once() {
  [[ -s $KDATA/meta.properties ]] && return 0
  local id
  id=$(java_cp kafka.tools.StorageTool random-uuid | tail -n1)
  [[ -n $id ]] || die "could not generate a Kafka cluster id"
  log "formatting kafka storage $KDATA (cluster $id)"
  java_cp kafka.tools.StorageTool format --standalone -t "$id" -c "$PROPS" >>"$OUT" 2>&1 ||
    { tail -n 20 "$OUT" >&2; die "kafka storage format failed; see $OUT"; }
}

# log_mark: where the broker's log ends now, as INODE:SIZE (0:0 when there is none yet).
log_mark() {
  if [[ -f $LOGF ]]; then stat -c %i:%s "$LOGF"; else echo 0:0; fi
}

# started_since MARK: the broker logged its start after MARK (log_mark). The log rolls at
# 50 MB (renamed aside, a new file begun): after a roll the start line is in the new file,
# or at the end of the rolled one that still has MARK's inode.
started_since() {
  local ino=${1%%:*} off=${1##*:} f
  [[ -f $LOGF ]] || return 1
  if [[ $(stat -c %i "$LOGF") == "$ino" ]]; then
    tail -c +"$((off + 1))" "$LOGF" 2>/dev/null | grep -q 'Kafka Server started'
    return
  fi
  grep -q 'Kafka Server started' "$LOGF" 2>/dev/null && return 0
  for f in "$LOGF".*; do
    [[ -f $f && $(stat -c %i "$f") == "$ino" ]] || continue
    tail -c +"$((off + 1))" "$f" 2>/dev/null | grep -q 'Kafka Server started' && return 0
  done
  return 1
}

broker_ready() {
  pid_alive "$PIDF" || return 2
  port_open "$PORT" && started_since "$1"
}

start() {
  install
  mkdir -p "$DATA/logs" "$DATA/pids"
  if running; then
    log "kafka already running on 127.0.0.1:$PORT (pid $(pid_of "$PIDF"))"
    return 0
  fi
  if pid_alive "$PIDF"; then
    log "kafka process exists; waiting for its port"
    wait_until 90 "kafka on 127.0.0.1:$PORT" port_open "$PORT" || die "kafka process alive but not answering; see $LOGF"
    return 0
  fi
  check_port_free kafka "$PORT"
  check_port_free "kafka controller" "$CPORT"
  write_conf
  format_once
  local mark
  mark=$(log_mark)
  log "starting kafka on 127.0.0.1:$PORT (controller $CPORT)"
  close_inherited_fds
  # setsid: its own session, so make's or a terminal's signals do not reach it. Run from a subshell in
  # the background setsid is not a group leader, so it execs java in place and $! is the JVM's pid.
  (
    cd "$KDATA"
    setsid java "-Xmx$HEAP" "-Xms$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
      -Djava.awt.headless=true -Dlog4j2.configurationFile="$CONFDIR/log4j2.properties" \
      -Dkafka.logs.dir="$DATA/logs" -cp "$LIBS/*" kafka.Kafka "$PROPS" >>"$OUT" 2>&1 </dev/null &
    echo $! >"$PIDF"
  )
  local deadline=$((SECONDS + 120)) rc
  while :; do
    rc=0
    broker_ready "$mark" || rc=$?
    ((rc == 0)) && break
    if ((rc == 2)); then
      tail -n 30 "$OUT" "$LOGF" >&2 2>/dev/null || true
      die "kafka exited during start-up; see $LOGF and $OUT"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$LOGF" >&2 2>/dev/null || true
      die "kafka not ready after 120s; see $LOGF"
    fi
    sleep 0.25
  done
  log "kafka ready: 127.0.0.1:$PORT"
}

stop() {
  # A controlled shutdown of a single node takes a few seconds.
  stop_pidfile kafka "$PIDF" 60
}

status() { service_status kafka "$PIDF" "127.0.0.1:$PORT (controller $CPORT)" "127.0.0.1:$PORT"; }

service_main "$cmd"
