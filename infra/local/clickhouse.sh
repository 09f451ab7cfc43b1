#!/usr/bin/env bash
# ClickHouse (Debian's clickhouse-server 18.16) as a local process:
#   clickhouse.sh install|start|stop|status DATA_DIR TCP_PORT HTTP_PORT
#   config    DATA_DIR/ch-conf/config.xml (generated; users from the stock /etc/clickhouse-server/users.xml)
#   data      DATA_DIR/ch/
#   log, pid  DATA_DIR/logs/clickhouse-server{,.err}.log, DATA_DIR/pids/clickhouse.pid
# Listens on 127.0.0.1 only (native TCP_PORT, HTTP HTTP_PORT, no interserver port); creates database tradesvc.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

cmd=${1:?usage: clickhouse.sh install|start|stop|status DATA_DIR TCP_PORT HTTP_PORT}
DATA=${2:?data dir}
TCP_PORT=${3:?tcp port}
HTTP_PORT=${4:?http port}
CHDATA=$DATA/ch
CONFDIR=$DATA/ch-conf
CONF=$CONFDIR/config.xml
PIDF=$DATA/pids/clickhouse.pid
OUT=$DATA/logs/clickhouse.out
USERS_XML=/etc/clickhouse-server/users.xml
DB=tradesvc

install() {
  if ! command -v clickhouse-server >/dev/null || ! command -v clickhouse-client >/dev/null || [[ ! -s $USERS_XML ]]; then
    apt_install clickhouse-server clickhouse-client
    stop_package_service
  fi
  command -v clickhouse-server >/dev/null || die "clickhouse-server missing after install"
}

# stop_package_service stops a server that the package's maintainer scripts may have started
# (it would hold the standard ports 9000/8123). Only that server's own pid is signalled.
stop_package_service() {
  local f pid
  for f in /var/run/clickhouse-server/clickhouse-server.pid /run/clickhouse-server/clickhouse-server.pid; do
    if pid_alive "$f"; then
      pid=$(pid_of "$f")
      log "stopping the clickhouse-server started by the package (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      wait_until 30 "package clickhouse-server to exit" pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    systemctl disable --now clickhouse-server >/dev/null 2>&1 || true
  fi
}

ping_ok() { [[ $(curl -s --max-time 2 "http://127.0.0.1:$HTTP_PORT/ping" 2>/dev/null) == Ok.* ]]; }

native_ok() { clickhouse-client --host 127.0.0.1 --port "$TCP_PORT" --query 'SELECT 1' >/dev/null 2>&1; }

running() { pid_alive "$PIDF" && ping_ok; }

# alive_and_ping fails fast (exit 1 from the script) when the server died during start-up.
alive_and_ping() {
  if ! pid_alive "$PIDF"; then
    tail -n 30 "$OUT" "$DATA/logs/clickhouse-server.err.log" >&2 2>/dev/null || true
    die "clickhouse exited during start-up; see $DATA/logs"
  fi
  ping_ok
}

write_conf() {
  mkdir -p "$CONFDIR" "$CHDATA/tmp" "$CHDATA/user_files" "$CHDATA/format_schemas" "$DATA/logs"
  cat >"$CONF" <<EOF
<?xml version="1.0"?>
<!-- written by infra/local/clickhouse.sh on every start; edits are overwritten -->
<yandex>
    <logger>
        <level>information</level>
        <log>$DATA/logs/clickhouse-server.log</log>
        <errorlog>$DATA/logs/clickhouse-server.err.log</errorlog>
        <size>100M</size>
        <count>3</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$TCP_PORT</tcp_port>
    <http_port>$HTTP_PORT</http_port>
    <max_connections>1024</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>100</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$CHDATA/</path>
    <tmp_path>$CHDATA/tmp/</tmp_path>
    <user_files_path>$CHDATA/user_files/</user_files_path>
    <format_schema_path>$CHDATA/format_schemas/</format_schema_path>
    <users_config>$USERS_XML</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
    <merge_tree>
        <max_suspicious_broken_parts>5</max_suspicious_broken_parts>
    </merge_tree>
</yandex>
EOF
}

start() {
  install
  mkdir -p "$DATA/logs" "$DATA/pids"
  if running; then
    log "clickhouse already running on 127.0.0.1:$TCP_PORT/$HTTP_PORT (pid $(pid_of "$PIDF"))"
    return 0
  fi
  if pid_alive "$PIDF"; then
    log "clickhouse process exists; waiting for it to answer"
  else
    check_port_free "clickhouse native" "$TCP_PORT"
    check_port_free "clickhouse http" "$HTTP_PORT"
    write_conf
    rm -f "$PIDF"
    log "starting clickhouse on 127.0.0.1:$TCP_PORT (http $HTTP_PORT)"
    close_inherited_fds
    # Started in its own session so that neither make nor a terminal's signals reach it.
    # Not a group leader in a background subshell, setsid execs the server in place: $! is its pid.
    (
      cd "$CHDATA"
      setsid clickhouse-server --config-file="$CONF" >>"$OUT" 2>&1 </dev/null &
      echo $! >"$PIDF"
    )
  fi
  if ! wait_until 60 "clickhouse on 127.0.0.1:$HTTP_PORT" alive_and_ping || ! wait_until 30 "clickhouse native port $TCP_PORT" native_ok; then
    tail -n 30 "$OUT" "$DATA/logs/clickhouse-server.err.log" >&2 2>/dev/null || true
    die "clickhouse not answering; see $DATA/logs"
  fi
  clickhouse-client --host 127.0.0.1 --port "$TCP_PORT" --query "CREATE DATABASE IF NOT EXISTS $DB"
  log "clickhouse ready: 127.0.0.1:$TCP_PORT database $DB"
}

stop() {
  stop_pidfile clickhouse "$PIDF" 30
}

status() { service_status clickhouse "$PIDF" "127.0.0.1:$TCP_PORT (http $HTTP_PORT)" "127.0.0.1:$TCP_PORT (http $HTTP_PORT)"; }

service_main "$cmd"
