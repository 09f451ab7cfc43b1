#!/usr/bin/env bash
# `make test` (and so `.ci/run`): a check that no tracked file is over 1 MiB, its own Kafka/Postgres/ClickHouse
# (test profile: .run/test/, ports 2xxxx), go vet, the whole suite with the race detector against them, a check
# that no test was skipped, the REST contract (schemathesis --checks all against a running service, then
# `tradesvc replay --verify` and `tradesvc audit` over what it traded: infra/local/schemathesis.sh), the AsyncAPI
# document parsed (infra/local/asyncapi.sh), then a short run of every
# fuzz target. The services are stopped at the end whatever happens.
#
#   GO_TEST_P       packages tested in parallel (default 2: the machines have 2 cores)
#   GO_TEST_TIMEOUT go test -timeout (default 20m)
#   FUZZTIME        -fuzztime of each fuzz target (default 100000x: that many executions, 9-11 s each here).
#                   A count, not a duration: with a duration, Go before 1.27 can fail a target with a bare
#                   "context deadline exceeded" and no failing input when a worker is still busy as the time
#                   runs out (golang/go#75804; a fresh clone's make test failed so). A duration (15s) still
#                   works, bounded by FUZZ_BUDGET
#   FUZZ_BUDGET     with a duration: upper bound in seconds for all fuzz targets together (default 240;
#                   per-target time shrinks when there are many targets, never below 3s)
#   FUZZ_TIMEOUT    go test -timeout of each fuzz target (default 5m): an input that hangs fails loudly
#   KEEP_SERVICES=1 leave the test services running afterwards (local iteration; CI never sets it)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
cd "$ROOT"

GO_TEST_P=${GO_TEST_P:-2}
GO_TEST_TIMEOUT=${GO_TEST_TIMEOUT:-20m}
FUZZTIME=${FUZZTIME:-100000x}
FUZZ_BUDGET=${FUZZ_BUDGET:-240}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-5m}
OUT=$ROOT/.run/test
LOGF=$OUT/go-test.log

command -v go >/dev/null || die "Go toolchain not found: install Go (see go.mod for the version) and retry"
log "$(go version)"

# The repository stays small: binaries and data sets are built or fetched, never committed.
MAX_TRACKED_BYTES=$((1024 * 1024))
big=$(git ls-files -z | xargs -0 -r stat -c '%s %n' -- 2>/dev/null | awk -v max="$MAX_TRACKED_BYTES" '$1 > max' || true)
if [[ -n $big ]]; then
  echo "tracked files over 1 MiB (remove them with git rm --cached and ignore them):"
  echo "$big"
  die "a tracked file is over 1 MiB"
fi

mkdir -p "$OUT"
with_test_services

log "go vet ./..."
go vet ./...

# -v so that skipped tests show up (go test prints `--- SKIP` only in verbose mode).
log "go test -race -count=1 -timeout $GO_TEST_TIMEOUT -p $GO_TEST_P ./...  (full log: .run/test/go-test.log)"
t0=$SECONDS
set +e
go test -race -count=1 -v -timeout "$GO_TEST_TIMEOUT" -p "$GO_TEST_P" ./... 2>&1 | tee "$LOGF"
rc=${PIPESTATUS[0]}
set -e
elapsed=$((SECONDS - t0))

passed=$(grep -cE '^[[:space:]]*--- PASS' "$LOGF" || true)
failed=$(grep -cE '^[[:space:]]*--- FAIL' "$LOGF" || true)
skipped=$(grep -cE '^[[:space:]]*--- SKIP' "$LOGF" || true)
echo
echo "==== go test summary (${elapsed}s) ===="
grep -E '^(ok|FAIL|---|panic:)|^\?|no test files' "$LOGF" | grep -vE '^[[:space:]]*--- PASS' || true
if ((skipped > 0)); then
  echo "skipped tests (not allowed in CI):"
  grep -E '^[[:space:]]*--- SKIP' "$LOGF"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
if ((failed > 0)); then
  echo "==== why they failed (infra/local/failures.awk) ===="
  awk -f "$HERE/failures.awk" "$LOGF" | head -200
fi
((rc == 0)) || die "go test failed (exit $rc)"
((skipped == 0)) || die "$skipped test(s) skipped: tests must not skip in CI"
((passed > 0)) || die "go test ran no test"

# Crash and outage tests stop and start the shared test servers (Kafka, Postgres) and kill
# processes with SIGKILL mid-order, so they run alone, after the main suite (build tag faults).
log "fault tests: go test -race -tags faults ./gateway/e2e/faults/  (full log: .run/test/go-faults.log)"
FAULTS_LOG=$OUT/go-faults.log
set +e
go test -race -count=1 -v -timeout 15m -tags faults ./gateway/e2e/faults/ 2>&1 | tee "$FAULTS_LOG"
frc=${PIPESTATUS[0]}
set -e
fpassed=$(grep -cE '^[[:space:]]*--- PASS' "$FAULTS_LOG" || true)
fskipped=$(grep -cE '^[[:space:]]*--- SKIP' "$FAULTS_LOG" || true)
grep -E '^[[:space:]]*--- (PASS|FAIL|SKIP)' "$FAULTS_LOG" || true
((frc == 0)) || awk -f "$HERE/failures.awk" "$FAULTS_LOG" | head -200
((frc == 0)) || die "fault tests failed (exit $frc)"
((fskipped == 0)) || die "$fskipped fault test(s) skipped: tests must not skip in CI"
((fpassed > 0)) || die "the fault step ran no test"
passed=$((passed + fpassed))

log "REST contract: schemathesis --checks all over docs/openapi.yaml against a running service; replay --verify and audit over what it traded"
"$HERE/schemathesis.sh"

log "AsyncAPI contract: docs/asyncapi.yaml parses"
"$HERE/asyncapi.sh"

log "Kafka durability: the log survives a broker stop and start"
"$HERE/durability_check.sh" test

# Fuzz targets: every `func FuzzXxx(` in a _test.go file, run one at a time (go test -fuzz takes one
# target per package per run).
mapfile -t targets < <(grep -rEl --include='*_test.go' --exclude-dir=.run --exclude-dir=vendor --exclude-dir=.git \
  '^func Fuzz[A-Za-z0-9_]+\(' . | sort | while read -r f; do
  dir=$(dirname "$f")
  grep -oE '^func Fuzz[A-Za-z0-9_]+\(' "$f" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' |
    while read -r name; do echo "$dir $name"; done
done)
if ((${#targets[@]} == 0)); then
  log "no fuzz targets"
  exit 0
fi
per=${FUZZTIME%s}
if [[ $FUZZTIME == *s && $per =~ ^[0-9]+$ ]] && ((per * ${#targets[@]} > FUZZ_BUDGET)); then
  per=$((FUZZ_BUDGET / ${#targets[@]}))
  ((per >= 3)) || per=3
  FUZZTIME=${per}s
fi
log "fuzzing ${#targets[@]} target(s), $FUZZTIME each"
fuzz_failed=0
for t in "${targets[@]}"; do
  read -r dir name <<<"$t"
  echo "=== fuzz $name ($dir)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -timeout "$FUZZ_TIMEOUT" "$dir" 2>&1 | tee -a "$OUT/go-fuzz.log"; then
    echo "--- FAIL: fuzz $name ($dir)"
    fuzz_failed=$((fuzz_failed + 1))
  fi
done
echo "fuzz: $((${#targets[@]} - fuzz_failed)) passed, $fuzz_failed failed"
((fuzz_failed == 0)) || die "$fuzz_failed fuzz target(s) failed"
echo "tests: $passed passed, $failed failed, $skipped skipped"
