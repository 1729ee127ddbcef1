#!/usr/bin/env bash
# `make test`: run its stages in order, stop at the first that fails, and end with how long each took and
# how busy the machine's CPUs were meanwhile (from /proc/stat, all CPUs together, so 50 % on two cores is
# one core's worth). The closing notes quote this table, measured by the run itself.
#   scripts/test_stages.sh lint sanity importer lab unit integration molecule matrix
# Stages are make targets; `lab` is built once, by its own stage, and not again by the stages after it.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -gt 0 ]] || { echo "usage: $0 STAGE..." >&2; exit 2; }

cpu() { awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
rows=()
start=$(date +%s)
failed=

summary() {
  local total=$(($(date +%s) - start))
  echo
  echo "make test: stage times ($(nproc) CPUs)"
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

done_stages=()
for stage in "$@"; do
  read -r busy0 all0 < <(cpu)
  t0=$(date +%s)
  echo "=== make test: $stage ($(date -u +%H:%M:%S) UTC)"
  skip=()
  for d in "${done_stages[@]}"; do skip+=(-o "$d"); done
  rc=0
  make --no-print-directory "${skip[@]}" "$stage" || rc=$?
  read -r busy1 all1 < <(cpu)
  span=$((all1 - all0))
  rows+=("$stage $(($(date +%s) - t0)) $(((busy1 - busy0) * 100 / (span > 0 ? span : 1)))")
  if [[ $rc != 0 ]]; then
    failed=$stage
    exit "$rc"
  fi
  done_stages+=("$stage")
done
