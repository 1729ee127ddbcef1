#!/usr/bin/env bash
# Run `molecule test -s gpu` where an NVIDIA GPU can be passed into containers; elsewhere say
# SKIPPED (with the reason) and exit 0, so `make test` reports it as skipped, never as passed.
# Exit codes: molecule's own; 0 with SKIPPED when the host has no NVIDIA GPU; 2 when a GPU is
# there but cannot be passed through (a bad GPUFLEET_GPU_MODE, a missing /dev/nvidia-uvm, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
[[ -x $py ]] || py=python3
molecule=.venv/bin/molecule
[[ -x $molecule ]] || molecule=molecule

rc=0
reason=$("$py" scripts/gpu_env.py check) || rc=$?
case $rc in
  0) echo "molecule gpu: $reason" ;;
  3) echo "SKIPPED: molecule gpu: $reason"; exit 0 ;;
  *) echo "molecule gpu: error: $reason" >&2; exit 2 ;;
esac
exec "$molecule" test -s gpu "$@"
