#!/usr/bin/env bash
# Issue 16's "Ubuntu 24.04 for real" on a GPU host that has no network and no container engine (the H200):
#   1. the lab repository (NVIDIA's names and layout, signed with a lab key made here), built on this host from
#      its own NVIDIA packages (lab/gpuhost/mirror_from_host.py, then `python -m lab repo build` for that subset);
#   2. a container image made from this host's own root filesystem: no /proc, /sys, /dev, /tmp, /run, no
#      read-only driver mount, no /opt/torch, no checkout; /usr hard-linked (no copy), the rest copied; its NVIDIA
#      CUDA/cuDNN packages purged inside it, so the roles start from a host without them;
#   3. the container: a chroot in its own mount and PID namespaces (unshare), /dev and the driver mount bound
#      in for the GPU, the repository served on 127.0.0.1 over HTTP; lab/gpuhost/container_repo_check.sh inside.
# Nothing outside /tmp changes on the host. env: SITE (ansible's site-packages, from prove.sh's setup),
# SRC (the root filesystem to make the image from; default /), LAB (an existing lab dir: skip step 1),
# DIST (ubuntu2404), W (work dir, /tmp/gpufleet-u2404).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
SITE=${SITE:-/tmp/gpufleet-site}
SRC=${SRC:-/}
DIST=${DIST:-ubuntu2404}
W=${W:-/tmp/gpufleet-u2404}
R=$W-root
PORT=${PORT:-8081}
py=$(command -v python3)
t0=$SECONDS
lap() { echo "($(( SECONDS - t0 )) s)"; }
rm -rf "$W" "$R"
mkdir -p "$W/www/tamper" "$R"

echo "### 1. the lab repository from this host's own packages"
if [[ -z ${LAB:-} ]]; then
  LAB=$W/lab
  "$py" -m lab.gpuhost.mirror_from_host --out "$LAB/mirror" --cuda 13.0 --cudnn-major 13 2>&1 | tail -n 2
  GPUFLEET_LAB_DIR=$LAB "$py" -m lab repo build --cudnn-version 9.14.0.64 --cuda-major 13 --dist "$DIST" 2>&1 |
    tail -n 2
fi
FPR=$(cat "$LAB/repo-key/fingerprint")
repo=$LAB/mirror/cuda/repos/$DIST/x86_64
ls "$repo" | sed -n '1,40p' | xargs
du -sh "$repo" | cut -f1; lap

# the tampered copies (as molecule/repo/files/tamper.sh makes them): sig/ a signed hash changed, hash/ Packages
# changed at the same size with the signed Release kept
for kind in sig hash; do
  d=$W/www/tamper/$kind/$DIST/x86_64
  mkdir -p "$d"
  cp "$repo"/{InRelease,Release,Release.gpg,Packages} "$repo"/*.pub "$d/"
done
sed -i '0,/^ [0-9a-f]/s/^ 0/ 1/;0,/^ [0-9a-f]/s/^ \([1-9a-f]\)/ 0/' "$W/www/tamper/sig/$DIST/x86_64/"{InRelease,Release}
sed -i 's/^Description: cuDNN runtime libraries/Description: cuDNN runtime librarieZ/' \
  "$W/www/tamper/hash/$DIST/x86_64/Packages"
mkdir -p "$W/www/cuda" && ln -s "$LAB/mirror/cuda/repos" "$W/www/cuda/repos"
"$py" -m http.server "$PORT" --bind 127.0.0.1 --directory "$W/www" >"$W/http.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT

echo "### 2. the image from $SRC"
top=${ROOT#/}
top=${top%%/*}
for d in "$SRC"/*; do
  n=${d##*/}
  case $n in
    proc | sys | dev | tmp | run | mnt | lost+found | "$top") mkdir -p "$R/$n" ;;
    usr) cp -al "$d" "$R/" 2>/dev/null ;;  # hard links; the driver mount (another file system) is left out
    opt) mkdir -p "$R/opt"; for o in "$d"/*; do [[ ${o##*/} == torch ]] || cp -a "$o" "$R/opt/"; done ;;
    *) cp -a "$d" "$R/" ;;
  esac
done
rm -rf "$R/usr/local/nvidia" && mkdir -p "$R/usr/local/nvidia"
echo "image: $(du -sh --apparent-size "$R" | cut -f1), $(find "$R" -xdev | wc -l) entries (/usr hard-linked)"
# the Python packages ansible and pytest need that this host keeps in /opt/torch's venv (left out of the image)
mkdir -p "$W/pydeps"
src=$("$py" -c 'import jinja2, os; print(os.path.dirname(os.path.dirname(jinja2.__file__)))')
for n in jinja2 markupsafe yaml _yaml pytest _pytest pluggy iniconfig pygments py; do
  for p in "$src/$n" "$src/$n.py" "$src"/"$n"-*.dist-info "$src"/"${n^}"-*.dist-info "$src"/PyYAML-*.dist-info \
    "$src"/MarkupSafe-*.dist-info "$src"/Jinja2-*.dist-info; do
    [[ -e $p ]] && cp -a "$p" "$W/pydeps/"
  done
done
lap

echo "### 3. the container"
cat >"$W/enter.sh" <<'EOF'
set -e
R=$1; shift
mount --make-rprivate /
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount -t tmpfs tmpfs "$R/run"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
if [ -d /usr/local/nvidia/lib64 ]; then
  mount --bind /usr/local/nvidia "$R/usr/local/nvidia" && mount -o remount,bind,ro "$R/usr/local/nvidia"
fi
for p in "$@"; do mkdir -p "$R$p"; mount --bind "$p" "$R$p"; done
exec chroot "$R" /bin/bash -c "$INNER"
EOF
INNER=$(cat <<EOF
pk=\$(dpkg-query -W -f '\${Package}\t\${Maintainer}\n' | awk -F'\t' 'tolower(\$2) ~ /@nvidia\.com/ {print \$1}')
dpkg --purge --force-all \$pk >/tmp/purge.log 2>&1
echo "purged \$(echo \$pk | wc -w) of NVIDIA's packages (Maintainer @nvidia.com) from the image (rc=\$?)"
for a in \$(ls /var/lib/dpkg/alternatives); do  # the purged packages' alternatives (cuda, cuda-13, cuDNN's headers)
  grep -qE 'cudnn|/usr/local/cuda' /var/lib/dpkg/alternatives/\$a && update-alternatives --remove-all \$a >/dev/null 2>&1
done
find /usr/include -maxdepth 1 -name 'cudnn*.h' -xtype l -delete
rm -rf /usr/local/cuda /usr/local/cuda-13 /usr/local/cuda-13.0 /etc/ld.so.conf.d/*cuda* /etc/ld.so.conf.d/gds-*.conf
ldconfig
ROOT=$ROOT SITE=$SITE:$W/pydeps DIST=$DIST FPR=$FPR REPO_URL=http://127.0.0.1:$PORT/cuda/repos \
  TAMPER_URL=http://127.0.0.1:$PORT/tamper bash $ROOT/lab/gpuhost/container_repo_check.sh
EOF
)
export INNER
unshare --mount --pid --fork --kill-child bash "$W/enter.sh" "$R" "$ROOT" "${SITE%%:*}" "$W"
echo "rc=$?"; lap
[[ -n ${KEEP:-} ]] || rm -rf "$R" "$W"
