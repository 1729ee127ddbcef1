#!/bin/sh
# gpufleet cuda_toolkit: register toolkits with update-alternatives as NVIDIA's packages do
# (names `cuda` -> /usr/local/cuda and `cuda-<major>` -> /usr/local/cuda-<major>, priority major*10+minor)
# and select the default. Prints "changed: ..." for every change; with --check it changes nothing.
# usage: cuda-alternatives.sh [--check] DEFAULT_XY XY...
set -eu
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
default=$1; shift
ua=update-alternatives
run() { if [ "$check" -eq 0 ]; then "$@" >/dev/null; fi; }
for xy in "$@"; do
  major=${xy%%.*}; minor=${xy#*.}
  prio=$((major * 10 + minor))
  for name in cuda "cuda-$major"; do
    link=/usr/local/$name
    if ! LC_ALL=C $ua --query "$name" 2>/dev/null | grep -qx "Alternative: /usr/local/cuda-$xy"; then
      echo "changed: $name += /usr/local/cuda-$xy (priority $prio)"
      run $ua --install "$link" "$name" "/usr/local/cuda-$xy" "$prio"
    fi
  done
done
dmajor=${default%%.*}
for name in cuda "cuda-$dmajor"; do
  value=$(LC_ALL=C $ua --query "$name" 2>/dev/null | sed -n 's/^Value: //p')
  if [ "$value" != "/usr/local/cuda-$default" ]; then
    echo "changed: $name -> /usr/local/cuda-$default"
    run $ua --set "$name" "/usr/local/cuda-$default"
  fi
done
