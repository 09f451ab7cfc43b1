# shellcheck shell=bash
# The split run (`make run SPLIT=1`): the roles of tradesvc as separate `tradesvc serve --roles …` processes, one
# pid file each under $RUN/pids (tradesvc-<name>.pid), one log each under $RUN/logs (tradesvc-<name>.log). Sourced
# by run.sh after lib.sh, with BIN (the binary), RUN (the run directory) and the TRADESVC_* settings exported.
#
#   name       roles      listens on
#   sim        sim        TRADESVC_SIM_LISTEN (127.0.0.1:8444): the trade server's port and admin API
#   relay      relay      (reaches the simulator at TRADESVC_SIM_LISTEN)
#   executor   executor   (idem)
#   projector  projector
#   gateway    gateway    TRADESVC_LISTEN (127.0.0.1:8443): the base URL of .run/env
#   gateway-2  gateway    TRADESVC_LISTEN_2 (127.0.0.1:8445)
#
# Each process serves /metrics, /livez and /readyz on its own port: the gateway on TRADESVC_METRICS_LISTEN
# (127.0.0.1:9464), the others on the next ports in the order executor, relay, projector, gateway-2, sim (9465…9469).
# The gateways keep the keys' rate limits in Postgres (--rate-limit-store postgres), so a key's limits hold across
# both. split_up starts whichever process is not running (a live one is left alone, even if the binary changed)
# and waits until each answers.

SPLIT_NAMES=(sim relay executor projector gateway gateway-2)

# split_metrics NAME: the metrics address of process NAME.
split_metrics() {
  local base=${TRADESVC_METRICS_LISTEN:-127.0.0.1:9464}
  local host=${base%:*} port=${base##*:} off
  case $1 in
  gateway) off=0 ;; executor) off=1 ;; relay) off=2 ;; projector) off=3 ;; gateway-2) off=4 ;; sim) off=5 ;;
  *) die "unknown split process $1" ;;
  esac
  echo "$host:$((port + off))"
}

# split_pidfile NAME / split_logfile NAME
split_pidfile() { echo "$RUN/pids/tradesvc-$1.pid"; }
split_logfile() { echo "$RUN/logs/tradesvc-$1.log"; }

# split_ours PIDFILE: true when the file names a live `tradesvc serve` (a pid reused by another program is not ours).
split_ours() {
  pid_alive "$1" || return 1
  tr '\0' ' ' <"/proc/$(pid_of "$1")/cmdline" 2>/dev/null | grep -q 'tradesvc serve'
}

# split_env NAME: the settings of process NAME, as NAME=VALUE words for env(1).
split_env() {
  local sim=${TRADESVC_SIM_LISTEN:-127.0.0.1:8444}
  local out=("TRADESVC_METRICS_LISTEN=$(split_metrics "$1")")
  case $1 in
  sim) out+=(TRADESVC_ROLES=sim "TRADESVC_SIM_LISTEN=$sim") ;;
  relay | executor) out+=("TRADESVC_ROLES=$1" "TRADESVC_SIM_ADDR=$sim") ;;
  projector) out+=(TRADESVC_ROLES=projector) ;;
  gateway) out+=(TRADESVC_ROLES=gateway "TRADESVC_LISTEN=${TRADESVC_LISTEN:-127.0.0.1:8443}" TRADESVC_RATE_LIMIT_STORE=postgres) ;;
  gateway-2) out+=(TRADESVC_ROLES=gateway "TRADESVC_LISTEN=${TRADESVC_LISTEN_2:-127.0.0.1:8445}" TRADESVC_RATE_LIMIT_STORE=postgres) ;;
  esac
  printf '%s\n' "${out[@]}"
}

# split_start NAME: starts process NAME detached unless it runs; prints "started" or "running".
split_start() {
  local name=$1 pidf logf
  pidf=$(split_pidfile "$name")
  logf=$(split_logfile "$name")
  if split_ours "$pidf"; then
    echo running
    return 0
  fi
  rm -f "$pidf"
  local vars=()
  mapfile -t vars < <(split_env "$name")
  log "starting tradesvc $name (log ${logf#"$ROOT"/})"
  # setsid: detached from make and the terminal; env and setsid exec in place, so $! is the service's pid.
  (
    env "${vars[@]}" setsid nohup "$BIN" serve >>"$logf" 2>&1 </dev/null &
    echo $! >"$pidf"
  )
  echo started
}

# split_answers NAME: true once process NAME answers: a gateway its /v1/ping, the others /livez on their
# metrics port (and the simulator also its port). Returns 2 when the process is gone.
split_answers() {
  local name=$1 pidf
  pidf=$(split_pidfile "$name")
  pid_alive "$pidf" || return 2
  case $name in
  gateway | gateway-2)
    local addr=${TRADESVC_LISTEN:-127.0.0.1:8443}
    [[ $name == gateway-2 ]] && addr=${TRADESVC_LISTEN_2:-127.0.0.1:8445}
    [[ -s $TRADESVC_RUN_DIR/tls/ca.pem ]] &&
      curl -sf --max-time 2 --cacert "$TRADESVC_RUN_DIR/tls/ca.pem" "https://$addr/v1/ping" >/dev/null 2>&1
    ;;
  sim)
    local sim=${TRADESVC_SIM_LISTEN:-127.0.0.1:8444}
    port_open "${sim##*:}" && [[ -s $TRADESVC_RUN_DIR/sim.token ]] &&
      curl -sf --max-time 2 "http://$(split_metrics sim)/livez" >/dev/null 2>&1
    ;;
  *) curl -sf --max-time 2 "http://$(split_metrics "$name")/livez" >/dev/null 2>&1 ;;
  esac
}

# split_wait NAME: waits up to 90 s for process NAME to answer; on failure shows its log's tail and exits 1.
split_wait() {
  local name=$1 deadline=$((SECONDS + 90)) rc
  while :; do
    rc=0
    split_answers "$name" || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 2)) || ((SECONDS >= deadline)); then
      if ((rc == 2)); then log "tradesvc $name exited during start-up"; else log "tradesvc $name did not answer within 90s"; fi
      tail -n 40 "$(split_logfile "$name")" >&2 || true
      exit 1
    fi
    sleep 0.25
  done
}

# split_up starts what is not running, in dependency order, and waits until every process answers: the simulator
# first (the relay and the executor read its token at start), and the first gateway before the second (the first
# to start generates the TLS files and the master key under the run directory; two at once would race).
split_up() {
  local name
  declare -gA SPLIT_STATE=()
  for name in "${SPLIT_NAMES[@]}"; do
    SPLIT_STATE[$name]=$(split_start "$name")
    case $name in sim | gateway) split_wait "$name" ;; esac
  done
  for name in "${SPLIT_NAMES[@]}"; do
    split_wait "$name"
  done
}

# split_summary prints one line per process: name, pid, state, roles, ports.
split_summary() {
  local name pidf
  for name in "${SPLIT_NAMES[@]}"; do
    pidf=$(split_pidfile "$name")
    printf '  %-10s pid %-8s %-8s metrics http://%s  log %s\n' "$name" "$(pid_of "$pidf")" "${SPLIT_STATE[$name]:-}" \
      "$(split_metrics "$name")" "$(split_logfile "$name" | sed "s|^$ROOT/||")"
  done
}
