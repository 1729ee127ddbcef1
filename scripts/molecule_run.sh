#!/usr/bin/env bash
# `make molecule`: run molecule scenarios in order, MOLECULE_JOBS at a time (default 1: one after another, its
# output on the terminal), stop at the first that fails, and end with how long each took.
#   MOLECULE_JOBS=2 scripts/molecule_run.sh repo:debian12 redist:debian12 audit
# NAME runs every platform of the scenario; NAME:PLATFORM only its platform gpufleet-NAME-PLATFORM
# (`molecule test -p`), which must be one of the platforms that molecule/NAME/molecule.yml lists. Every
# NAME:PLATFORM is checked before the first scenario runs, so a typo fails at once, not half an hour in.
# TEST_KEEP_GOING=1 (make test-all): a failure stops nothing; every scenario runs and the run fails at the end
# naming each that failed.
set -euo pipefail
cd "$(dirname "$0")/.."
molecule=${MOLECULE:-.venv/bin/molecule}
[[ -x $molecule ]] || molecule=molecule
py=${PYTHON:-.venv/bin/python}
[[ -x $py ]] || py=python3
[[ $# -gt 0 ]] || { echo "usage: $0 SCENARIO[:PLATFORM]..." >&2; exit 2; }

# exit 0 when molecule/NAME/molecule.yml lists the platform
has_platform() {  # scenario, platform
  "$py" -c 'import sys, yaml
try:
    with open(sys.argv[1]) as f:
        names = [p["name"] for p in yaml.safe_load(f).get("platforms") or []]
except OSError:
    names = []
sys.exit(sys.argv[2] not in names)' "molecule/$1/molecule.yml" "$2"
}

# the molecule arguments of each item, checked before the first one runs
runs=()
for item in "$@"; do
  name=${item%%:*}
  if [[ $item == *:* ]]; then
    platform="gpufleet-$name-${item#*:}"
    if ! has_platform "$name" "$platform"; then
      echo "molecule: $item: molecule/$name/molecule.yml has no platform $platform" >&2
      exit 2
    fi
    runs+=("test -s $name -p $platform")
  else
    runs+=("test -s $name")
  fi
done

rows=()
failed=
first_rc=0
keep_going=${TEST_KEEP_GOING:-0}
summary() {
  echo
  echo "molecule: scenario times ($jobs at a time)"
  printf '  %-24s %8s\n' scenario seconds
  local r
  for r in "${rows[@]}"; do
    # shellcheck disable=SC2086 # a row is "scenario seconds"
    printf '  %-24s %8s\n' $r
  done
  [[ -z $failed ]] || echo "  failed in $failed"
}
trap summary EXIT

jobs=${MOLECULE_JOBS:-1}
if ((jobs <= 1)); then
  for i in "${!runs[@]}"; do
    item=${*:i+1:1}
    read -r -a args <<<"${runs[$i]}"
    t0=$(date +%s)
    echo "=== molecule: ${args[*]} ($(date -u +%H:%M:%S) UTC)"
    rc=0
    "$molecule" "${args[@]}" || rc=$?
    rows+=("$item $(($(date +%s) - t0))")
    if [[ $rc != 0 ]]; then
      failed="${failed:+$failed }$item"
      ((first_rc)) || first_rc=$rc
      [[ $keep_going == 1 ]] && continue
      exit "$rc"
    fi
  done
  exit "$first_rc"
fi

# MOLECULE_JOBS > 1: that many scenarios at a time, in the order given (the longest first packs best), each
# in a session of its own with its output in .cache/molecule/ITEM.log; the first failure stops the others and
# shows its log's end.
logs=.cache/molecule
mkdir -p "$logs"
declare -A pid_item=() pid_t0=()
stop_all() {
  local p
  for p in "${!pid_item[@]}"; do
    pkill -TERM -s "$p" 2>/dev/null || true
    echo "molecule: stopped ${pid_item[$p]} (log $logs/${pid_item[$p]//:/_}.log)"
  done
}
trap 'stop_all; summary' EXIT
next=0
while ((next < ${#runs[@]})) || ((${#pid_item[@]})); do
  while ((next < ${#runs[@]} && ${#pid_item[@]} < jobs)); do
    item=${*:next+1:1}
    read -r -a args <<<"${runs[$next]}"
    echo "=== molecule: ${args[*]} started ($(date -u +%H:%M:%S) UTC; log $logs/${item//:/_}.log)"
    setsid "$molecule" "${args[@]}" >"$logs/${item//:/_}.log" 2>&1 &
    pid_item[$!]=$item
    pid_t0[$!]=$(date +%s)
    next=$((next + 1))
  done
  rc=0
  wait -n -p done_pid "${!pid_item[@]}" || rc=$?
  item=${pid_item[$done_pid]}
  unset "pid_item[$done_pid]"
  rows+=("$item $(($(date +%s) - pid_t0[$done_pid]))")
  if [[ $rc != 0 ]]; then
    failed="${failed:+$failed }$item"
    ((first_rc)) || first_rc=$rc
    echo "=== molecule: $item FAILED (exit $rc); the end of $logs/${item//:/_}.log:"
    tail -n 120 "$logs/${item//:/_}.log"
    [[ $keep_going == 1 ]] && continue
    exit "$rc"
  fi
  echo "=== molecule: $item passed ($(date -u +%H:%M:%S) UTC)"
done
[[ $first_rc == 0 ]] || exit "$first_rc"
