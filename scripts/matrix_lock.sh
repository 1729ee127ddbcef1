#!/usr/bin/env bash
# Write requirements/core-<minor>.txt: the exact package set each env of the ansible-core matrix installs
# (tox.ini, docs/collection.md "Versions"). For each ansible-core release it asks pip's resolver (a dry run,
# nothing is installed) for the newest molecule, molecule-plugins, ansible-compat and pytest-testinfra that
# accept that release, with the tools the unit tests call at the dev toolchain's pins (pyproject.toml), and
# writes every package of the result with its version.
#
#   scripts/matrix_lock.sh                      # the releases in CORES below
#   scripts/matrix_lock.sh 2.16.19 2.18.19      # only these
#
# Bump a release here (the latest patch of each minor on PyPI), run the script, then `tox -e core<minor>`.
set -euo pipefail
cd "$(dirname "$0")/.."

CORES=(2.16.19 2.17.14 2.18.19 2.19.14)
[ "$#" -gt 0 ] && CORES=("$@")
PY=.venv/bin/python
# Packages that do not depend on ansible-core: the dev toolchain's pins, so every env runs the same ones.
mapfile -t FIXED < <("$PY" - <<'EOF'
import tomllib
dev = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["dev"]
keep = ("pytest==", "hypothesis==", "docker==", "antsibull-changelog==", "ansible-builder==")
print("\n".join(p for p in dev if p.startswith(keep)))
EOF
)
# Everything else at requirements/dev.lock's version where that version fits (pip constraints), so that the
# envs differ from .venv only where an ansible-core release needs it (ansible-core 2.16 wants resolvelib < 1.1).
report=$(mktemp)
constraints=$(mktemp)
trap 'rm -f "$report" "$constraints"' EXIT
grep -v -i -E '^(ansible-core|ansible-compat|molecule|resolvelib)==' requirements/dev.lock >"$constraints"
for core in "${CORES[@]}"; do
    minor=${core%.*}
    out=requirements/core-$minor.txt
    "$PY" -m pip install -q --disable-pip-version-check --dry-run --ignore-installed --report "$report" \
        -c "$constraints" "ansible-core==$core" molecule "molecule-plugins[docker]" pytest-testinfra "${FIXED[@]}"
    {
        echo "# ansible-core $minor env of the version matrix (tox.ini): written by scripts/matrix_lock.sh"
        "$PY" -c '
import json, sys
pins = [(i["metadata"]["name"], i["metadata"]["version"]) for i in json.load(open(sys.argv[1]))["install"]]
print("\n".join(f"{n}=={v}" for n, v in sorted(pins, key=lambda p: p[0].lower())))
' "$report"
    } >"$out"
    echo "matrix_lock: $out: ansible-core $core, $(grep -E '^(molecule|ansible-compat)==' "$out" | tr '\n' ' ')"
done
