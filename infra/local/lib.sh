# shellcheck shell=bash
# Shared helpers for the infra/local scripts. Sourced, never executed.
# Every helper is safe to call repeatedly (the scripts are idempotent).

# log prints a timestamped line on stderr so stdout stays usable for data.
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# die prints an error and exits non-zero.
die() { log "ERROR: $*"; exit 1; }

# pid_alive PIDFILE: true when the file names a live process.
pid_alive() {
  local f=$1 pid
  [[ -s $f ]] || return 1
  pid=$(head -n1 "$f" 2>/dev/null | tr -dc '0-9')
  [[ -n $pid ]] || return 1
  proc_alive "$pid"
}

# proc_alive PID: true when the process exists and is not a zombie (an exited daemon may stay a
# zombie for a while when its parent, e.g. the container's init, reaps late).
proc_alive() {
  ! pid_gone "$1"
}

# pid_of PIDFILE: prints the pid stored in the file.
# close_inherited_fds closes every descriptor above 2 that this shell inherited, before it starts a
# server: a daemon must not keep what its starter held open (a `flock` lock around a test that
# restarts Postgres would otherwise be held for as long as that Postgres runs).
# Descriptors 10 and up are bash's own (the script it reads, saved descriptors) and stay.
close_inherited_fds() {
  local fd
  for fd in 3 4 5 6 7 8 9; do
    [[ -e /proc/$$/fd/$fd ]] && eval "exec $fd>&-"
  done
  return 0
}

pid_of() { head -n1 "$1" 2>/dev/null | tr -dc '0-9'; }

# port_open PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_until TIMEOUT_SECONDS DESCRIPTION CMD...: polls CMD every 0.25 s.
wait_until() {
  local timeout=$1 what=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.25
  done
}

# stop_pidfile NAME PIDFILE [TIMEOUT]: SIGTERM, wait, then SIGKILL; removes the pid file.
stop_pidfile() {
  local name=$1 f=$2 timeout=${3:-30} pid
  if ! pid_alive "$f"; then
    rm -f "$f"
    return 0
  fi
  pid=$(pid_of "$f")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_until "$timeout" "$name to exit" pid_gone "$pid"; then
    log "$name did not exit after ${timeout}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_until 10 "$name to die" pid_gone "$pid" || die "$name (pid $pid) survived SIGKILL"
  fi
  rm -f "$f"
}

# pid_gone PID: true when the process no longer exists (zombies count as gone).
pid_gone() {
  local state
  kill -0 "$1" 2>/dev/null || return 0
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)
  [[ $state == Z ]]
}

# check_port_free NAME PORT: refuse to start when a foreign process owns our port.
check_port_free() {
  if port_open "$2"; then
    die "$1: port 127.0.0.1:$2 is already in use by another process ($(ss -ltnpH "sport = :$2" 2>/dev/null | head -n1))"
  fi
}

# apt_install PKG...: installs Debian packages, refreshing the package lists only when needed,
# waiting for a concurrent apt/dpkg run to release its lock, and never starting services.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get -y -q -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  local policy=/usr/sbin/policy-rc.d made_policy=0
  # policy-rc.d exit 101 stops invoke-rc.d from starting package services during postinst.
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    made_policy=1
  fi
  local rc=0
  if ! apt_candidates_known "$@"; then
    log "apt-get update (package lists lack: $*)"
    "${apt[@]}" update >&2 || rc=$?
  fi
  if ((rc == 0)); then
    log "apt-get install $*"
    if ! "${apt[@]}" install --no-install-recommends "$@" >&2; then
      log "install failed; refreshing package lists and retrying"
      "${apt[@]}" update >&2 && "${apt[@]}" install --no-install-recommends "$@" >&2 || rc=$?
    fi
  fi
  if ((made_policy)); then rm -f "$policy"; fi
  ((rc == 0)) || die "apt-get install $* failed"
}

# apt_candidates_known PKG...: true when apt knows an installable version of every package.
apt_candidates_known() {
  local p cand
  for p in "$@"; do
    cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    [[ -n $cand && $cand != "(none)" ]] || return 1
  done
}

# ensure_service_user NAME: creates an unprivileged system user for servers that refuse root.
ensure_service_user() {
  local u=$1
  id -u "$u" >/dev/null 2>&1 && return 0
  log "creating system user $u"
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$u" 2>/dev/null ||
    id -u "$u" >/dev/null 2>&1 || die "cannot create user $u"
}

# ensure_traversable USER DIR: makes sure USER can reach DIR. Adds only o+x (search, never read)
# to ancestors that lack it, e.g. a checkout under /root.
ensure_traversable() {
  local u=$1 d=$2 q parts=()
  runuser -u "$u" -- test -x "$d" 2>/dev/null && return 0
  q=$d
  while [[ $q != / ]]; do parts=("$q" "${parts[@]}"); q=$(dirname "$q"); done
  for q in "${parts[@]}"; do
    if ! runuser -u "$u" -- test -x "$q" 2>/dev/null; then
      log "granting o+x on $q so $u can reach $d"
      chmod o+x "$q"
    fi
  done
  runuser -u "$u" -- test -x "$d" || die "$u cannot reach $d"
}

# with_test_services starts the test-profile services, stops them when the calling script exits
# (unless KEEP_SERVICES=1, for local iteration; CI never sets it), and exports the variables the
# integration tests read. Call it from a script that sources lib.sh and has set HERE.
with_test_services() {
  _stop_test_services() {
    local rc=$?
    if [[ ${KEEP_SERVICES:-0} == 1 ]]; then
      log "KEEP_SERVICES=1: test services left running (stop: make services-down PROFILE=test)"
    else
      "$HERE/services.sh" down test || rc=1
    fi
    exit $rc
  }
  trap _stop_test_services EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  "$HERE/services.sh" up test
  export TRADESVC_TEST_KAFKA_BROKERS=127.0.0.1:29092
  export TRADESVC_TEST_PG_URL='postgres://tradesvc@127.0.0.1:25432/tradesvc?sslmode=disable'
  export TRADESVC_TEST_CH_ADDR=127.0.0.1:29000
}

# service_status NAME PIDFILE RUNNING_AT STOPPED_AT: the status line of a service script, from its
# `running` function; returns 3 when the service is stopped (as `services.sh status` expects).
service_status() {
  if running; then
    printf '%-10s running  pid %s  %s\n' "$1" "$(pid_of "$2")" "$3"
  else
    printf '%-10s stopped  %s\n' "$1" "$4"
    return 3
  fi
}

# service_main CMD: runs the service script's function CMD (install, start, stop or status).
service_main() {
  case $1 in
  install | start | stop | status) "$1" ;;
  *) die "unknown command $1" ;;
  esac
}

# free_port prints a TCP port that is free on 127.0.0.1 now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# export_isolated_service exports the settings of a `tradesvc serve` of its own on the test services
# ($KAFKA, $PG_ADMIN, $CH): free ports, run directory $RUN_DIR, topics $NAME.*, databases $NAME (which the
# caller creates and drop_isolated_stores drops).
export_isolated_service() {
  export TRADESVC_LISTEN=127.0.0.1:$(free_port)
  export TRADESVC_SIM_LISTEN=127.0.0.1:$(free_port)
  export TRADESVC_METRICS_LISTEN=127.0.0.1:$(free_port)
  export TRADESVC_RUN_DIR=$RUN_DIR
  export TRADESVC_KAFKA_BROKERS=$KAFKA
  export TRADESVC_TOPIC_PREFIX=$NAME.
  export TRADESVC_PG_URL=${PG_ADMIN/\/tradesvc\?//$NAME?}
  export TRADESVC_CH_ADDR=$CH
  export TRADESVC_CH_DATABASE=$NAME
  export TRADESVC_LOG_LEVEL=warn
}

# drop_isolated_stores drops the databases $NAME and the topics $NAME.* of an isolated service, logging
# what it could not drop.
drop_isolated_stores() {
  psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $NAME WITH (FORCE)" >/dev/null 2>&1 || log "could not drop Postgres database $NAME"
  clickhouse-client --host 127.0.0.1 --port "${CH##*:}" -q "DROP DATABASE IF EXISTS $NAME" >/dev/null 2>&1 ||
    log "could not drop ClickHouse database $NAME"
  "$HERE/kafka.sh" tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$KAFKA" --delete --topic "$NAME\\..*" \
    >/dev/null 2>&1 || log "could not delete the topics $NAME.*"
}
