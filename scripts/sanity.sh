#!/usr/bin/env bash
# `ansible-test sanity` on the collection as it ships, without ci-files.testing.ansible.com.
#
# ansible-test must run inside .../ansible_collections/gpufleet/nvidia, so the collection's files (what
# `ansible-galaxy collection build` puts in the tarball, plus tests/sanity/ with the ignore files and
# changelogs/) are copied to a fresh directory of that shape and ansible-test runs there.
# Each sanity test gets its own virtualenv (~/.ansible/test/venv), which ansible-test bootstraps with a
# get-pip script it would download. This script writes a small one instead, at the cache path ansible-test
# reads first (~/.ansible/test/cache/get_pip_<version>.py): it runs pip from the pip wheel of PyPI. The
# sanity requirements themselves come from PyPI as usual.
#
# Usage: scripts/sanity.sh [ansible-test sanity options], e.g. --test validate-modules
#        scripts/sanity.sh units [ansible-test units options]: `ansible-test units --venv` on tests/unit/plugins,
#        copied into the tree with what they read (tests/data, tests/unit/conftest.py, scripts/gen_gpu_ids.py).
#        Its virtualenv gets ansible-test's unit requirements (PyPI) plus hypothesis and ansible-core at the
#        pins of requirements/dev.lock.
# Environment: GPUFLEET_SANITY_DIR (work directory; default: a new temporary one, removed afterwards),
#              GPUFLEET_CACHE (default ~/.cache/gpufleet: the pip wheel).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/.venv/bin
[[ -x $bin/ansible-test ]] || { echo "sanity: $bin/ansible-test missing: run make venv" >&2; exit 2; }
py=$bin/python
mode=sanity
if [[ ${1:-} == units ]]; then
  mode=units
  shift
fi

pip_version=$("$py" - <<'EOF'
from ansible_test._internal.python_requirements import get_venv_packages
from ansible_test._internal.host_configs import NativePythonConfig
import sys
print(get_venv_packages(NativePythonConfig(version="%d.%d" % sys.version_info[:2]))["pip"])
EOF
)
cache=${GPUFLEET_CACHE:-$HOME/.cache/gpufleet}/pip
shim=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
if [[ ! -f $shim ]]; then
  mkdir -p "$cache" "$(dirname "$shim")"
  wheel=$(ls "$cache"/pip-"$pip_version"-py3-none-any.whl 2>/dev/null || true)
  if [[ -z $wheel ]]; then
    "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$cache" "pip==$pip_version"
    wheel=$cache/pip-$pip_version-py3-none-any.whl
  fi
  cat >"$shim.tmp" <<EOF
"""get-pip stand-in written by gpufleet's scripts/sanity.sh: pip install from the pip $pip_version wheel."""
import sys

sys.path.insert(0, "$wheel")
from pip._internal.cli.main import main

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--no-cache-dir", *args]))
EOF
  mv "$shim.tmp" "$shim"
  echo "sanity: pip bootstrap for ansible-test at $shim"
fi

work=${GPUFLEET_SANITY_DIR:-}
if [[ -z $work ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
dest=$work/ansible_collections/gpufleet/nvidia
rm -rf "$dest" "$work/dist"
mkdir -p "$dest" "$work/dist"
(cd "$root" && "$bin/ansible-galaxy" collection build --force --output-path "$work/dist" >/dev/null)
tar -xzf "$work"/dist/gpufleet-nvidia-*.tar.gz -C "$dest"
rm -f "$dest/FILES.json"
extras=(tests/sanity changelogs)
if [[ $mode == units ]]; then
  extras+=(tests/unit/conftest.py tests/unit/plugins tests/data scripts/gen_gpu_ids.py)
fi
for extra in "${extras[@]}"; do
  if [[ -e $root/$extra ]]; then
    rm -rf "${dest:?}/$extra"
    mkdir -p "$dest/$(dirname "$extra")"
    cp -a "$root/$extra" "$dest/$extra"
  fi
done

cd "$dest"
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "$mode: $("$bin/ansible-test" --version) in $dest (python $pyver)"
if [[ $mode == sanity ]]; then
  PATH=$bin:$PATH "$bin/ansible-test" sanity --color no --python "$pyver" "$@"
else
  # ansible-test installs tests/unit/requirements.txt into the units virtualenv: hypothesis, and ansible-core
  # for the tests that run a module file in a subprocess with PYTHONPATH=<root>/.collections (the checkout's
  # layout, recreated here by a link); ansible-test's own PYTHONPATH does not reach those subprocesses.
  grep -E '^(hypothesis|ansible-core)==' "$root/requirements/dev.lock" >"$dest/tests/unit/requirements.txt"
  find "$dest/tests" -name __pycache__ -prune -exec rm -rf {} +
  mkdir -p "$dest/.collections"
  ln -sfn "$work/ansible_collections" "$dest/.collections/ansible_collections"
  PATH=$bin:$PATH "$bin/ansible-test" units --color no --venv --python "$pyver" "$@"
fi
