#!/usr/bin/env bash
# `make demo`: from a fresh machine, one command. Builds the lab when needed (docker, images, NVIDIA redist
# mirror), starts 4 lab hosts reached over SSH with the lab key, gives each a deliberately different
# CUDA/cuDNN stack through playbooks/cuda.yml and cudnn.yml (roles cuda_toolkit and cudnn, NVIDIA redist
# archives from the lab mirror; one host also gets a pip cuDNN in a virtualenv, playbooks/demo.yml), audits
# them (playbooks/audit.yml), prints the summary and the HTML report path.
#
# Environment: GPUFLEET_DEMO_COUNT (4), GPUFLEET_DEMO_PREFIX (gpufleet-demo: names must match
# inventory/demo/host_vars), GPUFLEET_DEMO_REPORT_DIR (reports/demo).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.venv/bin/python
COUNT=${GPUFLEET_DEMO_COUNT:-4}
PREFIX=${GPUFLEET_DEMO_PREFIX:-gpufleet-demo}
REPORT_DIR=${GPUFLEET_DEMO_REPORT_DIR:-$PWD/reports/demo}
export ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$PWD/.collections"
export PATH="$PWD/.venv/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }

if [[ ! -x $PY ]]; then
    step "toolchain (.venv)"
    python3 scripts/bootstrap.py
fi

step "lab: docker engine, images, NVIDIA redist mirror (built only when missing)"
$PY -m lab up

step "lab: $COUNT hosts ($PREFIX-*) with sshd on the lab network"
$PY -m lab hosts up --count "$COUNT" --prefix "$PREFIX"
INVENTORY=(-i .lab/inventory.yml -i inventory/demo)

# The lab hosts have no GPU: no driver role (playbooks/driver.yml); playbooks/cuda.yml and cudnn.yml are the
# CUDA and cuDNN halves of playbooks/site.yml, limited to the hosts that get a stack (gpufleet-demo-04 stays bare).
step "provision: playbooks/cuda.yml + cudnn.yml (roles cuda_toolkit and cudnn, redist from the lab mirror)"
ansible-playbook "${INVENTORY[@]}" playbooks/cuda.yml -e gpufleet_cuda_hosts=demo_provisioned
ansible-playbook "${INVENTORY[@]}" playbooks/cudnn.yml -e gpufleet_cudnn_hosts=demo_provisioned

step "provision: a pip cuDNN in a virtualenv"
ansible-playbook "${INVENTORY[@]}" playbooks/demo.yml

step "audit: playbooks/audit.yml over SSH"
ansible-playbook "${INVENTORY[@]}" playbooks/audit.yml -e "gpufleet_audit_report_dir=$REPORT_DIR"

step "done"
echo "HTML report: $REPORT_DIR/gpufleet-audit.html"
echo "also: $REPORT_DIR/gpufleet-audit.{json,csv,md} and $REPORT_DIR/gpufleet.prom"
echo "remove the demo hosts with: $PY -m lab hosts down --prefix $PREFIX"
