#!/usr/bin/env bash
# Install the tools the tests run that are not Python packages: Prometheus, the node exporter and Chromium
# for tests/integration/test_monitoring.py, shellcheck for ansible-test sanity's shellcheck test (skipped
# without it) (Debian 12 package names: prometheus, prometheus-node-exporter, chromium, shellcheck).
#
# Idempotent: installs only the packages dpkg does not list as installed; with all present it changes
# nothing and needs no network. The packages' services are not started: while apt runs, a policy-rc.d
# that answers 101 ("action forbidden") is in place (unless one is there already), and on a host that
# runs systemd any of the services still active afterwards is stopped. The tests start their own
# processes on free ports.
#
# Usage: scripts/install_test_tools.sh   (as root, or with sudo available)
# Exit: 0 all installed; 1 apt failed (one line on stderr says why); 2 cannot run apt here.
set -euo pipefail

PACKAGES=(prometheus prometheus-node-exporter chromium shellcheck)
SERVICES=(prometheus prometheus-node-exporter)
POLICY=/usr/sbin/policy-rc.d
me=install_test_tools

die() {
    echo "$me: $2" >&2
    exit "$1"
}

installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
    die 2 "apt-get/dpkg-query not found: this script installs Debian packages (${PACKAGES[*]})"
fi

missing=()
for p in "${PACKAGES[@]}"; do
    if installed "$p"; then echo "$me: already installed: $p"; else missing+=("$p"); fi
done
if ((${#missing[@]} == 0)); then
    echo "$me: nothing to do"
    exit 0
fi

sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null || die 2 "not root and no sudo: cannot install ${missing[*]}"
    sudo=(sudo -n)
fi

log=$(mktemp)
own_policy=0
cleanup() {
    rm -f "$log"
    if ((own_policy)); then "${sudo[@]}" rm -f "$POLICY" 2>/dev/null || true; fi
}
trap cleanup EXIT

write_policy() {
    printf '#!/bin/sh\n# %s: no service starts while the test tools install\nexit 101\n' "$me" |
        "${sudo[@]}" tee "$POLICY" >/dev/null 2>"$log" || return 1
    "${sudo[@]}" chmod 755 "$POLICY" 2>"$log"
}

if [[ ! -e $POLICY ]]; then
    own_policy=1
    if ! write_policy; then
        die 1 "cannot write $POLICY (it keeps the services from starting): $(tail -n 1 "$log")"
    fi
fi

apt_fail() {
    local reason
    reason=$(grep -E '^(E|Err):' "$log" | tail -n 1 || true)
    [[ -n $reason ]] || reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 || true)
    die 1 "apt-get $1 failed (exit $2) for ${missing[*]}: ${reason:-no output}"
}

echo "$me: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
rc=0
# another apt (the lab's, a VM stage of make test) may hold the locks: wait for them, as the lab's apt does
lock=(-o DPkg::Lock::Timeout=600)
"${sudo[@]}" apt-get "${lock[@]}" update -qq >"$log" 2>&1 || rc=$?
((rc == 0)) || apt_fail update "$rc"
"${sudo[@]}" apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1 || rc=$?
((rc == 0)) || apt_fail install "$rc"

for p in "${missing[@]}"; do
    installed "$p" || die 1 "apt-get install returned 0 but dpkg does not list $p as installed"
done
echo "$me: installed: ${missing[*]}"

if [[ $(ps -p 1 -o comm= 2>/dev/null) == systemd ]]; then
    for s in "${SERVICES[@]}"; do
        if systemctl is-active --quiet "$s"; then
            "${sudo[@]}" systemctl stop "$s"
            echo "$me: stopped service $s (the tests start their own)"
        fi
    done
fi
