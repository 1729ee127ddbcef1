#!/bin/sh
# gpufleet lab: a build cache for DKMS module builds, installed as /usr/bin/make (the real one diverted to
# /usr/bin/make.distrib with dpkg-divert: dpkg runs maintainer scripts with PATH=/usr/sbin:/usr/bin:/sbin:/bin,
# so /usr/local/bin is not searched) in lab guests and in the native chroot that records it (lab/vmdkms.py;
# lab/README.md "DKMS build cache"). Not part of the
# collection: the role's path is unchanged (apt -> the package's postinst -> dkms build -> make -> dkms
# install -> depmod -> initramfs); only the compiler's work is replayed.
#
# DKMS runs the package's MAKE command in /var/lib/dkms/<module>/<version>/build. For that top-level make
# only, the key is sha256 of: the build tree's files (not make.log), the arguments (without -j), the kernel
# headers' Module.symvers and the compiler's version. record: run the real make, then keep the .ko files it
# made under the key. replay: a kept key puts its .ko files back instead of compiling; a miss compiles.
# Sub-makes (kbuild calls $(MAKE)) and every other directory go straight to the real make.
# (The GPUFLEET_LAB_DKMS_* variables exist for the lab's own tests.)
real=${GPUFLEET_LAB_DKMS_MAKE:-/usr/bin/make.distrib}
cache=${GPUFLEET_LAB_DKMS_CACHE:-/var/cache/gpufleet-lab/dkms}
tree=${GPUFLEET_LAB_DKMS_TREE:-/var/lib/dkms}
modules=${GPUFLEET_LAB_DKMS_MODULES:-/lib/modules}
if [ -n "${GPUFLEET_LAB_MAKE_INNER:-}" ]; then exec "$real" "$@"; fi
GPUFLEET_LAB_MAKE_INNER=1
export GPUFLEET_LAB_MAKE_INNER
case "$PWD" in
    "$tree"/*/build) ;;
    *) exec "$real" "$@" ;;
esac
mode=$(cat "$cache/mode" 2>/dev/null || true)
case "$mode" in
    record | replay) ;;
    *) exec "$real" "$@" ;;
esac
kver=$(uname -r)
args=""
for arg in "$@"; do
    case "$arg" in
        -j*) ;;
        KERNEL_UNAME=* | KERNELRELEASE=* | KVER=* | KERNELVER=*) kver=${arg#*=}; args="$args $arg" ;;
        *) args="$args $arg" ;;
    esac
done
headers=$(readlink -f "$modules/$kver/build")
# the compiler kbuild uses is the kernel's own (CONFIG_CC_VERSION_TEXT names it, e.g. gcc-12); plain gcc may
# not even be installed
cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\{0,1\}\([^ "]*\).*/\1/p' "$headers/include/config/auto.conf" 2>/dev/null)
key=$(
    {
        find . -type f ! -name make.log -print | LC_ALL=C sort | xargs -r sha256sum
        echo "args:$args"
        sha256sum "$headers/Module.symvers" 2>/dev/null || echo "no symvers for $kver"
        echo "cc:${cc:-gcc} $("${cc:-gcc}" --version 2>/dev/null | head -n 1)"
    } | sha256sum | cut -c1-32
)
kept="$cache/$kver/$key.tar"
if [ "$mode" = replay ] && [ -s "$kept" ]; then
    tar -xf "$kept"
    echo "gpufleet lab DKMS cache: replayed $(tar -tf "$kept" | grep -c '\.ko$') modules for $kver (key $key)"
    exit 0
fi
echo "gpufleet lab DKMS cache: $mode, no entry for $kver (key $key): compiling"
"$real" "$@"
rc=$?
built=$(find . -name '*.ko' -print | LC_ALL=C sort)
if [ "$rc" -eq 0 ] && [ "$mode" = record ] && [ -n "$built" ]; then
    mkdir -p "$cache/$kver"
    echo "$built" | tar -cf "$kept.part" -T - && mv "$kept.part" "$kept"
    echo "gpufleet lab DKMS cache: recorded $(echo "$built" | wc -l) modules in $kept"
fi
exit "$rc"
