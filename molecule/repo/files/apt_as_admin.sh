#!/bin/sh
# What an admin runs on a gpufleet host: `apt-get -y upgrade` and `apt-get -y dist-upgrade` with every source the
# host has (Debian's archive and the NVIDIA repository). Prints the NVIDIA packages before and after as JSON.
set -eu
list() { dpkg-query -W -f '"${Package}": "${Version} ${Status}", ' 'cuda-*' 'libcudnn*' 'libnvvm*' 2>/dev/null; }
before=$(list)
export DEBIAN_FRONTEND=noninteractive
apt-get -y -q upgrade >/tmp/gpufleet-admin-upgrade.log 2>&1 || { tail -5 /tmp/gpufleet-admin-upgrade.log; exit 1; }
apt-get -y -q dist-upgrade >>/tmp/gpufleet-admin-upgrade.log 2>&1 || { tail -5 /tmp/gpufleet-admin-upgrade.log; exit 1; }
after=$(list)
kept=$(grep -A1 'kept back' /tmp/gpufleet-admin-upgrade.log | tail -1 | xargs || true)
printf '{"before": {%s"": ""}, "after": {%s"": ""}, "kept_back": "%s"}\n' "$before" "$after" "$kept"
