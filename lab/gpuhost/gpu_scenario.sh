#!/usr/bin/env bash
# The GPU tests and the molecule `gpu` scenario on a GPU machine that has no network and no container
# runtime (the H200 of tests/gpu/README.md: Ubuntu 24.04, driver under /usr/local/nvidia, CUDA 13.0 and cuDNN 9.14
# from NVIDIA's packages), in three device calls. Every step is idempotent; run from the project root.
#
# Here (a Debian 12 machine with network and docker, once):
#   lab/gpuhost/gpu_scenario.sh here
#     -> .gpu/ (git-ignored through .git/info/exclude): wheels/ (molecule, testinfra, ansible-core for
#        Python 3.12), docker-bundle.tar.xz (Debian 12's dockerd/containerd/runc/docker-init + libdevmapper),
#        debs-gxx/ (Debian 12's g++ for nvcc inside the container), image-debian12.tar.xz (docker save)
# There, one call after the other (the machine stays warm 30 s after a call; ignored paths and daemons
# started with setsid survive between calls):
#   call 1  carry [.gpu/wheels, .gpu/docker-bundle.tar.xz, .collections]
#           lab/gpuhost/gpu_scenario.sh bare docker mirror
#   call 2  carry [.gpu/debs-gxx/part1]            lab/gpuhost/gpu_scenario.sh status
#   call 3  carry [.gpu/image-debian12.tar.xz, .gpu/debs-gxx/part2]
#           lab/gpuhost/gpu_scenario.sh image molecule
# Logs go to $OUT (the device tool's folder) or /tmp/gpufleet-out.
#
# Steps: here | bare | docker | mirror | status | image | molecule (= molecule test -s gpu) |
#        molecule:<subcommand> (e.g. molecule:converge molecule:idempotence molecule:verify molecule:destroy,
#        to spread the scenario over calls when one would run past the 10-minute limit)
# Environment: GPUFLEET_EXPECT_CUDNN (default 9.14.0.64), GPUFLEET_EXPECT_GPU (default H200),
# GPUFLEET_CUDA_VERSION (13.0), GPUFLEET_CUDNN_VERSION (9.14.0.64).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
ROOT=$PWD
OUTDIR=${OUT:-/tmp/gpufleet-out}
mkdir -p "$OUTDIR"
SITE=/tmp/gpufleet-site
DOCKER_PREFIX=/opt/gpufleet-docker
IMAGE=gpufleet/debian12
export GPUFLEET_CUDA_VERSION=${GPUFLEET_CUDA_VERSION:-13.0}
export GPUFLEET_CUDNN_VERSION=${GPUFLEET_CUDNN_VERSION:-9.14.0.64}
export GPUFLEET_EXPECT_CUDNN=${GPUFLEET_EXPECT_CUDNN:-$GPUFLEET_CUDNN_VERSION}
export GPUFLEET_EXPECT_GPU=${GPUFLEET_EXPECT_GPU:-H200}
export PYTHONUNBUFFERED=1

# Debian 12 (bookworm) packages of g++ and everything it needs on top of the gpufleet/debian12 image
# (apt-get install --print-uris g++ inside that image).
GXX_DEBS="binutils-common libbinutils libctf-nobfd0 libctf0 libgprofng0 libjansson4 binutils-x86-64-linux-gnu
binutils libisl23 libmpfr6 libmpc3 cpp-12 cpp libcc1-0 libgomp1 libitm1 libatomic1 libasan8 liblsan0 libtsan2
libubsan1 libquadmath0 libgcc-12-dev gcc-12 gcc libc-dev-bin linux-libc-dev libcrypt-dev libtirpc-dev libnsl-dev
rpcsvc-proto libc6-dev libstdc++-12-dev g++-12 g++"
DOCKER_DEBS="docker.io containerd runc tini libdevmapper1.02.1"
# What molecule + testinfra + ansible-core need beyond the packages of the H200's Python 3.12 image.
WHEELS="ansible-compat==26.10.0 ansible-core==2.19.14 bracex==3.2.3 cffi==2.1.1 cryptography==50.0.2
distro==1.9.0 docker==7.2.0 enrich==1.2.7 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
molecule==26.10.0 molecule-plugins==26.10.12 pycparser==3.12 pytest-testinfra==10.2.2 referencing==0.37.0
resolvelib==1.2.1 rpds-py==2026.9.1 selinux==0.3.0 subprocess-tee==0.4.2 wcmatch==12.0.1"

say() { printf '== %s\n' "$*"; }
die() { printf 'gpu_scenario: error: %s\n' "$*" >&2; exit 2; }
mib() { du -sm "$@" 2>/dev/null | awk '{s += $1} END {print s + 0}'; }

step_here() {
  command -v apt-get >/dev/null || die "here: needs apt-get (a Debian 12 machine)"
  command -v docker >/dev/null || die "here: needs docker with the image $IMAGE (python -m lab images)"
  mkdir -p .gpu/debs-gxx/part1 .gpu/debs-gxx/part2 .gpu/wheels
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
  if [[ $(find .gpu/debs-gxx -name '*.deb' | wc -l) -lt 35 ]]; then
    say "downloading g++ packages"
    # shellcheck disable=SC2086
    (cd .gpu/debs-gxx/part1 && apt-get download $GXX_DEBS) || die "apt-get download of the g++ packages failed"
  fi
  # two parts, so that no call carries more than about 55 MiB: cpp-12 travels with the image (call 3)
  find .gpu/debs-gxx -maxdepth 1 -name '*.deb' -exec mv -t .gpu/debs-gxx/part1 {} +
  find .gpu/debs-gxx/part1 -name 'cpp-12_*.deb' -exec mv -t .gpu/debs-gxx/part2 {} +
  if [[ ! -s .gpu/docker-bundle.tar.xz ]]; then
    say "building the docker bundle"
    local tmp
    tmp=$(mktemp -d)
    # shellcheck disable=SC2086
    (cd "$tmp" && apt-get download $DOCKER_DEBS) || die "apt-get download of the docker packages failed"
    mkdir -p "$tmp/x" "$tmp/b/gpufleet-docker/bin" "$tmp/b/gpufleet-docker/lib"
    for f in "$tmp"/*.deb; do dpkg -x "$f" "$tmp/x"; done
    cp -a "$tmp/x/usr/sbin/dockerd" "$tmp/x/usr/bin/docker" "$tmp/x/usr/bin/containerd" \
      "$tmp/x/usr/bin/containerd-shim-runc-v2" "$tmp/x/usr/sbin/runc" "$tmp/x/usr/sbin/docker-proxy" \
      "$tmp/b/gpufleet-docker/bin/"
    cp -aL "$tmp/x/usr/bin/docker-init" "$tmp/b/gpufleet-docker/bin/docker-init"
    cp -a "$tmp/x/lib/x86_64-linux-gnu/libdevmapper.so.1.02.1" "$tmp/b/gpufleet-docker/lib/"
    tar -C "$tmp/b" -cf - gpufleet-docker | xz -T0 -9 >.gpu/docker-bundle.tar.xz.part &&
      mv .gpu/docker-bundle.tar.xz.part .gpu/docker-bundle.tar.xz
    rm -rf "$tmp"
  fi
  if [[ $(find .gpu/wheels -name '*.whl' | wc -l) -lt 20 ]]; then
    say "downloading wheels for Python 3.12"
    # shellcheck disable=SC2086
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d .gpu/wheels $WHEELS || die "pip download failed"
  fi
  if [[ ! -s .gpu/image-debian12.tar.xz ]]; then
    say "saving $IMAGE"
    docker image inspect "$IMAGE" >/dev/null 2>&1 || die "no image $IMAGE here: python -m lab images"
    docker save "$IMAGE" | xz -T0 -6 >.gpu/image-debian12.tar.xz.part &&
      mv .gpu/image-debian12.tar.xz.part .gpu/image-debian12.tar.xz
  fi
  local tree
  tree=$(git ls-files -z | xargs -0 du -cm 2>/dev/null | tail -1 | cut -f1)
  say "carry sizes (MiB; a call carries at most 64 with the working tree of about ${tree}):"
  echo "  call 1: $(mib .gpu/wheels .gpu/docker-bundle.tar.xz .collections)"
  echo "  call 2: $(mib .gpu/debs-gxx/part1)"
  echo "  call 3: $(mib .gpu/image-debian12.tar.xz .gpu/debs-gxx/part2)"
}

install_wheels() {
  if [[ -x $SITE/bin/molecule || -d $SITE/testinfra && ${1:-} == bare ]]; then return 0; fi
  [[ -d .gpu/wheels ]] || die "no .gpu/wheels: carry it (call 1)"
  say "installing wheels into $SITE"
  if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    .gpu/wheels/*.whl; then
    # at least what the bare-host tests need (testinfra; ansible-core for nvidia_facts)
    say "full install failed; installing testinfra and ansible-core only (no molecule)"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      .gpu/wheels/pytest_testinfra-*.whl .gpu/wheels/ansible_core-*.whl .gpu/wheels/resolvelib-*.whl ||
      die "pip install of .gpu/wheels failed"
  fi
}

py_env() {
  export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
  export PATH=$DOCKER_PREFIX/bin:$SITE/bin:$PATH
  export ANSIBLE_CONFIG=$ROOT/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$ROOT/.collections
}

step_bare() {
  install_wheels bare
  py_env
  say "bare host: pytest --hosts=local:// tests/gpu (expect cuDNN $GPUFLEET_EXPECT_CUDNN, GPU $GPUFLEET_EXPECT_GPU)"
  nvidia-smi -L 2>&1 | tee "$OUTDIR/bare-nvidia-smi.txt"
  python3 -m pytest -p no:cacheprovider -v -rA --hosts=local:// tests/gpu 2>&1 | tee "$OUTDIR/bare-pytest.log"
  return "${PIPESTATUS[0]}"
}

docker_answers() { PATH=$DOCKER_PREFIX/bin:$PATH docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; }

start_dockerd() {
  local log=$OUTDIR/dockerd-$1.log
  shift
  say "starting dockerd $* (log $log)"
  setsid env PATH="$DOCKER_PREFIX/bin:$PATH" LD_LIBRARY_PATH="$DOCKER_PREFIX/lib" \
    dockerd --iptables=false --ip6tables=false --bridge=none --data-root=/var/lib/gpufleet-docker \
    --exec-root=/run/gpufleet-docker --pidfile=/run/gpufleet-dockerd.pid "$@" >"$log" 2>&1 </dev/null &
  DOCKERD_PID=$!
  for _ in $(seq 60); do
    docker_answers && return 0
    kill -0 "$DOCKERD_PID" 2>/dev/null || break
    sleep 1
  done
  tail -20 "$log"
  return 1
}

step_docker() {
  if docker_answers; then
    say "docker answers"
    return 0
  fi
  if [[ ! -x $DOCKER_PREFIX/bin/dockerd ]]; then
    [[ -s .gpu/docker-bundle.tar.xz ]] || die "no .gpu/docker-bundle.tar.xz: carry it (call 1)"
    mkdir -p "$(dirname "$DOCKER_PREFIX")"
    xz -dc .gpu/docker-bundle.tar.xz | tar -C "$(dirname "$DOCKER_PREFIX")" -xf - || die "unpacking the docker bundle failed"
  fi
  # overlay2 first; where the root file system refuses it (overlay on overlay), vfs: never devicemapper
  if ! start_dockerd overlay2 --storage-driver=overlay2; then
    kill "$DOCKERD_PID" 2>/dev/null
    sleep 3
    start_dockerd vfs --storage-driver=vfs || die "dockerd does not start (logs in $OUTDIR)"
  fi
  PATH=$DOCKER_PREFIX/bin:$PATH docker info 2>&1 | tee "$OUTDIR/docker-info.txt" | head -30
}

step_mirror() {
  local cudnn_short=${GPUFLEET_CUDNN_VERSION%.*}
  if ls .lab/mirror/cuda/redist/redistrib_"$GPUFLEET_CUDA_VERSION"*.json >/dev/null 2>&1 &&
    [[ -f .lab/mirror/cudnn/redist/redistrib_$cudnn_short.json ]]; then
    say "mirror in .lab/mirror already"
    return 0
  fi
  say "building .lab/mirror from this host's CUDA $GPUFLEET_CUDA_VERSION and cuDNN packages"
  python3 -m lab.gpuhost.mirror_from_host --out .lab/mirror --cuda "$GPUFLEET_CUDA_VERSION" 2>&1 | tee "$OUTDIR/mirror.log"
  return "${PIPESTATUS[0]}"
}

step_status() {
  py_env
  say "status"
  docker_answers && PATH=$DOCKER_PREFIX/bin:$PATH docker images
  du -sh .gpu/* .lab/mirror 2>/dev/null
  ls /dev/nvidia* 2>&1
  python3 scripts/gpu_env.py check
}

step_image() {
  if PATH=$DOCKER_PREFIX/bin:$PATH docker image inspect "$IMAGE" >/dev/null 2>&1; then
    say "image $IMAGE present"
    return 0
  fi
  [[ -s .gpu/image-debian12.tar.xz ]] || die "no .gpu/image-debian12.tar.xz: carry it (call 3)"
  xz -dc .gpu/image-debian12.tar.xz | PATH=$DOCKER_PREFIX/bin:$PATH docker load || die "docker load failed"
}

step_molecule() {
  local cmd=${1:-${MOLECULE_CMD:-test}}
  install_wheels
  py_env
  docker_answers || die "docker does not answer: run the docker step first"
  export GPUFLEET_MIRROR_DIR=$ROOT/.lab/mirror GPUFLEET_DEBS_DIR=$ROOT/.gpu/debs-gxx GPUFLEET_GPU_IMAGE=$IMAGE
  # the docker bundle brings no AppArmor profile loader: never ask for docker-default
  export GPUFLEET_GPU_SECURITY_OPTS=${GPUFLEET_GPU_SECURITY_OPTS:-apparmor=unconfined}
  [[ -d $GPUFLEET_DEBS_DIR/part1 ]] || die "no .gpu/debs-gxx/part1: carry it (call 2)"
  [[ -d $GPUFLEET_DEBS_DIR/part2 ]] || die "no .gpu/debs-gxx/part2: carry it (call 3)"
  say "molecule $cmd -s gpu"
  python3 scripts/gpu_env.py plan --cli | tee "$OUTDIR/gpu-plan.txt"
  molecule "$cmd" -s gpu 2>&1 | tee "$OUTDIR/molecule-$cmd.log"
  return "${PIPESTATUS[0]}"
}

[[ $# -gt 0 ]] || die "usage: $0 here | bare | docker | mirror | status | image | molecule ..."
rc=0
for step in "$@"; do
  case $step in
    here | bare | docker | mirror | status | image | molecule) "step_$step" || rc=$? ;;
    molecule:*) step_molecule "${step#molecule:}" || rc=$? ;;
    *) die "unknown step $step (here | bare | docker | mirror | status | image | molecule)" ;;
  esac
done
exit "$rc"
