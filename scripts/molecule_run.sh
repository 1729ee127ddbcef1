#!/usr/bin/env bash
# `make molecule`: run molecule scenarios in order, stop at the first that fails, and end with how long each
# took (the closing notes quote this table, measured by the run itself).
#   scripts/molecule_run.sh smoke default:debian12 brownfield:debian13 repo
# NAME runs every platform of the scenario; NAME:PLATFORM only its platform gpufleet-NAME-PLATFORM
# (`molecule test -p`), which must be one of the platforms that molecule/NAME/molecule.yml lists. Every
# NAME:PLATFORM is checked before the first scenario runs, so a typo fails at once, not half an hour in.
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
summary() {
  echo
  echo "molecule: scenario times"
  printf '  %-24s %8s\n' scenario seconds
  local r
  for r in "${rows[@]}"; do
    # shellcheck disable=SC2086 # a row is "scenario seconds"
    printf '  %-24s %8s\n' $r
  done
  [[ -z $failed ]] || echo "  failed in $failed"
}
trap summary EXIT

for i in "${!runs[@]}"; do
  item=${*:i+1:1}
  read -r -a args <<<"${runs[$i]}"
  t0=$(date +%s)
  echo "=== molecule: ${args[*]} ($(date -u +%H:%M:%S) UTC)"
  rc=0
  "$molecule" "${args[@]}" || rc=$?
  rows+=("$item $(($(date +%s) - t0))")
  if [[ $rc != 0 ]]; then
    failed=$item
    exit "$rc"
  fi
done
