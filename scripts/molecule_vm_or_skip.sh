#!/usr/bin/env bash
# Run a molecule scenario on lab VM guests (`python -m lab vm`, lab/README.md "VM guests") where QEMU can run;
# elsewhere print SKIPPED with the reason and exit 0, so `make test` counts it as skipped, never as passed.
#   scripts/molecule_vm_or_skip.sh driver-vm [more scenarios...]
# GPUFLEET_VM=0 skips on purpose (say why in GPUFLEET_VM_WHY). QEMU, OVMF and the disk tools are installed
# from Debian when this runs as root; without root and without them the scenarios are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
molecule=.venv/bin/molecule
[[ -x $molecule ]] || molecule=molecule
[[ $# -gt 0 ]] || { echo "usage: $0 SCENARIO..." >&2; exit 2; }

skip() {
  for s in "$@"; do echo "SKIPPED: molecule $s: $reason"; done
  exit 0
}
if [[ ${GPUFLEET_VM:-1} == 0 ]]; then
  reason="GPUFLEET_VM=0${GPUFLEET_VM_WHY:+ ($GPUFLEET_VM_WHY)}"
  skip "$@"
fi
if ! command -v qemu-system-x86_64 >/dev/null && [[ $(id -u) != 0 ]]; then
  reason="qemu-system-x86_64 is missing and installing it needs root (apt-get install qemu-system-x86 qemu-utils ovmf mtools grub-efi-amd64-bin mmdebstrap)"
  skip "$@"
fi
for s in "$@"; do
  "$molecule" test -s "$s"
done
