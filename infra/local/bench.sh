#!/usr/bin/env bash
# `make bench`: the test-profile services up, then
#   1. `tradesvc serve` started as a separate process on them (own Postgres and ClickHouse databases, topic
#      prefix, run directory and ports), and `tradesvc bench` run against it from another process, as a broker's
#      clients would: keys created and logins funded, an untimed warm-up (warm_up), the issue's scenarios (RESULT
#      at 200 orders/s for 60 s; ACK at 1,000/s for 60 s; overload at 3x the sustained rate, found in the same
#      run), each report printed and kept in .run/test/bench-<scenario>.json (.txt: the table); the service's log
#      in .run/test/bench/tradesvc.log;
#   2. every Go Benchmark in the packages that have one, output printed and kept in .run/test/bench.log;
# the service stopped, its databases and topics dropped, and the test services stopped at the end whatever happens.
#
#   BENCH                     -bench pattern of the Go benchmarks (default .; none skips them)
#   BENCHTIME                 -benchtime (default 3s)
#   BENCH_SCENARIOS           tradesvc bench scenarios in order (default "result ack overload"; also sustain;
#                             none skips them)
#   BENCH_RESULT_RATE         orders/s of result (200)          BENCH_RESULT_SECONDS     its duration (60)
#   BENCH_ACK_RATE            orders/s of ack (1000)            BENCH_ACK_SECONDS        its duration (60)
#   BENCH_OVERLOAD_MULTIPLE   overload's multiple (3)           BENCH_OVERLOAD_SECONDS   its duration (30)
#   BENCH_SUSTAINED           the sustained rate overload multiplies (default: found first, as sustain does)
#   BENCH_SUSTAIN_FROM        first rate of the search (100)    BENCH_SUSTAIN_MAX        highest (3000)
#   BENCH_STEP_SECONDS        duration of a search step (30: a 10 s burst drains before queues reach their steady state)
#   BENCH_FUND                deposited on every login traded (100000000)
#   BENCH_WARMUP_SECONDS      untimed ACK load before the scenarios (30; 0 skips it)   BENCH_WARMUP_RATE  its rate (500)
#   BENCH_WARMUP_RESULT_SECONDS  then untimed RESULT load at BENCH_RESULT_RATE (30; 0 skips it)
#   BENCH_ARGS                more flags for every tradesvc bench run (see tradesvc bench --help)
#   KEEP_SERVICES=1           leave the test services running afterwards
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
cd "$ROOT"

BENCH=${BENCH:-.}
SCENARIOS=${BENCH_SCENARIOS:-result ack overload}
OUT=$ROOT/.run/test
LOGF=$OUT/bench.log

command -v go >/dev/null || die "Go toolchain not found: install Go (see go.mod for the version) and retry"
for s in $SCENARIOS; do
  case $s in result | ack | sustain | overload | none) ;; *) die "BENCH_SCENARIOS: unknown scenario $s" ;; esac
done

mkdir -p "$OUT"
with_test_services
KAFKA=$TRADESVC_TEST_KAFKA_BROKERS
PG_ADMIN=$TRADESVC_TEST_PG_URL
CH=$TRADESVC_TEST_CH_ADDR
failed=()

# --- 1. tradesvc bench against tradesvc serve, each in its own process ----------------------------------------------
SVC_OUT=$OUT/bench
NAME=bench_$(date +%s)_$$
RUN_DIR=
SVC_PID=

stop_service() {
  if [[ -n $SVC_PID ]] && ! pid_gone "$SVC_PID"; then
    kill -TERM "$SVC_PID" 2>/dev/null || true
    wait_until 30 "tradesvc (bench) to stop" pid_gone "$SVC_PID" || kill -KILL "$SVC_PID" 2>/dev/null || true
  fi
  SVC_PID=
  [[ -n $RUN_DIR ]] || return 0
  drop_isolated_stores
  rm -rf "$RUN_DIR"
  RUN_DIR=
}
# Chain with the trap with_test_services set: the service goes first, then the test services.
prev_trap=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
# shellcheck disable=SC2064
trap "stop_service; ${prev_trap:-:}" EXIT

# start_service builds tradesvc and starts `tradesvc serve` on its own stores and ports, and waits until /readyz
# says every role can serve.
start_service() {
  mkdir -p "$SVC_OUT"
  rm -f "$OUT"/bench-*.json "$OUT"/bench-*.txt
  RUN_DIR=$(mktemp -d /tmp/tradesvc-bench.XXXXXX)
  psql -q "$PG_ADMIN" -c "CREATE DATABASE $NAME" >/dev/null
  clickhouse-client --host 127.0.0.1 --port "${CH##*:}" -q "CREATE DATABASE $NAME" >/dev/null
  export_isolated_service
  log "go build -o .run/test/bench/tradesvc ./cmd/tradesvc"
  go build -o "$SVC_OUT/tradesvc" ./cmd/tradesvc
  log "starting tradesvc serve on $TRADESVC_LISTEN (topics $NAME.*, databases $NAME; log .run/test/bench/tradesvc.log)"
  "$SVC_OUT/tradesvc" serve >"$SVC_OUT/tradesvc.log" 2>&1 </dev/null &
  SVC_PID=$!
  ready() {
    pid_gone "$SVC_PID" && { tail -n 40 "$SVC_OUT/tradesvc.log" >&2; die "tradesvc exited during start-up"; }
    curl -sf --max-time 2 "http://$TRADESVC_METRICS_LISTEN/readyz" >/dev/null 2>&1
  }
  wait_until 120 "tradesvc to be ready (/readyz)" ready || { tail -n 40 "$SVC_OUT/tradesvc.log" >&2; die "tradesvc not ready"; }
}

# warm_up runs ACK orders untimed before the scenarios (BENCH_WARMUP_SECONDS at BENCH_WARMUP_RATE; 0 seconds skips
# it), then RESULT orders (BENCH_WARMUP_RESULT_SECONDS at BENCH_RESULT_RATE; 0 skips them): the test services were
# just started, and a broker's service runs on warm ones. Seen in make bench: in the first minute after Kafka's start
# its JVM is still compiling, and the floor's two Kafka hops took 2.48 ms against 0.88 ms a minute later, in the same
# run. After the ACK leg alone the JIT was still busy: its compiler threads took 25 % of a core in the first 10 s of
# the RESULT step (one order a batch, code the ACK load had not made hot) and 2 to 8 s of CPU over its minute; after
# the RESULT leg too, 1.8 and 2.3 s (docs/benchmarks.md). It also creates the keys and funds the logins the scenarios
# use.
warm_up() {
  warm_leg ack "${BENCH_WARMUP_RATE:-500}" "${BENCH_WARMUP_SECONDS:-30}" BENCH_WARMUP_SECONDS warm-up.txt
  warm_leg result "${BENCH_RESULT_RATE:-200}" "${BENCH_WARMUP_RESULT_SECONDS:-30}" BENCH_WARMUP_RESULT_SECONDS \
    warm-up-result.txt --verify=false
}

# warm_leg SCENARIO RATE SECS VAR FILE [FLAGS...]: one untimed tradesvc bench run of the warm-up (VAR=0 skips it),
# its output in .run/test/bench/FILE; a run that fails its own checks is logged, and the scenarios run anyway.
warm_leg() {
  local s=$1 rate=$2 secs=$3 var=$4 file=$5
  shift 5
  ((secs > 0)) || return 0
  log "warm-up: $rate ${s^^} orders/s for ${secs}s, untimed ($var=0 skips it)"
  "$SVC_OUT/tradesvc" bench "$s" "${client_args[@]}" --rate "$rate" --duration "${secs}s" --floor=false "$@" \
    >"$SVC_OUT/$file" 2>&1 ||
    log "warm-up $s did not pass its own checks (see .run/test/bench/$file); the scenarios run anyway"
}

# client_args are the flags of every tradesvc bench run: the service, its CA, the keys (created as needed, kept
# from one run to the next) and the funding of the logins.
client_args=()
set_client_args() {
  client_args=(--base-url "https://$TRADESVC_LISTEN" --ca-cert "$RUN_DIR/tls/ca.pem"
    --keys "$SVC_OUT/keys.jsonl" --create-keys auto --keys-out "$SVC_OUT/keys.jsonl" --fund "${BENCH_FUND:-100000000}")
}

# scenario NAME: one tradesvc bench run; its table on stdout and in bench-NAME.txt, its report in bench-NAME.json.
scenario() {
  local s=$1 args
  args=(bench "$s" "${client_args[@]}" --out "$OUT/bench-$s.json")
  local search=(--from "${BENCH_SUSTAIN_FROM:-100}" --max "${BENCH_SUSTAIN_MAX:-3000}" --step "${BENCH_STEP_SECONDS:-30}s")
  case $s in
  result) args+=(--rate "${BENCH_RESULT_RATE:-200}" --duration "${BENCH_RESULT_SECONDS:-60}s") ;;
  ack) args+=(--rate "${BENCH_ACK_RATE:-1000}" --duration "${BENCH_ACK_SECONDS:-60}s") ;;
  sustain) args+=("${search[@]}") ;;
  overload)
    args+=(--multiple "${BENCH_OVERLOAD_MULTIPLE:-3}" --duration "${BENCH_OVERLOAD_SECONDS:-30}s")
    if [[ -n ${BENCH_SUSTAINED:-} ]]; then args+=(--sustained "$BENCH_SUSTAINED"); else args+=("${search[@]}"); fi
    ;;
  esac
  # shellcheck disable=SC2206 # BENCH_ARGS is a list of flags
  args+=(${BENCH_ARGS:-})
  log "tradesvc ${args[*]}"
  set +e
  "$SVC_OUT/tradesvc" "${args[@]}" | tee "$OUT/bench-$s.txt"
  local rc=${PIPESTATUS[0]}
  set -e
  ((rc == 0)) || { log "tradesvc bench $s failed (exit $rc)"; failed+=("tradesvc bench $s"); }
}

if [[ $SCENARIOS != none ]]; then
  rm -f "$SVC_OUT/keys.jsonl"
  start_service
  set_client_args
  warm_up
  for s in $SCENARIOS; do scenario "$s"; done
  stop_service
fi

# --- 2. the Go benchmarks -------------------------------------------------------------------------------------------
if [[ $BENCH != none ]]; then
  mapfile -t pkgs < <(grep -rEl --include='*_test.go' --exclude-dir=.run --exclude-dir=vendor --exclude-dir=.git \
    '^func Benchmark[A-Za-z0-9_]*\(' . | xargs -r -n1 dirname | sort -u)
  if ((${#pkgs[@]} == 0)); then
    log "no Go benchmarks found"
  else
    args=(-p 1 -run '^$' -bench "$BENCH" -benchmem -count 1) # -p 1: one package at a time, or they share the 2 cores
    args+=(-benchtime "${BENCHTIME:-3s}")                  # long enough for steady figures
    log "go test ${args[*]} ${pkgs[*]}"
    set +e
    go test "${args[@]}" "${pkgs[@]}" 2>&1 | tee "$LOGF"
    rc=${PIPESTATUS[0]}
    set -e
    ((rc == 0)) || failed+=("go benchmarks (exit $rc)")
  fi
fi

echo
if [[ $SCENARIOS != none ]]; then
  echo "==== tradesvc bench (tables in .run/test/bench-*.txt, reports in .run/test/bench-*.json) ===="
  for s in $SCENARIOS; do
    [[ -f $OUT/bench-$s.txt ]] || continue
    grep -E '^(tradesvc bench|floor|sustain:|[a-z].*offered|  (200|[0-9]{3} |all answers|acknowledged|answer p50|acceptance|transport|not sent)|verified|result:)' "$OUT/bench-$s.txt" || true
    echo
  done
fi
if [[ $BENCH != none && -f $LOGF ]]; then
  echo "==== Go benchmarks (also in .run/test/bench.log) ===="
  grep -E '^(Benchmark|ok|FAIL|pkg:)' "$LOGF" || true
fi
((${#failed[@]} == 0)) || die "failed: ${failed[*]}"
