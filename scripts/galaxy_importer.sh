#!/usr/bin/env bash
# Build the collection tarball with `ansible-galaxy collection build` and run galaxy-importer on it, as
# Galaxy and Automation Hub do on upload (docs, ansible-lint of the content, the tarball's layout).
# galaxy-importer comes from PyPI into a virtualenv of its own (it pins its own ansible-core and ansible-lint).
#
# Prints the importer's warnings and errors; exit status 1 when the import fails or reports an error.
# Environment: GPUFLEET_CACHE (default ~/.cache/gpufleet: the importer's virtualenv),
#              GALAXY_IMPORTER_VERSION (default 0.4.44), GPUFLEET_IMPORTER_OUT (keep the tarball and the
#              log there instead of a temporary directory).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${GALAXY_IMPORTER_VERSION:-0.4.44}
venv=${GPUFLEET_CACHE:-$HOME/.cache/gpufleet}/importer-venv-$version
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import galaxy_importer' 2>/dev/null; then
  echo "importer: installing galaxy-importer $version into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "galaxy-importer==$version"
fi

out=${GPUFLEET_IMPORTER_OUT:-}
if [[ -z $out ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
rm -f "$out"/gpufleet-nvidia-*.tar.gz
galaxy=$root/.venv/bin/ansible-galaxy
[[ -x $galaxy ]] || galaxy=ansible-galaxy
(cd "$root" && "$galaxy" collection build --force --output-path "$out")
tarball=$(ls "$out"/gpufleet-nvidia-*.tar.gz)

# galaxy-importer requires galaxy.yml's repository (Galaxy shows it); ansible-galaxy does not, and gpufleet has
# no public URL yet, so galaxy.yml names none. The importer checks a copy of the tarball whose MANIFEST.json
# names a stand-in in the reserved .invalid domain; the tarball users install is left as built. Once galaxy.yml
# names the real repository, the copy is the tarball itself.
copy_rc=0
"$venv/bin/python" - "$tarball" "$out/importer" <<'PY' || copy_rc=$?
import io, json, sys, tarfile
from pathlib import Path
src, dest = Path(sys.argv[1]), Path(sys.argv[2])
with tarfile.open(src) as tar:
    manifest = json.load(tar.extractfile("MANIFEST.json"))
    if manifest["collection_info"].get("repository"):
        sys.exit(3)
    manifest["collection_info"]["repository"] = "https://gpufleet.invalid/no-public-repository-yet"
    data = json.dumps(manifest, indent=1).encode()
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest / src.name, "w:gz") as copy:
        for member in tar.getmembers():
            if member.name == "MANIFEST.json":
                member.size = len(data)
                copy.addfile(member, io.BytesIO(data))
            else:
                copy.addfile(member, tar.extractfile(member) if member.isfile() else None)
PY
if [[ $copy_rc -eq 0 ]]; then
  echo "importer: galaxy.yml names no repository (Galaxy requires one before an upload): checking a copy with a stand-in"
  tarball=$out/importer/$(basename "$tarball")
elif [[ $copy_rc -ne 3 ]]; then
  echo "importer: could not make the importer's copy of $(basename "$tarball")" >&2
  exit 1
fi

rc=0
(cd "$out" && PATH=$venv/bin:$PATH "$venv/bin/python" -m galaxy_importer.main "$tarball") >"$out/importer.log" 2>&1 ||
  rc=$?
problems=$(grep -E '^(WARNING|ERROR)|Traceback' "$out/importer.log" || true)
if [[ -n $problems ]]; then
  echo "$problems"
fi
if [[ $rc -ne 0 ]] || grep -qE '^ERROR|Traceback' "$out/importer.log"; then
  tail -n 20 "$out/importer.log"
  echo "importer: FAILED (exit $rc) for $(basename "$tarball")" >&2
  exit 1
fi
echo "importer: $(basename "$tarball") accepted ($(grep -c '^WARNING' "$out/importer.log" || true) warnings)"
