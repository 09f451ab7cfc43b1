#!/usr/bin/env bash
# Stops (or reports) the `tradesvc serve` processes that `make run` started: tradesvc-proc.sh stop|stop-single|status
#   stop         every one: the all-roles process (.run/pids/tradesvc.pid) and the split run's processes
#                (.run/pids/tradesvc-<name>.pid): the gateways first, the simulator last
#   stop-single  only the all-roles process
#   status       one line per process
# Each gets SIGTERM, up to 30 s for a graceful shutdown, then SIGKILL.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
PIDS=$ROOT/.run/pids
SINGLE=$PIDS/tradesvc.pid

# A pid file left by a crash may name a pid since reused by an unrelated process: only ours counts.
ours() {
  pid_alive "$1" || return 1
  tr '\0' ' ' <"/proc/$(pid_of "$1")/cmdline" 2>/dev/null | grep -q 'tradesvc serve'
}

# pidfiles prints the pid files in stopping order: clients before what they depend on (the gateways, then the
# executor and the relay, then the projector; the simulator last, so no send is cut off by its own trade server).
pidfiles() {
  local name
  for name in tradesvc tradesvc-gateway tradesvc-gateway-2 tradesvc-executor tradesvc-relay tradesvc-projector; do
    [[ -e $PIDS/$name.pid ]] && echo "$PIDS/$name.pid"
  done
  for f in "$PIDS"/tradesvc-*.pid; do
    [[ -e $f ]] || continue
    case $(basename "$f" .pid) in
    tradesvc-gateway | tradesvc-gateway-2 | tradesvc-executor | tradesvc-relay | tradesvc-projector | tradesvc-sim) ;;
    *) echo "$f" ;;
    esac
  done
  [[ -e $PIDS/tradesvc-sim.pid ]] && echo "$PIDS/tradesvc-sim.pid"
  return 0
}

stop_one() {
  if ours "$1"; then
    stop_pidfile "$(basename "$1" .pid)" "$1" 30
  else
    rm -f "$1"
  fi
}

case ${1:?usage: tradesvc-proc.sh stop|stop-single|status} in
stop)
  while read -r f; do stop_one "$f"; done < <(pidfiles)
  ;;
stop-single)
  if [[ -e $SINGLE ]]; then stop_one "$SINGLE"; fi
  ;;
status)
  any=0
  while read -r f; do
    name=$(basename "$f" .pid)
    if ours "$f"; then
      printf '%-20s running  pid %s\n' "$name" "$(pid_of "$f")"
      any=1
    else
      printf '%-20s stopped\n' "$name"
    fi
  done < <(pidfiles)
  if ((any == 0)); then
    echo "tradesvc   stopped"
    exit 3
  fi
  ;;
*) die "unknown command $1" ;;
esac
