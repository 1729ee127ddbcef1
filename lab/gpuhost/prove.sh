#!/usr/bin/env bash
# Prove gpufleet's claims on a real GPU host that has no network (the H200 of the device tool:
# Ubuntu 24.04, host-managed driver 580 under /usr/local/nvidia, CUDA 13.0 + cuDNN 9.14 from NVIDIA's
# apt packages (held), cuDNN 9.19 from pip in /opt/torch/.venv).
#
# Here, once:  the py3.12 wheels of ansible-core, resolvelib, cryptography, cffi, pycparser, pytest-testinfra in .whl
#               (git-ignored): pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl ...
# There:       carry [.whl, .collections]; run  lab/gpuhost/prove.sh STEP...
# Steps: compat facts driver cudnn audit redesign brownfield owners cudnn-loader ubuntu-repo gpu-bare (default: all). Outputs: $OUT/<step>.txt (+ audit.json).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
OUTDIR=${OUT:-/tmp/gpufleet-out}
SITE=/tmp/gpufleet-site
mkdir -p "$OUTDIR"
export LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1 ANSIBLE_FORCE_COLOR=0
export ANSIBLE_CONFIG=$ROOT/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$ROOT/.collections
py=$(command -v python3)
X=(-e "ansible_python_interpreter=$py")
# playbooks/NAME [ansible-playbook options]: run it here, then say its exit code
playbook() { ansible-playbook "playbooks/$1" "${X[@]}" "${@:2}"; echo "rc=$?"; }

setup() {
  if [[ ! -d $SITE/ansible ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      "${GPUFLEET_WHEELS:-.whl}"/*.whl || { echo "pip install of ${GPUFLEET_WHEELS:-.whl} failed" >&2; exit 2; }
  fi
  export PYTHONPATH=$SITE PATH=$SITE/bin:$PATH
}

compat() {
  local a
  for a in '{"cuda_version":"13.0","cudnn_version":"9.14.0","cudnn_cuda_major":13}' \
    '{"cuda_version":"13.2"}' '{"cuda_version":"12.8"}' \
    '{"gpus":[{"name":"Tesla V100-SXM2-32GB"}],"cuda_version":"13.0","driver_branch":"580"}'; do
    echo "### nvidia_compat $a"
    ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_compat -a "$a"
    echo "rc=$?"
  done
  echo "### playbooks/preflight.yml (CUDA 13.0, cuDNN 9.14.0 for CUDA 13)"
  playbook preflight.yml -e '{"cuda_toolkit_versions":["13.0"],"cudnn_version":"9.14.0","cudnn_cuda_major":13,"nvidia_driver_branch":"580"}'
}

facts() {
  ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_facts
  echo "rc=$?"
}

driver() {
  local b
  for b in 580 570; do
    echo "### playbooks/driver.yml nvidia_driver_branch=$b"
    ansible-playbook playbooks/driver.yml "${X[@]}" -e gpufleet_driver_hosts=localhost -e ansible_become=false \
      -e nvidia_driver_branch=$b
    echo "rc=$?"
  done
}

cudnn() {
  echo "### playbooks/cudnn.yml source nvidia_repo, existing repositories, 9.14.0.64 for CUDA 13"
  ansible-playbook playbooks/cudnn.yml "${X[@]}" -e gpufleet_cudnn_hosts=localhost -e ansible_become=false \
    -e '{"cudnn_source":"nvidia_repo","cudnn_repo_use_existing":true,"cudnn_version":"9.14.0.64","cudnn_cuda_major":13}'
  echo "rc=$?"
}

audit() {
  rm -rf "$OUTDIR/reports"
  playbook audit.yml -e gpufleet_audit_report_dir="$OUTDIR/reports"
  cp "$OUTDIR"/reports/*.json "$OUTDIR/audit.json" 2>/dev/null
  rm -rf "$OUTDIR/reports"
}

redesign() {
  echo "### playbooks/cuda.yml --tags cuda_toolkit_verify (NVIDIA's packages already there: verify only)"
  ansible-playbook playbooks/cuda.yml "${X[@]}" -e gpufleet_cuda_hosts=localhost -e ansible_become=false \
    -e '{"cuda_toolkit_source":"nvidia_repo","cuda_toolkit_repo_use_existing":true,"cuda_toolkit_versions":["13.0"]}' \
    --tags cuda_toolkit_verify
  echo "rc=$?"
  echo "### playbooks/cudnn.yml --tags cudnn_verify"
  ansible-playbook playbooks/cudnn.yml "${X[@]}" -e gpufleet_cudnn_hosts=localhost -e ansible_become=false \
    -e '{"cudnn_source":"nvidia_repo","cudnn_repo_use_existing":true,"cudnn_version":"9.14.0.64","cudnn_cuda_major":13}' \
    --tags cudnn_verify
  echo "rc=$?"
  echo "### playbooks/preflight.yml: cuDNN 9.12.0 for CUDA 11 with CUDA 13.0 (the roles refuse it: so must preflight)"
  ansible-playbook playbooks/preflight.yml "${X[@]}" \
    -e '{"cuda_toolkit_versions":["13.0"],"cudnn_version":"9.12.0","cudnn_cuda_major":11}'
  echo "rc=$?"
  echo "### playbooks/cudnn.yml --check with cudnn_cuda_major 14 (refused before any network access)"
  ansible-playbook playbooks/cudnn.yml "${X[@]}" -e gpufleet_cudnn_hosts=localhost -e ansible_become=false \
    -e '{"cudnn_cuda_major":14}' --check
  echo "rc=$?"
}

tree_state() {
  # every file of the package-managed toolkit and cuDNN (sha256), what dpkg says of the installed cuda and
  # cudnn packages, and what the loader resolves
  (cd /usr/local/cuda-13.0 && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
  dpkg -L libcudnn9-cuda-13 | while read -r f; do [[ -f $f ]] && echo "$f"; done | xargs sha256sum | sha256sum
  local pkgs
  pkgs=$(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 'cuda-*' 'libcudnn*' | awk '$1 == "ii" {print $2}')
  echo "installed cuda/cudnn packages: $(echo "$pkgs" | wc -l)"
  dpkg -V $pkgs 2>&1 | head -20
  echo "dpkg -V rc=${PIPESTATUS[0]}"
  ldconfig -p | grep -E 'libcudnn\.so\.9 |libcudart\.so\.13 '
  ls /opt/nvidia/cudnn 2>/dev/null
}

owners() {
  echo "### who owns the toolkit's key files and the linker files (dpkg -S)"
  dpkg -S /usr/local/cuda-13.0/bin/nvcc /usr/local/cuda-13.0/version.json /etc/ld.so.conf.d/*cuda* 2>&1
  ls -l /etc/ld.so.conf.d/; head -n 3 /etc/ld.so.conf.d/*.conf; cat /var/lib/dpkg/alternatives/cuda
  echo "### nvidia_facts gather_subset [cuda, owners] (owner_paths /opt/nvidia/cudnn)"
  ansible localhost "${X[@]}" -m gpufleet.nvidia.nvidia_facts \
    -a '{"gather_subset": ["cuda", "owners"], "owner_paths": ["/opt/nvidia/cudnn"]}'
  echo "rc=$?"
}

cudnn-loader() {
  # cuDNN from redist next to the apt cuDNN: what libcudnn.so.9 resolves to before and after
  python3 -m lab.gpuhost.mirror_from_host --out .lab/mirror --cudnn-major 13 --skip-cuda >/dev/null 2>&1 || echo "mirror build failed"
  local v=(-e gpufleet_cudnn_hosts=localhost -e ansible_become=false -e cudnn_source=redist
    -e cudnn_version=9.14.0 -e cudnn_cuda_major=13 -e "cudnn_redist_base_url=file://$ROOT/.lab/mirror")
  echo "### before"; tree_state
  echo "### cudnn.yml source redist, defaults (cudnn_system_default: false) --check"
  playbook cudnn.yml "${v[@]}" --check
  echo "### the same, for real"
  playbook cudnn.yml "${v[@]}"
  echo "### cudnn_system_default: true --check (the plan says what would change; nothing changes)"
  playbook cudnn.yml "${v[@]}" -e cudnn_system_default=true --check
  echo "### after the refusals and the check"; tree_state
  echo "### cudnn_existing: adopt (the apt copy is 9.14.0: nothing installed, verified)"
  playbook cudnn.yml "${v[@]}" -e cudnn_existing=adopt
  echo "### cudnn_ldconfig: false (beside the apt copy, outside the linker cache), twice"
  playbook cudnn.yml "${v[@]}" -e cudnn_ldconfig=false
  playbook cudnn.yml "${v[@]}" -e cudnn_ldconfig=false
  echo "### after"; tree_state
}

brownfield() {
  # The first wave's failure: cuda.yml with source redist over the package-managed /usr/local/cuda-13.0.
  python3 -m lab.gpuhost.mirror_from_host --out .lab/mirror --cuda 13.0 >/dev/null 2>&1 || echo "mirror build failed"
  local v=(-e gpufleet_cuda_hosts=localhost -e ansible_become=false -e cuda_toolkit_source=redist
    -e '{"cuda_toolkit_versions":["13.0"]}' -e "cuda_toolkit_redist_base_url=file://$ROOT/.lab/mirror")
  echo "### before"; tree_state
  echo "### cuda.yml source redist over the package's tree (default cuda_toolkit_existing: refuse) --check"
  playbook cuda.yml "${v[@]}" --check
  echo "### the same, for real"
  playbook cuda.yml "${v[@]}"
  echo "### after the refusals"; tree_state
  echo "### cuda_toolkit_existing: adopt (twice: the second run must change nothing)"
  playbook cuda.yml "${v[@]}" -e cuda_toolkit_existing=adopt
  playbook cuda.yml "${v[@]}" -e cuda_toolkit_existing=adopt
  echo "### cuda_toolkit_existing: replace (refused for a package's tree)"
  playbook cuda.yml "${v[@]}" -e cuda_toolkit_existing=replace
  echo "### after"; tree_state
}

ubuntu-repo() {
  # issue 16: an Ubuntu 24.04 container from this host's root filesystem, the lab repository built here
  SITE=$SITE bash lab/gpuhost/ubuntu_repo.sh
}
gpu-bare() {
  nvidia-smi -L
  GPUFLEET_EXPECT_CUDNN=${GPUFLEET_EXPECT_CUDNN:-9.14.0.64} GPUFLEET_EXPECT_GPU=H200 \
    python3 -m pytest -p no:cacheprovider -v -rA --hosts=local:// tests/gpu
  echo "rc=$?"
}

setup
steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=(compat facts driver cudnn audit redesign brownfield owners cudnn-loader gpu-bare)
for s in "${steps[@]}"; do
  echo "== $s"
  "$s" >"$OUTDIR/$s.txt" 2>&1
  tail -5 "$OUTDIR/$s.txt"
done
