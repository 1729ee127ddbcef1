#!/usr/bin/env bash
# The VM scenarios of `make test`, run beside the rest of it: under software emulation (TCG) a guest spends
# most of its time on one emulated CPU at nice 10, which the container scenarios leave idle much of the time.
#   scripts/vm_tests_bg.sh start SCENARIO...   start scripts/molecule_vm_or_skip.sh in the background
#   scripts/vm_tests_bg.sh wait                wait for it, print its log, exit with its status
# State in .cache/vm-tests/ (log, pid, rc). `start` refuses while an earlier run is still going.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.cache/vm-tests
mkdir -p "$dir"

case ${1:-} in
  start)
    shift
    [[ $# -gt 0 ]] || { echo "usage: $0 start SCENARIO..." >&2; exit 2; }
    if [[ -f $dir/pid ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      echo "vm tests: a run is still going (pid $(cat "$dir/pid")); wait for it first" >&2
      exit 2
    fi
    rm -f "$dir/rc" "$dir/log"
    (
      start=$(date +%s)
      rc=0
      scripts/molecule_vm_or_skip.sh "$@" >"$dir/log" 2>&1 || rc=$?
      echo "vm tests: $* exit $rc after $(($(date +%s) - start)) s" >>"$dir/log"
      echo "$rc" >"$dir/rc"
    ) </dev/null &
    echo $! >"$dir/pid"
    echo "vm tests: $* started in the background (log $dir/log)"
    ;;
  wait)
    [[ -f $dir/pid ]] || { echo "vm tests: none started ($0 start SCENARIO...)" >&2; exit 2; }
    while [[ ! -f $dir/rc ]]; do
      kill -0 "$(cat "$dir/pid")" 2>/dev/null || { sleep 1; [[ -f $dir/rc ]] && break; echo "vm tests: the run died without a status" >&2; exit 1; }
      sleep 5
    done
    cat "$dir/log"
    rm -f "$dir/pid"
    exit "$(cat "$dir/rc")"
    ;;
  *)
    echo "usage: $0 start SCENARIO... | wait" >&2
    exit 2
    ;;
esac
