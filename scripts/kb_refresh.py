#!/usr/bin/env python3
"""Refresh the generated knowledge-base tables from NVIDIA's machine-readable sources; report what changed.

Usage: python3 scripts/kb_refresh.py [--supported-gpus SRC] [--cudnn-redist SRC] [--write] [--json]

--supported-gpus SRC  NVIDIA's supported-gpus.json: the file, a directory holding it (an extracted driver
                      package or run file: .../supported-gpus/supported-gpus.json), or a driver run file
                      (NVIDIA-Linux-x86_64-<ver>.run, extracted with its own --extract-only). Default: the
                      installed driver's /usr/share/nvidia/supported-gpus/supported-gpus.json, when present.
--cudnn-redist SRC    the cuDNN redist manifests redistrib_<ver>.json: a directory of them or a redist URL
                      (default when no source is given: https://developer.download.nvidia.com/compute/cudnn/
                      redist/ (its index lists the manifests); releases >= kb OLDEST_DETAILED are read).
--write               regenerate plugins/module_utils/kb/gpu_ids.py from the new supported-gpus.json (the
                      input is copied to tests/data/compat/supported-gpus-r580.json, the generator's input).
                      The cuDNN tables carry a source and a confidence per row: reported, not written.
--gpu-ids PATH, --gpu-json PATH   where the generated module and its input live (tests use copies).

Exit status: 0 the knowledge base agrees, 1 rows changed (listed), 2 a source was unreachable or invalid
(the other sources are still compared). Nothing is fetched unless a URL is given or defaulted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "plugins/module_utils/kb"
INSTALLED_SUPPORTED_GPUS = Path("/usr/share/nvidia/supported-gpus/supported-gpus.json")
CUDNN_REDIST_URL = "https://developer.download.nvidia.com/compute/cudnn/redist/"
MANIFEST_RE = re.compile(r"redistrib_(\d+\.\d+\.\d+)\.json")
TIMEOUT_S = 30


class SourceError(Exception):
    """A source that cannot be read (unreachable, missing, not NVIDIA's format)."""


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _vkey(text):
    return tuple(int(p) for p in re.findall(r"\d+", str(text)))


# ---------------------------------------------------------------------------------------------------
# supported-gpus.json -> kb/gpu_ids.py
# ---------------------------------------------------------------------------------------------------
def _extract_run(path, workdir):
    target = Path(workdir) / "driver"
    result = subprocess.run(
        ["sh", str(path), "--extract-only", "--target", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SourceError(f"{path}: the run file did not extract ({result.stderr.strip()[:200]})")
    return target


def find_supported_gpus(src, workdir):
    """The supported-gpus.json inside ``src`` (file, directory or driver run file)."""
    path = Path(src)
    if not path.exists():
        raise SourceError(f"{src}: not found")
    if path.is_file() and path.suffix == ".run":
        path = _extract_run(path, workdir)
    if path.is_dir():
        found = sorted(path.rglob("supported-gpus.json"))
        if not found:
            raise SourceError(f"{src}: no supported-gpus.json in it")
        path = found[0]
    try:
        chips = json.loads(path.read_text(encoding="utf-8"))["chips"]
    except (ValueError, KeyError, TypeError) as err:
        raise SourceError(f"{path}: not NVIDIA's supported-gpus.json format ({err})") from None
    return path, chips


def _records(lines):
    out = {}
    for line in lines:
        if line.strip():
            key, name, legacy, module = line.split("|")
            out[key] = (name, legacy, module)
    return out


def diff_gpu_ids(new_lines, current_data):
    """Rows of gpu_ids.DATA added, removed or changed: [(kind, key, old, new)]."""
    old, new = _records(current_data.splitlines()), _records(new_lines)
    rows = [("added", k, None, new[k]) for k in new if k not in old]
    rows += [("removed", k, old[k], None) for k in old if k not in new]
    rows += [("changed", k, old[k], new[k]) for k in new if k in old and old[k] != new[k]]
    return rows


def refresh_gpu_ids(src, gpu_ids_path, gpu_json_path, write, workdir):
    gen = _load("gen_gpu_ids", ROOT / "scripts/gen_gpu_ids.py")
    current = _load("kb_gpu_ids", gpu_ids_path)
    path, chips = find_supported_gpus(src, workdir)
    rows = diff_gpu_ids(gen.generate(chips), current.DATA)
    if len(chips) != current.ENTRIES_IN_SOURCE:
        rows.append(("changed", "ENTRIES_IN_SOURCE", current.ENTRIES_IN_SOURCE, len(chips)))
    if write and rows:
        if Path(gpu_json_path).resolve() != path.resolve():
            shutil.copyfile(path, gpu_json_path)
        Path(gpu_ids_path).write_text(gen.render(gpu_json_path), encoding="utf-8")
    return rows


# ---------------------------------------------------------------------------------------------------
# cuDNN redist manifests -> kb/cudnn.py VARIANTS, NEWEST_KNOWN
# ---------------------------------------------------------------------------------------------------
def _fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            return resp.read().decode("utf-8")
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise SourceError(f"{url}: not reachable ({err})") from None


def _manifest_texts(src, oldest):
    """{cuDNN release label: manifest text} from a directory or a redist URL."""
    if re.match(r"https?://", str(src)):
        base = str(src).rstrip("/") + "/"
        labels = sorted(set(MANIFEST_RE.findall(_fetch(base))), key=_vkey)
        return {v: _fetch(f"{base}redistrib_{v}.json") for v in labels if _vkey(v) >= _vkey(oldest)}
    path = Path(src)
    if not path.is_dir():
        raise SourceError(f"{src}: not a directory of redistrib_<ver>.json files")
    out = {}
    for file in sorted(path.glob("redistrib_*.json")):
        match = MANIFEST_RE.fullmatch(file.name)
        if match:
            out[match.group(1)] = file.read_text(encoding="utf-8")
    if not out:
        raise SourceError(f"{src}: no redistrib_<ver>.json in it")
    return out


def cudnn_variants(texts):
    """{cuDNN label: sorted CUDA majors built} from manifest texts (cuda_variant, else the platform keys)."""
    out = {}
    for label, text in texts.items():
        try:
            component = json.loads(text)["cudnn"]
        except (ValueError, KeyError, TypeError) as err:
            raise SourceError(f"redistrib_{label}.json: not NVIDIA's manifest format ({err})") from None
        majors = {int(v) for v in component.get("cuda_variant") or ()}
        for value in component.values():
            if isinstance(value, dict):
                majors |= {int(k[4:]) for k in value if re.fullmatch(r"cuda\d+", k)}
        out[label] = sorted(majors)
    return out


def _variant_row_changes(row, built, newest):
    """Changes of one VARIANTS row (major, first, last, conf) given {label: majors} of the manifests."""
    major, first, last, _conf = row
    with_major = sorted((v for v, majors in built.items() if major in majors), key=_vkey)
    rows = []
    if with_major and _vkey(with_major[0]) < _vkey(first):
        rows.append(("changed", f"VARIANTS cuda{major} first", first, with_major[0]))
    if last is None and with_major and major not in built[newest]:
        rows.append(("changed", f"VARIANTS cuda{major} last", None, with_major[-1]))
    elif last is not None and with_major and _vkey(with_major[-1]) > _vkey(last):
        rows.append(("changed", f"VARIANTS cuda{major} last", last, with_major[-1]))
    return rows


def diff_cudnn(built, kb_cudnn):
    """Rows of kb/cudnn.py that NVIDIA's manifests contradict: [(kind, key, old, new)]."""
    newest = max(built, key=_vkey)
    rows = []
    for row in kb_cudnn.VARIANTS:
        rows += _variant_row_changes(row, built, newest)
    known_majors = {row[0] for row in kb_cudnn.VARIANTS}
    for major in sorted({m for majors in built.values() for m in majors} - known_majors):
        first = min((v for v, majors in built.items() if major in majors), key=_vkey)
        rows.append(("added", f"VARIANTS cuda{major}", None, first))
    if _vkey(newest) > _vkey(kb_cudnn.NEWEST_KNOWN):
        rows.append(("changed", "NEWEST_KNOWN", kb_cudnn.NEWEST_KNOWN, newest))
    return rows


PLATFORMS = ("linux-x86_64", "linux-sbsa")


def cudnn_platforms(texts):
    """{cuDNN label: {platform: sorted CUDA majors built}} for the platforms gpufleet provisions (a platform
    entry without cudaN keys is one build of the manifest's cuda_variant)."""
    out = {}
    for label, text in texts.items():
        component = json.loads(text)["cudnn"]
        declared = sorted(int(v) for v in component.get("cuda_variant") or ())
        out[label] = {}
        for platform in PLATFORMS:
            entry = component.get(platform)
            if isinstance(entry, dict):
                keys = [int(k[4:]) for k in entry if re.fullmatch(r"cuda\d+", k)]
                out[label][platform] = sorted(keys) if keys else declared
    return out


def _gap_covered(gaps, platform, major, label):
    return any(
        (p, m) == (platform, major)
        and _vkey(first) <= _vkey(label)
        and (last is None or _vkey(label) <= _vkey(last))
        for p, m, first, last, _conf in gaps
    )


def diff_platforms(built, kb_cudnn):
    """Rows for PLATFORM_GAPS: a linux-sbsa build missing a CUDA variant that linux-x86_64 has (added), and a
    gap the knowledge base records where the manifest has the build (removed)."""
    rows = []
    gaps = kb_cudnn.PLATFORM_GAPS
    for label in sorted(built, key=_vkey):
        x86 = set(built[label].get("linux-x86_64") or ())
        for platform in PLATFORMS[1:]:
            if platform not in built[label]:
                continue  # a trimmed manifest (one platform): nothing to compare
            have = set(built[label][platform])
            for major in sorted(x86 - have):
                if not _gap_covered(gaps, platform, major, label):
                    rows.append(("added", f"PLATFORM_GAPS {platform} cuda{major}", None, label))
            for major in sorted(x86 & have):
                if _gap_covered(gaps, platform, major, label):
                    rows.append(("removed", f"PLATFORM_GAPS {platform} cuda{major}", label, None))
    return rows


def refresh_cudnn(src):
    kb_cudnn = _load("kb_cudnn", KB / "cudnn.py")
    texts = _manifest_texts(src, kb_cudnn.OLDEST_DETAILED)
    return diff_cudnn(cudnn_variants(texts), kb_cudnn) + diff_platforms(cudnn_platforms(texts), kb_cudnn)


# ---------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------
def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--supported-gpus", default=None)
    parser.add_argument("--cudnn-redist", default=None)
    parser.add_argument("--gpu-ids", default=str(KB / "gpu_ids.py"))
    parser.add_argument("--gpu-json", default=str(ROOT / "tests/data/compat/supported-gpus-r580.json"))
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-network", action="store_true", help="do not default to NVIDIA's redist URL")
    return parser


def _report(table, rows):
    if not rows:
        print(f"{table}: the knowledge base agrees")
    for kind, key, old, new in rows:
        print(f"{table}: {kind} {key}: {old!r} -> {new!r}")


def run(args):
    """{source: rows or error sentence}; reads every source it was given (or defaults to)."""
    result = {}
    installed = str(INSTALLED_SUPPORTED_GPUS) if INSTALLED_SUPPORTED_GPUS.exists() else None
    given = args.supported_gpus or args.cudnn_redist  # one source given: only that one is read
    gpus_src = args.supported_gpus or (None if given else installed)
    redist_src = args.cudnn_redist or (None if given or args.no_network else CUDNN_REDIST_URL)
    with tempfile.TemporaryDirectory() as workdir:

        def gpu_ids(src):
            return refresh_gpu_ids(src, args.gpu_ids, args.gpu_json, args.write, workdir)

        for name, src, func in (("gpu_ids", gpus_src, gpu_ids), ("cudnn", redist_src, refresh_cudnn)):
            if src is None:
                continue
            try:
                result[name] = func(src)
            except SourceError as err:
                result[name] = str(err)
    return result


def main(argv=None):
    args = _parser().parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    status = 0
    for name, rows in result.items():
        if isinstance(rows, str):
            print(f"{name}: {rows}", file=sys.stderr)
            status = 2
            continue
        if not args.json:
            _report(name, rows)
        status = max(status, 1 if rows else 0)
    if not result:
        print("no source given or found: pass --supported-gpus and/or --cudnn-redist", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
