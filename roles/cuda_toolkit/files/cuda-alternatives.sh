#!/bin/sh
# gpufleet cuda_toolkit: register toolkits with update-alternatives as NVIDIA's packages do
# (names `cuda` -> /usr/local/cuda and `cuda-<major>` -> /usr/local/cuda-<major>, priority major*10+minor)
# and select the default. Prints "changed: ..." for every change; with --check it changes nothing.
# --skip=NAME leaves the alternative NAME (cuda or cuda-<major>) alone: /usr/local/NAME is a link gpufleet
# does not own and adopted as it is (the plan decides; cuda_toolkit_existing).
# usage: cuda-alternatives.sh [--check] [--skip=NAME]... DEFAULT_XY XY...
set -eu
check=0
skip=" "
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
while [ "${1#--skip=}" != "$1" ]; do skip="$skip${1#--skip=} "; shift; done
default=$1; shift
skipped() { case "$skip" in *" $1 "*) return 0 ;; esac; return 1; }
ua=update-alternatives
run() { if [ "$check" -eq 0 ]; then "$@" >/dev/null; fi; }
for xy in "$@"; do
  major=${xy%%.*}; minor=${xy#*.}
  prio=$((major * 10 + minor))
  for name in cuda "cuda-$major"; do
    if skipped "$name"; then continue; fi
    link=/usr/local/$name
    if ! LC_ALL=C $ua --query "$name" 2>/dev/null | grep -qx "Alternative: /usr/local/cuda-$xy"; then
      echo "changed: $name += /usr/local/cuda-$xy (priority $prio)"
      run $ua --install "$link" "$name" "/usr/local/cuda-$xy" "$prio"
    fi
  done
done
dmajor=${default%%.*}
for name in cuda "cuda-$dmajor"; do
  if skipped "$name"; then continue; fi
  query=$(LC_ALL=C $ua --query "$name" 2>/dev/null || true)
  value=$(printf '%s\n' "$query" | sed -n 's/^Value: //p')
  best=$(printf '%s\n' "$query" | sed -n 's/^Best: //p')
  if [ "$value" != "/usr/local/cuda-$default" ]; then
    if [ "$best" = "/usr/local/cuda-$default" ]; then
      # the highest priority is the default: auto mode keeps it so (as NVIDIA's packages leave it)
      echo "changed: $name -> /usr/local/cuda-$default (auto)"
      run $ua --auto "$name"
    else
      echo "changed: $name -> /usr/local/cuda-$default"
      run $ua --set "$name" "/usr/local/cuda-$default"
    fi
  fi
done
