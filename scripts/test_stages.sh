#!/usr/bin/env bash
# `make test`: run its stages in order, stop at the first that fails, and end with how long each took and
# how busy the machine's CPUs were meanwhile (from /proc/stat, all CPUs together, so 50 % on two cores is
# one core's worth). The closing notes quote this table, measured by the run itself.
#   scripts/test_stages.sh lint sanity importer lab bg:test-vm unit integration molecule matrix
# Stages are make targets; `lab` is built once, by its own stage, and not again by the stages after it.
# A stage written `bg:NAME` starts in the background (under nice 10, its output in .cache/test-stages/NAME.log)
# and the stages after it run meanwhile (nice 10 for its session's autogroup too: where the kernel groups
# each session, as Debian's does, a nice counts only inside its session, and a setsid'd background stage
# at nice 10 took half the CPUs from the foreground, measured); the script waits for it at the end, prints
# its log's failures and tail, and fails when it failed. When a foreground stage fails, the background ones
# are stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -gt 0 ]] || { echo "usage: $0 STAGE..." >&2; exit 2; }

logs=.cache/test-stages
# busy and all jiffies of all CPUs (user nice system irq softirq; plus idle iowait)
# shellcheck disable=SC2016 # an awk program
export CPU_AWK='/^cpu /{ print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }'
cpu() { awk "$CPU_AWK" /proc/stat; }
# the background stages' nice, for their processes and (where the kernel has autogroups) their session
export BG_NICE=10
rows=()
start=$(date +%s)
failed=
done_stages=()
declare -A bg_pid bg_t0 bg_busy0 bg_all0

row() {  # stage, t0, busy0, all0[, t1, busy1, all1: its end, else now]
  local t1=${5:-} busy1=${6:-} all1=${7:-}
  [[ -n $t1 ]] || { t1=$(date +%s); read -r busy1 all1 < <(cpu); }
  local span=$((all1 - $4))
  rows+=("$1 $((t1 - $2)) $(((busy1 - $3) * 100 / (span > 0 ? span : 1)))")
}

summary() {
  local total=$(($(date +%s) - start)) name
  for name in "${!bg_pid[@]}"; do  # a foreground stage failed: stop the background ones
    kill -TERM -- "-${bg_pid[$name]}" 2>/dev/null || true
    echo "make test: stopped background stage $name (log $logs/$name.log)"
  done
  echo
  echo "make test: stage times ($(nproc) CPUs; bg: ran in the background)"
  printf '  %-12s %8s %6s\n' stage seconds cpu
  local r
  for r in "${rows[@]}"; do
    # shellcheck disable=SC2086 # a row is "stage seconds busy"
    printf '  %-12s %8s %5s%%\n' $r
  done
  printf '  %-12s %8s (%d min %d s)%s\n' total "$total" $((total / 60)) $((total % 60)) \
    "${failed:+, failed in $failed}"
}
trap summary EXIT

skips() {
  local d
  for d in "${done_stages[@]}"; do printf '%s\n' -o "$d"; done
}

finish_background() {  # name: wait for it, show its log, record its row
  local name=$1 rc=0
  wait "${bg_pid[$name]}" || rc=$?
  # its own end (written by the stage itself), not when the foreground came to wait for it
  local end=()
  read -r -a end <"$logs/$name.end" 2>/dev/null || true
  row "bg:$name" "${bg_t0[$name]}" "${bg_busy0[$name]}" "${bg_all0[$name]}" "${end[@]}"
  unset "bg_pid[$name]"
  echo "=== make test: $name (background) ended with exit $rc; log $logs/$name.log; its failures and its end:"
  grep -aE 'fatal:|FAILED|ERROR|failed=[1-9]|SKIPPED|passed|failed' "$logs/$name.log" | tail -n 40 || true
  echo "--- last 40 lines"
  tail -n 40 "$logs/$name.log"
  if [[ $rc != 0 ]]; then
    failed="$name (background)"
    exit "$rc"
  fi
  done_stages+=("$name")
}

for stage in "$@"; do
  mapfile -t skip < <(skips)
  if [[ $stage == bg:* ]]; then
    name=${stage#bg:}
    mkdir -p "$logs" ".cache/facts-$name"
    echo "=== make test: $name in the background ($(date -u +%H:%M:%S) UTC; log $logs/$name.log)"
    read -r busy0 all0 < <(cpu)
    bg_busy0[$name]=$busy0
    bg_all0[$name]=$all0
    bg_t0[$name]=$(date +%s)
    # its own session (so a failure elsewhere can stop all of it) and its own fact cache; at its end it
    # writes its end time and CPU counters to NAME.end, for its row
    rm -f "$logs/$name.end"
    # shellcheck disable=SC2016 # expanded by the inner bash
    ANSIBLE_CACHE_PLUGIN_CONNECTION="$PWD/.cache/facts-$name" \
      setsid nice -n "$BG_NICE" bash -c 'g=/proc/self/autogroup; [[ ! -w $g ]] || echo "$BG_NICE" >"$g"
        make --no-print-directory "${@:3}" "$1" >"$2.log" 2>&1; rc=$?
        echo "$(date +%s) $(awk "$CPU_AWK" /proc/stat)" >"$2.end"; exit "$rc"' \
      bg "$name" "$logs/$name" "${skip[@]}" &
    bg_pid[$name]=$!
    continue
  fi
  read -r busy0 all0 < <(cpu)
  t0=$(date +%s)
  echo "=== make test: $stage ($(date -u +%H:%M:%S) UTC)"
  rc=0
  make --no-print-directory "${skip[@]}" "$stage" || rc=$?
  row "$stage" "$t0" "$busy0" "$all0"
  if [[ $rc != 0 ]]; then
    failed=$stage
    exit "$rc"
  fi
  done_stages+=("$stage")
done
for name in "${!bg_pid[@]}"; do
  echo "=== make test: waiting for $name (background, started $((($(date +%s) - bg_t0[$name]) / 60)) min ago)"
  finish_background "$name"
done
