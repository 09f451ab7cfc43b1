#!/usr/bin/env bash
# `make bench`: test-profile services up, every Benchmark in the packages that have one, results printed
# and kept in .run/test/bench.log; services stopped at the end whatever happens.
#
#   BENCH      -bench pattern (default .)
#   BENCHTIME  -benchtime (default: go's 1s)
#   KEEP_SERVICES=1 leave the test services running afterwards
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
cd "$ROOT"

BENCH=${BENCH:-.}
OUT=$ROOT/.run/test
LOGF=$OUT/bench.log

command -v go >/dev/null || die "Go toolchain not found: install Go (see go.mod for the version) and retry"

mapfile -t pkgs < <(grep -rEl --include='*_test.go' --exclude-dir=.run --exclude-dir=vendor --exclude-dir=.git \
  '^func Benchmark[A-Za-z0-9_]*\(' . | xargs -r -n1 dirname | sort -u)
if ((${#pkgs[@]} == 0)); then
  log "no benchmarks found"
  exit 0
fi

mkdir -p "$OUT"
with_test_services

args=(-p 1 -run '^$' -bench "$BENCH" -benchmem -count 1) # -p 1: one package at a time, or they share the 2 cores
args+=(-benchtime "${BENCHTIME:-3s}") # long enough for steady figures
log "go test ${args[*]} ${pkgs[*]}"
set +e
go test "${args[@]}" "${pkgs[@]}" 2>&1 | tee "$LOGF"
rc=${PIPESTATUS[0]}
set -e
echo
echo "==== benchmark results (also in .run/test/bench.log) ===="
grep -E '^(Benchmark|ok|FAIL|pkg:)' "$LOGF" || true
((rc == 0)) || die "benchmarks failed (exit $rc)"
