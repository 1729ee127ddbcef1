#!/bin/sh
# Two tampered copies of the lab repository's index, served on 127.0.0.1:8080 (transient unit gpufleet-tamper):
#   sig/<dir>/x86_64/   a hash in the signed part of InRelease and Release changed: the signature does not verify
#   hash/<dir>/x86_64/  Packages changed at the same size (no Packages.gz: apt fetches Packages), the signed
#                       Release kept: the size matches, the SHA256 differs
# usage: tamper.sh REPO_URL (e.g. http://gpufleet-mirror/cuda/repos) DIR (debian12)
set -eu
url=$1; dir=$2; top=/srv/gpufleet-tamper
fetch() { python3 -c 'import sys, urllib.request; open(sys.argv[2], "wb").write(urllib.request.urlopen(sys.argv[1]).read())' "$1" "$2"; }
for kind in sig hash; do
  d=$top/$kind/$dir/x86_64
  mkdir -p "$d"
  for f in InRelease Release Release.gpg Packages Packages.gz; do fetch "$url/$dir/x86_64/$f" "$d/$f"; done
  for key in 3bf863cc.pub 8793F200.pub; do fetch "$url/$dir/x86_64/$key" "$d/$key" 2>/dev/null || rm -f "$d/$key"; done
done
d=$top/sig/$dir/x86_64
sed -i '0,/^ [0-9a-f]/s/^ 0/ 1/;0,/^ [0-9a-f]/s/^ \([1-9a-f]\)/ 0/' "$d/InRelease" "$d/Release"
d=$top/hash/$dir/x86_64
sed -i 's/^Description: cuDNN runtime libraries/Description: cuDNN runtime librarieZ/' "$d/Packages"
rm -f "$d/Packages.gz"
systemctl is-active --quiet gpufleet-tamper || \
  systemd-run --unit=gpufleet-tamper python3 -m http.server 8080 --bind 127.0.0.1 --directory "$top" >/dev/null
for _ in 1 2 3 4 5 6 7 8 9 10; do
  fetch "http://127.0.0.1:8080/sig/$dir/x86_64/Release" /dev/null 2>/dev/null && { echo ready; exit 0; }
  sleep 1
done
echo "the tampered repository is not served"; exit 1
