#!/usr/bin/env bash
# `make run`: services up (run profile), build, migrate, (re)start `tradesvc serve` detached, create the demo
# API key once, write .run/env, print the URLs and the key. Safe to re-run: services already running are
# kept, the service is restarted with the freshly built binary, the demo key in .run/demo-key.json is reused.
#
# `make run SPLIT=1`: the same, but the roles run as separate processes (split.sh: the simulator, the relay, the
# executor, the projector and two gateways), one pid file each under .run/pids; run again, it starts whichever is
# not running and leaves the others alone. Switching between the two modes stops the other mode's processes.
#
#   DEMO_LOGINS   logins the demo key is scoped to (default 1001,1002,1003,1004,1005: the accounts of the
#                 simulator's default seed)
#   SPLIT         1: the split run
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
cd "$ROOT"

DEMO_LOGINS=${DEMO_LOGINS:-1001,1002,1003,1004,1005}
SPLIT=${SPLIT:-}
RUN=$ROOT/.run
BIN=$RUN/bin/tradesvc
PIDF=$RUN/pids/tradesvc.pid
LOGF=$RUN/logs/tradesvc.log
KEYF=$RUN/demo-key.json

command -v go >/dev/null || die "Go toolchain not found: install Go (see go.mod for the version) and retry"

"$HERE/services.sh" up run

# The service's own defaults match these; they are exported so that a stray TRADESVC_* in the caller's
# environment cannot point `make run` at the test instances. An explicit override still wins.
export TRADESVC_RUN_DIR=${TRADESVC_RUN_DIR:-$RUN}
export TRADESVC_LISTEN=${TRADESVC_LISTEN:-127.0.0.1:8443}
export TRADESVC_KAFKA_BROKERS=${TRADESVC_KAFKA_BROKERS:-127.0.0.1:19092}
export TRADESVC_PG_URL=${TRADESVC_PG_URL:-postgres://tradesvc@127.0.0.1:15432/tradesvc?sslmode=disable}
export TRADESVC_CH_ADDR=${TRADESVC_CH_ADDR:-127.0.0.1:19000}
export TRADESVC_CH_DATABASE=${TRADESVC_CH_DATABASE:-tradesvc}

mkdir -p "$RUN/bin" "$RUN/logs" "$RUN/pids"
log "go build -o .run/bin/tradesvc ./cmd/tradesvc"
go build -o "$BIN.new" ./cmd/tradesvc
mv -f "$BIN.new" "$BIN"

log "tradesvc migrate"
"$BIN" migrate >/dev/null

BASE_URL=https://$TRADESVC_LISTEN
CA=$TRADESVC_RUN_DIR/tls/ca.pem

if [[ $SPLIT == 1 ]]; then
  # shellcheck source=split.sh
  . "$HERE/split.sh"
  "$HERE/tradesvc-proc.sh" stop-single # the all-roles process holds the ports the split processes take
  split_up
  log "tradesvc split run up"
else
  "$HERE/tradesvc-proc.sh" stop # the all-roles process and, when switching modes, the split processes
  log "starting tradesvc serve (log .run/logs/tradesvc.log)"
  # setsid: detached from make and the terminal; setsid execs in place, so $! is the service's pid.
  (
    setsid nohup "$BIN" serve >>"$LOGF" 2>&1 </dev/null &
    echo $! >"$PIDF"
  )

  ping_ok() {
    pid_alive "$PIDF" || return 2
    [[ -s $CA ]] && curl -sf --max-time 2 --cacert "$CA" "$BASE_URL/v1/ping" >/dev/null 2>&1
  }
  deadline=$((SECONDS + 90))
  while :; do
    rc=0
    ping_ok || rc=$?
    ((rc == 0)) && break
    if ((rc == 2)) || ((SECONDS >= deadline)); then
      if ((rc == 2)); then
        log "tradesvc exited during start-up"
      else
        log "tradesvc did not answer $BASE_URL/v1/ping within 90s"
      fi
      tail -n 40 "$LOGF" >&2 || true
      exit 1
    fi
    sleep 0.25
  done
  log "tradesvc up (pid $(pid_of "$PIDF"))"
fi

# ready_wait: answering is not yet serving (on a new database the symbols are read into the read models a moment
# after /v1/ping first answers, and exchangeInfo says -1121 till then): wait up to 120 s until every process's
# /readyz says it can serve; on failure, show what it names and exit 1.
ready_wait() {
  local addrs=("${TRADESVC_METRICS_LISTEN:-127.0.0.1:9464}") addr name deadline=$((SECONDS + 120))
  if [[ $SPLIT == 1 ]]; then
    addrs=()
    for name in "${SPLIT_NAMES[@]}"; do addrs+=("$(split_metrics "$name")"); done
  fi
  ready_at() { curl -sf --max-time 2 "http://$1/readyz" >/dev/null 2>&1; }
  for addr in "${addrs[@]}"; do
    wait_until $((deadline > SECONDS ? deadline - SECONDS : 1)) "http://$addr/readyz" ready_at "$addr" || {
      curl -s --max-time 2 "http://$addr/readyz" >&2 || true
      echo >&2
      exit 1
    }
  done
  log "tradesvc ready (/readyz)"
}
ready_wait

# json_field FILE NAME: the string value of a top-level field (no jq needed).
json_field() {
  tr -d '\n' <"$1" | sed -n "s/.*\"$2\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p"
}

if [[ -s $KEYF && -n $(json_field "$KEYF" apiKey) && -n $(json_field "$KEYF" apiSecret) ]]; then
  log "reusing the demo key in .run/demo-key.json"
else
  log "creating the demo key for logins $DEMO_LOGINS"
  "$BIN" keys create --logins "$DEMO_LOGINS" >"$KEYF.tmp"
  mv "$KEYF.tmp" "$KEYF"
  chmod 600 "$KEYF"
fi
API_KEY=$(json_field "$KEYF" apiKey)
API_SECRET=$(json_field "$KEYF" apiSecret)
[[ -n $API_KEY && -n $API_SECRET ]] || die "no apiKey/apiSecret in $KEYF"

STREAM_URL=wss://$TRADESVC_LISTEN
URL_2=https://${TRADESVC_LISTEN_2:-127.0.0.1:8445}
STREAM_URL_2=wss://${TRADESVC_LISTEN_2:-127.0.0.1:8445}
umask 077
{
  echo "# written by make run; use with: . .run/env"
  echo "export TRADESVC_BASE_URL='$BASE_URL'"
  echo "export TRADESVC_STREAM_URL='$STREAM_URL'"
  echo "export TRADESVC_API_KEY='$API_KEY'"
  echo "export TRADESVC_API_SECRET='$API_SECRET'"
  echo "export TRADESVC_CA_CERT='$CA'"
  if [[ $SPLIT == 1 ]]; then
    echo "# the split run's second gateway (same key; the key's limits hold across both gateways)"
    echo "export TRADESVC_BASE_URL_2='$URL_2'"
    echo "export TRADESVC_STREAM_URL_2='$STREAM_URL_2'"
  fi
} >"$RUN/env.tmp"
mv "$RUN/env.tmp" "$RUN/env"

if [[ $SPLIT == 1 ]]; then
  cat <<EOF

tradesvc is running as separate processes (.run/pids/tradesvc-<name>.pid; stop with: make stop)
  gateway     $BASE_URL   $STREAM_URL
  gateway-2   $URL_2   $STREAM_URL_2
  API key     $API_KEY
  API secret  $API_SECRET
  logins      $DEMO_LOGINS
  CA cert     $CA
  env         . .run/env   (TRADESVC_BASE_URL_2: the second gateway)
processes (make run SPLIT=1 again starts whichever is not running):
EOF
  split_summary
else
  cat <<EOF

tradesvc is running (pid $(pid_of "$PIDF"); log .run/logs/tradesvc.log; stop with: make stop)
  base URL    $BASE_URL
  stream URL  $STREAM_URL
  API key     $API_KEY
  API secret  $API_SECRET
  logins      $DEMO_LOGINS
  CA cert     $CA
  env         . .run/env
EOF
fi
