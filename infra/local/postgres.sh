#!/usr/bin/env bash
# Postgres 15 (Debian package) as a local process: postgres.sh install|start|stop|status DATA_DIR PORT
#   cluster   DATA_DIR/pg        (owned by the unprivileged user tradesvc: postgres refuses root)
#   socket    DATA_DIR/pgsock    (never /var/run)
#   log, pid  DATA_DIR/logs/postgres.log, DATA_DIR/pids/postgres.pid
# Listens on 127.0.0.1:PORT only, trust auth on loopback, role and database `tradesvc`.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

PGBIN=/usr/lib/postgresql/15/bin
PGUSER_OS=tradesvc
DB=tradesvc

cmd=${1:?usage: postgres.sh install|start|stop|status DATA_DIR PORT}
DATA=${2:?data dir}
PORT=${3:?port}
PGDATA=$DATA/pg
SOCK=$DATA/pgsock
LOGF=$DATA/logs/postgres.log
PIDF=$DATA/pids/postgres.pid

install() {
  [[ -x $PGBIN/initdb ]] || apt_install postgresql
  [[ -x $PGBIN/initdb ]] || die "postgresql 15 not found at $PGBIN after install"
}

# as_pg runs a command as the cluster owner.
as_pg() { (cd / && runuser -u "$PGUSER_OS" -- "$@"); }

ready() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -d postgres -U "$DB" -t 2 >/dev/null 2>&1; }

running() { pid_alive "$PIDF" && ready; }

write_conf() {
  # Our settings live in their own file, included once from postgresql.conf, rewritten on every start.
  cat >"$PGDATA/tradesvc.conf" <<EOF
# written by infra/local/postgres.sh on every start; edits are overwritten
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$SOCK'
max_connections = 300
fsync = on
synchronous_commit = on
full_page_writes = on
shared_buffers = 256MB
effective_cache_size = 1GB
work_mem = 8MB
maintenance_work_mem = 64MB
max_wal_size = 1GB
checkpoint_completion_target = 0.9
wal_buffers = 8MB
max_worker_processes = 4
max_parallel_workers = 2
# OLTP on two shared cores: no parallel workers (a process started per query) and no JIT
# compilation (milliseconds of CPU for a plan that runs in microseconds)
max_parallel_workers_per_gather = 0
jit = off
random_page_cost = 1.1
effective_io_concurrency = 100
timezone = 'UTC'
log_timezone = 'UTC'
logging_collector = off
log_min_duration_statement = 1000
EOF
  chown "$PGUSER_OS:$PGUSER_OS" "$PGDATA/tradesvc.conf"
  grep -q "^include 'tradesvc.conf'" "$PGDATA/postgresql.conf" ||
    echo "include 'tradesvc.conf'" >>"$PGDATA/postgresql.conf"
}

start() {
  install
  mkdir -p "$DATA/logs" "$DATA/pids"
  if running; then
    log "postgres already running on 127.0.0.1:$PORT (pid $(pid_of "$PIDF"))"
    return 0
  fi
  ensure_service_user "$PGUSER_OS"
  ensure_traversable "$PGUSER_OS" "$DATA"
  # A unix socket path is limited to 107 bytes.
  ((${#SOCK} + 20 < 107)) || die "socket dir path too long: $SOCK"
  mkdir -p "$SOCK"
  chown "$PGUSER_OS:$PGUSER_OS" "$SOCK"
  chmod 700 "$SOCK"
  touch "$LOGF"
  chown "$PGUSER_OS:$PGUSER_OS" "$LOGF"

  # The cluster is still starting (pid alive, not ready yet): give it the usual time.
  if [[ -s $PGDATA/postmaster.pid ]] && proc_alive "$(head -n1 "$PGDATA/postmaster.pid" | tr -dc 0-9)"; then
    log "postgres process exists; waiting for it to accept connections"
    head -n1 "$PGDATA/postmaster.pid" >"$PIDF"
    wait_until 60 "postgres on 127.0.0.1:$PORT" ready || die "postgres process alive but not answering; see $LOGF"
    return 0
  fi
  check_port_free postgres "$PORT"

  if [[ ! -s $PGDATA/PG_VERSION ]]; then
    log "initdb $PGDATA"
    rm -rf "$PGDATA"
    mkdir -p "$PGDATA"
    chown "$PGUSER_OS:$PGUSER_OS" "$PGDATA"
    chmod 700 "$PGDATA"
    # The bootstrap superuser is named tradesvc, so the role exists from the start.
    as_pg "$PGBIN/initdb" -D "$PGDATA" -U "$DB" --auth-local=trust --auth-host=trust \
      --encoding=UTF8 --locale=C >>"$LOGF" 2>&1 || die "initdb failed; see $LOGF"
  fi
  write_conf

  log "starting postgres on 127.0.0.1:$PORT"
  close_inherited_fds
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$LOGF" -w -t 60 -s start >/dev/null 2>&1 || {
    tail -n 30 "$LOGF" >&2
    die "postgres failed to start; see $LOGF"
  }
  head -n1 "$PGDATA/postmaster.pid" >"$PIDF"
  wait_until 60 "postgres on 127.0.0.1:$PORT" ready || die "postgres not answering; see $LOGF"

  local psql=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U "$DB")
  if [[ $("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$DB'") != 1 ]]; then
    log "creating database $DB"
    "${psql[@]}" -d postgres -c "CREATE DATABASE $DB OWNER $DB"
  fi
  log "postgres ready: postgres://$DB@127.0.0.1:$PORT/$DB?sslmode=disable"
}

stop() {
  if [[ -s $PGDATA/postmaster.pid ]] && [[ ! -s $PIDF ]]; then
    head -n1 "$PGDATA/postmaster.pid" >"$PIDF" 2>/dev/null || true
  fi
  if ! pid_alive "$PIDF"; then
    rm -f "$PIDF"
    return 0
  fi
  log "stopping postgres (pid $(pid_of "$PIDF"))"
  # Fast shutdown: disconnect clients, checkpoint, exit. Fall back to signals by pid file.
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 30 -s stop >/dev/null 2>&1 || true
  stop_pidfile postgres "$PIDF" 15
}

status() { service_status postgres "$PIDF" "127.0.0.1:$PORT" "127.0.0.1:$PORT"; }

service_main "$cmd"
