#!/usr/bin/env bash
# Local Kafka, Postgres and ClickHouse for this project, as plain processes on loopback (no Docker).
#
#   infra/local/services.sh up|down|status|install [run|test]     (profile defaults to run)
#
# profile  data dir      kafka (ctrl)    postgres  clickhouse native/http
# run      .run/         19092 (19093)   15432     19000 / 18123
# test     .run/test/    29092 (29093)   25432     29000 / 28123
#
# `up` installs what is missing (Debian packages postgresql, clickhouse-server, clickhouse-client; the Kafka
# jars from Maven Central into ~/.cache/tradesvc), then starts whatever is not already running and waits
# until each answers. `down` stops them (SIGTERM, then SIGKILL after a timeout). Data persists across
# down/up; `make clean` deletes it. Must run as root (apt-get, and a system user for Postgres).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

action=${1:?usage: services.sh up|down|status|install [run|test]}
profile=${2:-run}
case $profile in
run) DATA=$ROOT/.run KAFKA=19092 PG=15432 CH_TCP=19000 CH_HTTP=18123 ;;
test) DATA=$ROOT/.run/test KAFKA=29092 PG=25432 CH_TCP=29000 CH_HTTP=28123 ;;
*) die "unknown profile '$profile' (run|test)" ;;
esac

install_all() {
  [[ $(id -u) == 0 ]] || die "run as root (installs Debian packages and creates a service user)"
  local pkgs=()
  [[ -x /usr/lib/postgresql/15/bin/initdb ]] || pkgs+=(postgresql)
  if ! command -v clickhouse-server >/dev/null || ! command -v clickhouse-client >/dev/null; then
    pkgs+=(clickhouse-server clickhouse-client)
  fi
  command -v java >/dev/null || pkgs+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || pkgs+=(maven)
  command -v curl >/dev/null || pkgs+=(curl)
  # With java and maven present the Kafka download runs while apt installs the packages.
  local kpid=
  if command -v java >/dev/null && command -v mvn >/dev/null; then
    "$HERE/kafka.sh" install "$DATA" "$KAFKA" & kpid=$!
  fi
  if ((${#pkgs[@]})); then
    apt_install "${pkgs[@]}"
  fi
  # Installing the package may have started its own server on the standard ports: stop that one.
  "$HERE/clickhouse.sh" install "$DATA" "$CH_TCP" "$CH_HTTP"
  "$HERE/postgres.sh" install "$DATA" "$PG"
  if [[ -n $kpid ]]; then
    wait "$kpid" || die "kafka install failed"
  else
    "$HERE/kafka.sh" install "$DATA" "$KAFKA"
  fi
}

# lock serialises up/down of one profile (two `make test` at once, or `up` racing `down`). The servers are
# started with fd 8 closed so that they never hold the lock themselves.
lock() {
  mkdir -p "$DATA"
  exec 8>"$DATA/.services.lock"
  flock 8
}

up() {
  local t0=$SECONDS
  install_all
  lock
  mkdir -p "$DATA/logs" "$DATA/pids"
  # Start the three in parallel; each waits for its own readiness.
  local pids=() names=(postgres clickhouse kafka) i rc=0
  "$HERE/postgres.sh" start "$DATA" "$PG" 8>&- & pids+=($!)
  "$HERE/clickhouse.sh" start "$DATA" "$CH_TCP" "$CH_HTTP" 8>&- & pids+=($!)
  "$HERE/kafka.sh" start "$DATA" "$KAFKA" 8>&- & pids+=($!)
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      log "${names[$i]} failed to start"
      rc=1
    fi
  done
  ((rc == 0)) || die "services ($profile) did not come up; logs in $DATA/logs"
  log "services ($profile) up in $((SECONDS - t0))s: kafka 127.0.0.1:$KAFKA, postgres 127.0.0.1:$PG, clickhouse 127.0.0.1:$CH_TCP"
}

down() {
  local rc=0
  [[ -d $DATA ]] || { log "services ($profile): nothing to stop"; return 0; }
  lock
  # Kafka first: it is the slowest and nothing depends on it shutting down last.
  "$HERE/kafka.sh" stop "$DATA" "$KAFKA" & local k=$!
  "$HERE/clickhouse.sh" stop "$DATA" "$CH_TCP" "$CH_HTTP" & local c=$!
  "$HERE/postgres.sh" stop "$DATA" "$PG" & local p=$!
  wait $k || rc=1
  wait $c || rc=1
  wait $p || rc=1
  ((rc == 0)) || die "some services ($profile) did not stop cleanly"
  log "services ($profile) down"
}

status() {
  local rc=0
  "$HERE/kafka.sh" status "$DATA" "$KAFKA" || rc=3
  "$HERE/postgres.sh" status "$DATA" "$PG" || rc=3
  "$HERE/clickhouse.sh" status "$DATA" "$CH_TCP" "$CH_HTTP" || rc=3
  return $rc
}

case $action in
up) up ;;
down) down ;;
status) status ;;
install) install_all ;;
*) die "unknown action '$action' (up|down|status|install)" ;;
esac
