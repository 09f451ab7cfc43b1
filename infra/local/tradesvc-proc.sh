#!/usr/bin/env bash
# Stops (or reports) the `tradesvc serve` process that `make run` started: tradesvc-proc.sh stop|status
# SIGTERM, up to 30 s for a graceful shutdown, then SIGKILL. Uses .run/pids/tradesvc.pid only.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
PIDF=$ROOT/.run/pids/tradesvc.pid

# A pid file left by a crash may name a pid since reused by an unrelated process: only ours counts.
ours() {
  pid_alive "$PIDF" || return 1
  tr '\0' ' ' <"/proc/$(pid_of "$PIDF")/cmdline" 2>/dev/null | grep -q 'tradesvc serve'
}

case ${1:?usage: tradesvc-proc.sh stop|status} in
stop)
  if ours; then
    stop_pidfile tradesvc "$PIDF" 30
  else
    rm -f "$PIDF"
  fi
  ;;
status)
  if ours; then
    echo "tradesvc   running  pid $(pid_of "$PIDF")"
  else
    echo "tradesvc   stopped"
    exit 3
  fi
  ;;
*) die "unknown command $1" ;;
esac
