#!/usr/bin/env bash
# `make test` and `make test-all`: run their stages in order, stop at the first that fails, and end with how
# long each took, how busy the machine's CPUs were meanwhile (from /proc/stat, all CPUs together, so 50 % on
# two cores is one core's worth), and what was skipped or cut.
#   TEST_BUDGET=1800 scripts/test_stages.sh bg:lab lint sanity wait:lab unit molecule
# Stages are make targets, each run once: a stage that is another's prerequisite is not run again by it.
# - `bg:NAME` starts NAME in the background (its output in .cache/test-stages/NAME.log) and the stages after it
#   run meanwhile; `wait:NAME` waits for it there (a stage that needs it comes after), else the end does. It
#   runs at BG_NICE, for its processes and for its session's autogroup (`NICE` in lab/vm.py says why).
# - TEST_BUDGET (seconds; 0 or unset: none) is the whole run's: a stage still running when it is spent is cut
#   (TERM, then KILL), and the run fails naming it. Nothing is cut silently.
# - A stage that prints a line starting with "SKIPPED: " (no QEMU, no GPU) is shown as skipped in the table, and
#   the lines are repeated at the end: skipped is never reported as passed.
# When a foreground stage fails, the background ones are stopped; with TEST_KEEP_GOING=1 (make test-all) every
# stage runs to its end whatever failed before it, and the run fails at the end naming each stage that failed
# (one run of hours reports every failure, and one harness failure does not throw away the VM guests' hour).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -gt 0 ]] || { echo "usage: $0 STAGE..." >&2; exit 2; }

logs=.cache/test-stages
mkdir -p "$logs"
budget=${TEST_BUDGET:-0}
# busy and all jiffies of all CPUs (user nice system irq softirq; plus idle iowait)
# shellcheck disable=SC2016 # an awk program
export CPU_AWK='/^cpu /{ print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }'
cpu() { awk "$CPU_AWK" /proc/stat; }
export BG_NICE=10
keep_going=${TEST_KEEP_GOING:-0}
rows=()
skipped=()
start=$(date +%s)
failed=
done_stages=()
declare -A bg_pid bg_t0 bg_busy0 bg_all0
fg_pid=

left() {  # seconds of the budget left for a stage starting now (0: no budget; at least 1 while one is set)
  if ((budget <= 0)); then echo 0; return; fi
  local l=$((budget - ($(date +%s) - start)))
  echo $((l > 0 ? l : 1))
}

row() {  # stage, log, t0, busy0, all0[, t1, busy1, all1: its end, else now]
  local t1=${6:-} busy1=${7:-} all1=${8:-} note='' n
  [[ -n $t1 ]] || { t1=$(date +%s); read -r busy1 all1 < <(cpu); }
  local span=$((all1 - $5))
  n=$(grep -ac '^SKIPPED: ' "$2" 2>/dev/null) || n=0
  if ((n > 0)); then
    note="SKIPPED ($n)"
    mapfile -t -O "${#skipped[@]}" skipped < <(grep -a '^SKIPPED: ' "$2")
  fi
  rows+=("$1|$((t1 - $3))|$(((busy1 - $4) * 100 / (span > 0 ? span : 1)))%|${note:+ $note}")
}

summary() {
  local total=$(($(date +%s) - start)) name r f
  for name in "${!bg_pid[@]}"; do  # a foreground stage failed: stop the background ones
    pkill -TERM -s "${bg_pid[$name]}" 2>/dev/null || true  # its session: timeout's process group is in it
    echo "make test: stopped background stage $name (log $logs/$name.log)"
  done
  echo
  echo "make test: stage times ($(nproc) CPUs; bg: ran in the background)"
  printf '  %-16s %8s %6s\n' stage seconds cpu
  for r in "${rows[@]}"; do  # stage|seconds|busy|note
    IFS='|' read -r -a f <<<"$r"
    printf '  %-16s %8s %6s%s\n' "${f[@]}"
  done
  printf '  %-16s %8s (%d min %d s)%s%s\n' total "$total" $((total / 60)) $((total % 60)) \
    "$( ((budget > 0)) && echo ", budget $budget s")" "${failed:+, failed in $failed}"
  if ((${#skipped[@]})); then
    echo "make test: ${#skipped[@]} SKIPPED (not run, so not passed):"
    printf '  %s\n' "${skipped[@]}"
  fi
}
trap summary EXIT
# timeout runs each stage in a process group of its own, out of reach of the terminal's ^C: pass it on
trap '[[ -z $fg_pid ]] || kill -TERM "$fg_pid" 2>/dev/null; failed="${failed:-interrupted}"; exit 130' INT TERM

cut() {  # stage, seconds it ran
  failed="$1 (cut at the budget)"
  echo "make test: $1 was CUT after $2 s: the run's budget of $budget s (TEST_BUDGET) is spent" >&2
  exit 124
}

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
  row "bg:$name" "$logs/$name.log" "${bg_t0[$name]}" "${bg_busy0[$name]}" "${bg_all0[$name]}" "${end[@]}"
  unset "bg_pid[$name]"
  echo "=== make test: $name (background) ended with exit $rc; log $logs/$name.log; its failures and its end:"
  grep -aE 'fatal:|FAILED|ERROR|failed=[1-9]|SKIPPED|passed|failed' "$logs/$name.log" | tail -n 40 || true
  echo "--- last 40 lines"
  tail -n 40 "$logs/$name.log"
  [[ $rc != 124 && $rc != 137 ]] || cut "bg:$name" "$((${end[0]:-$(date +%s)} - bg_t0[$name]))"
  if [[ $rc != 0 ]]; then
    failed="${failed:+$failed, }$name (background)"
    [[ $keep_going == 1 ]] && return 0
    exit "$rc"
  fi
  done_stages+=("$name")
}

for stage in "$@"; do
  mapfile -t skip < <(skips)
  if [[ $stage == wait:* ]]; then
    name=${stage#wait:}
    if [[ -n ${bg_pid[$name]:-} ]]; then
      echo "=== make test: waiting for $name (background, started $((($(date +%s) - bg_t0[$name]) / 60)) min ago)"
      finish_background "$name"
    elif [[ " ${done_stages[*]} " != *" $name "* ]]; then
      echo "make test: $stage: no background stage $name before it" >&2
      exit 2
    fi
    continue
  fi
  if [[ $stage == bg:* ]]; then
    name=${stage#bg:}
    mkdir -p ".cache/facts-$name"
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
        timeout -k 30 "$3" make --no-print-directory "${@:4}" "$1" >"$2.log" 2>&1; rc=$?
        echo "$(date +%s) $(awk "$CPU_AWK" /proc/stat)" >"$2.end"; exit "$rc"' \
      bg "$name" "$logs/$name" "$(left)" "${skip[@]}" &
    bg_pid[$name]=$!
    continue
  fi
  read -r busy0 all0 < <(cpu)
  t0=$(date +%s)
  echo "=== make test: $stage ($(date -u +%H:%M:%S) UTC)"
  : >"$logs/$stage.log"
  timeout -k 30 "$(left)" make --no-print-directory "${skip[@]}" "$stage" >"$logs/$stage.log" 2>&1 &
  fg_pid=$!
  tail -n +1 -f --pid="$fg_pid" "$logs/$stage.log" &  # shows the log as it grows, to its end
  tail_pid=$!
  rc=0
  wait "$fg_pid" || rc=$?
  wait "$tail_pid" || true
  fg_pid=
  row "$stage" "$logs/$stage.log" "$t0" "$busy0" "$all0"
  [[ $rc != 124 && $rc != 137 ]] || cut "$stage" "$(($(date +%s) - t0))"
  if [[ $rc != 0 ]]; then
    failed="${failed:+$failed, }$stage"
    [[ $keep_going == 1 ]] && continue
    exit "$rc"
  fi
  done_stages+=("$stage")
done
for name in "${!bg_pid[@]}"; do
  echo "=== make test: waiting for $name (background, started $((($(date +%s) - bg_t0[$name]) / 60)) min ago)"
  finish_background "$name"
done
[[ -z $failed ]] || exit 2  # TEST_KEEP_GOING: every stage ran; the table names those that failed
