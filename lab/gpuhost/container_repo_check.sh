#!/usr/bin/env bash
# The repo scenario inside a container made from a host's own root filesystem (lab/gpuhost/ubuntu_repo.sh
# makes it and runs this in it): the roles with *_source nvidia_repo against the lab repository served on
# REPO_URL, check mode, converge, idempotence, molecule/repo's testinfra checks, the roles' own verify (nvcc for
# the host's GPU, a cuDNN convolution when a GPU is there), an admin's apt-get upgrade/dist-upgrade, and the
# refusals (a wrong fingerprint, a Release whose signature does not verify, a Packages whose hash differs) with
# /etc/apt unchanged and cuDNN still loading.
# Where the host's Python has no python3-apt (ansible.builtin.apt cannot run; the roles refuse before any
# change), the packages the roles planned are installed with the apt-get command ansible.builtin.apt would run,
# from the pins the roles' nvidia_repo module wrote: every step is printed as it ran.
# env: ROOT (the checkout), SITE (ansible's site-packages), REPO_URL (…/cuda/repos), DIST (ubuntu2404), FPR,
#      TAMPER_URL (…/tamper: sig/ and hash/ copies of the repository)
set -uo pipefail
cd "$ROOT" || exit 2
export LC_ALL=C.UTF-8 PYTHONUNBUFFERED=1 ANSIBLE_FORCE_COLOR=0 DEBIAN_FRONTEND=noninteractive
export ANSIBLE_CONFIG=$ROOT/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$ROOT/.collections PYTHONPATH=$SITE
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
py=/usr/bin/python3
work=$(mktemp -d)
printf '[lab]\nlocalhost ansible_connection=local ansible_python_interpreter=%s\n' "$py" >"$work/inventory"
cat >"$work/vars.json" <<EOF
{"cuda_toolkit_source": "nvidia_repo", "cuda_toolkit_repo_base_url": "$REPO_URL",
 "cuda_toolkit_repo_key_fingerprint": "$FPR", "cuda_toolkit_versions": ["13.0"],
 "cudnn_source": "nvidia_repo", "cudnn_repo_base_url": "$REPO_URL", "cudnn_repo_key_fingerprint": "$FPR",
 "cudnn_version": "9.14.0", "cudnn_cuda_major": "13", "ansible_become": false}
EOF
# ansible's console scripts carry the shebang of the Python that installed them: run them through this one
pb() { "$py" -m ansible playbook -i "$work/inventory" -e "@$work/vars.json" "$@"; }
mod() { ANSIBLE_CALLBACK_RESULT_FORMAT=json "$py" -m ansible adhoc -i "$work/inventory" localhost -m "$1" -a "$2"; }
recap() { grep -E '^localhost +:' "$1"; }
nvidia_pkgs() {
  dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' 'cuda-*' 'libcudnn*' 'libnvvm*' 2>/dev/null |
    awk '$1 ~ /^.i/ {print $2, $3}'
}
etc_apt() { find /etc/apt -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16; }
cudnn_version() {
  "$py" -c 'import ctypes; l = ctypes.CDLL("libcudnn.so.9"); l.cudnnGetVersion.restype = ctypes.c_size_t
print(l.cudnnGetVersion())'
}
has_python_apt() { "$py" -c 'import apt_pkg' 2>/dev/null; }
repo_args() {  # nvidia_repo's arguments as the role passes them ($1: cuda_toolkit | cudnn, $2: present | pinned):
  # the plan's repo (plan/repo.repo_config for this host) and, pinned, the plan's package specs
  PYTHONPATH="$ROOT/.collections:$SITE" "$py" - "$1" "$2" "${URL:-$REPO_URL}" "${KEYFPR:-$FPR}" <<'PY'
import json, platform, sys
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as plan_repo
role, state, url, fpr = sys.argv[1:5]
found = platform.freedesktop_os_release()
repo = plan_repo.repo_config(found["NAME"].split()[0], found["VERSION_ID"], platform.machine(), url, fpr, prefix=role)
args = {"state": state, "repo": repo, "caller": role}
if state == "pinned" and role == "cuda_toolkit":
    args.update(packages_for=role, versions=["13.0"], specs=plan_repo.cuda_toolkit_packages(["13.0"], repo["repo_dir"]))
elif state == "pinned":
    args.update(packages_for=role, cuda_major="13", specs=plan_repo.cudnn_packages("9.14.0", "13", repo["repo_dir"]))
print(json.dumps(args))
PY
}

echo "### the container"
head -n 2 /etc/os-release
echo "kernel $(uname -r); $(dpkg-query -W | wc -l) packages; $("$py" -V); python3-apt: $(has_python_apt && echo yes || echo no)"
echo "GPU: $(nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//' || echo none)"
echo "### NVIDIA packages before (purged from the image)"; nvidia_pkgs | wc -l

echo "### converge --check"
pb molecule/repo/converge.yml --check >"$work/check.log" 2>&1
echo "rc=$?"; recap "$work/check.log"; grep -m3 -E 'msg|would' "$work/check.log" | cut -c1-400
echo "### converge"
pb molecule/repo/converge.yml >"$work/converge.log" 2>&1
rc=$?
echo "rc=$rc"; recap "$work/converge.log"
grep -m1 -A6 'fatal' "$work/converge.log" | cut -c1-400
echo "/etc/apt after the converge: $(etc_apt); NVIDIA packages: $(nvidia_pkgs | wc -l)"

if [[ $rc -ne 0 ]] && ! has_python_apt; then
  echo "### no python3-apt: the roles' module steps, and the apt-get that ansible.builtin.apt would run"
  for role in cuda_toolkit cudnn; do
    mod gpufleet.nvidia.nvidia_repo "$(repo_args $role present)" | head -n 3
  done
  mod gpufleet.nvidia.nvidia_repo "$(repo_args cuda_toolkit pinned)" >"$work/cuda.json"
  mod gpufleet.nvidia.nvidia_repo "$(repo_args cudnn pinned)" >"$work/cudnn.json"
  grep -h -m1 -E '"msg"' "$work/cuda.json" "$work/cudnn.json" | cut -c1-400
  missing=$("$py" -c '
import json, sys
out = []
for path in sys.argv[1:]:
    text = open(path).read()
    start = text.find("{", text.find("localhost | "))
    out += json.loads(text[start:]).get("packages", {}).get("missing", [])
print(" ".join(out))' "$work/cuda.json" "$work/cudnn.json")
  echo "apt-get install -y -q --allow-downgrades $missing"
  # shellcheck disable=SC2086
  apt-get install -y -q --allow-downgrades $missing >"$work/apt.log" 2>&1
  echo "rc=$?"; grep -vE '^(Get|Selecting|Preparing|Unpacking|\(Reading)' "$work/apt.log" | grep -iE -B2 -A3 'error|warn' | head -n 30
  echo "### converge (the packages are there: the roles hold, configure and verify)"
  pb molecule/repo/converge.yml >"$work/converge.log" 2>&1
  echo "rc=$?"; recap "$work/converge.log"; grep -m1 -A6 'fatal' "$work/converge.log" | cut -c1-400
fi

echo "### converge again (idempotence: changed=0)"
pb molecule/repo/converge.yml >"$work/idem.log" 2>&1
echo "rc=$?"; recap "$work/idem.log"
echo "### converge --check after (changed=0)"
pb molecule/repo/converge.yml --check >"$work/check2.log" 2>&1
echo "rc=$?"; recap "$work/check2.log"
echo "### the roles' own verify (nvcc for this host's GPU, cuDNN with a convolution when a GPU is present)"
sed -n '/^TASK \[.*Verify | \(What\|Result\)/,/^$/p' "$work/idem.log" | grep -vE '^(TASK|$)' | cut -c1-300 | head -n 24
echo "### NVIDIA packages after"; nvidia_pkgs; echo "held: $(apt-mark showhold | xargs)"
echo "### molecule/repo's testinfra checks"
"$py" -m pytest -p no:cacheprovider -q -rfE --hosts=local:// molecule/repo/tests/test_repo.py 2>&1 | tail -n 15
echo "### an admin's apt-get upgrade and dist-upgrade"
sh molecule/repo/files/apt_as_admin.sh | "$py" -c '
import json, sys
doc = json.load(sys.stdin)
print("unchanged" if doc["before"] == doc["after"] else "CHANGED", "kept back:", doc["kept_back"] or "-")'

echo "### refusals: /etc/apt $(etc_apt), cuDNN $(cudnn_version) before"
bad=0000000000000000000000000000000000000000
mod gpufleet.nvidia.nvidia_repo "$(KEYFPR=$bad repo_args cudnn present)" | grep -m1 -oE '"msg": .{0,300}'
for kind in sig hash; do
  mod gpufleet.nvidia.nvidia_repo "$(URL=$TAMPER_URL/$kind repo_args cudnn present)" |
    grep -m1 -oE '"msg": .{0,300}'
done
echo "### after the refusals: /etc/apt $(etc_apt), cuDNN $(cudnn_version)"
rm -rf "$work"
