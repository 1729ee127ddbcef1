"""Benchmark: nvidia_facts on a synthetic host with several cuDNN copies, against a naive baseline.

The host is built in a temporary directory: the real H200 host (deb copy + the torch venv's wheel),
two tarball trees, a conda env, three more virtualenvs with a cuDNN wheel, plus noise (a big
site-packages, many libraries and headers, deep trees). Measured in the same process:

- baseline: `os.walk` of the same search paths reading every cudnn header and dist-info METADATA
  (what a shell `find / -name 'cudnn*.h' | xargs grep` audit does), no package database, no loader cache;
- gather: `probe_facts.gather()` in-process (what the module does after Ansible starts it), without and
  with library loads (real libcudnn from the wheel cache when present, in forked children);
- module: the module as Ansible runs it on the target (`python nvidia_facts.py args.json`: interpreter
  start, imports, gather, JSON out).

Run: .venv/bin/python bench/bench_facts.py [--repeat N]. Prints seconds and ratios; target module < 0.5 s.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / ".collections"), str(ROOT)]

probe_facts = importlib.import_module("ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts")
probe_cudnn = importlib.import_module("ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.cudnn")
fakeroot = importlib.import_module("tests.data.facts.fakeroot")

lab_mirror = importlib.import_module("lab.mirror")
WHEELS = os.environ.get("GPUFLEET_WHEELS") or lab_mirror.cache_dir()


def build_host(tree):
    fakeroot.h200(tree)
    fakeroot.tarball(tree, "/opt/cudnn-linux-x86_64-9.14.0.64_cuda13-archive", "9.14.0")
    fakeroot.tarball(tree, "/usr/local/cuda-13.0/targets/x86_64-linux", "9.10.2")
    fakeroot.conda_env(tree, "/opt/conda/envs/train", "9.3.0.75", cuda_major=12)
    for user, version in (("alice", "9.14.0.64"), ("bob", "9.10.2.21"), ("carol", "9.19.0.56")):
        fakeroot.pip_wheel(tree, f"/home/{user}/.venv", version, cuda_major=12, python="python3.12")
    # noise: a big site-packages, many libraries and headers, deep trees
    sp = "/opt/torch/.venv/lib/python3.12/site-packages"
    for i in range(300):
        fakeroot.write(tree, f"{sp}/pkg{i}/__init__.py", "")
        fakeroot.write(tree, f"{sp}/pkg{i}/sub/mod.py", "")
    for i in range(800):
        fakeroot.write(tree, f"/usr/lib/x86_64-linux-gnu/libnoise{i}.so.1", "")
    for i in range(400):
        fakeroot.write(tree, f"/usr/include/noise{i}.h", "")
    for i in range(40):
        fakeroot.write(tree, f"/srv/data/d{i}/a/b/c/d/e/f/file.txt", "")
    return tree


def with_real_libraries(tree):
    """Put the real libcudnn.so.9 (+ graph) of the cached cu13 wheel in the pip copies; False when absent."""
    # this machine's wheel: the cache also holds the aarch64 ones of the lab's linux-sbsa archives
    wheel = lab_mirror.find_wheel("nvidia-cudnn-cu13", "9.14.0.64", WHEELS, lab_mirror.this_platform())
    if wheel is None:
        return False
    with zipfile.ZipFile(wheel) as archive:
        blobs = {n: archive.read("nvidia/cudnn/lib/" + n) for n in ("libcudnn.so.9", "libcudnn_graph.so.9")}
    for lib in Path(tree).glob("home/*/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib"):
        for name, data in blobs.items():
            (lib / name).write_bytes(data)
    return True


def baseline(tree):
    """Naive audit: walk the search paths, read every cudnn header and every dist-info METADATA."""
    found = 0
    for top in probe_cudnn.DEFAULT_SEARCH_PATHS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(tree, top.lstrip("/"))):
            for name in filenames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    continue  # absolute links point outside the synthetic tree
                if name in ("cudnn_version.h", "cudnn.h") or (name == "METADATA" and "cudnn" in dirpath):
                    with open(path, "rb") as handle:
                        data = handle.read()
                    found += b"CUDNN_MAJOR" in data or b"Version:" in data
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
    return found


def module_run(tree, workdir):
    args = Path(workdir) / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"root": str(tree)}}))
    env = dict(os.environ, PYTHONPATH=str(ROOT / ".collections"), LC_ALL="C")
    out = subprocess.run(
        [sys.executable, str(ROOT / "plugins/modules/nvidia_facts.py"), str(args)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    return json.loads(out)["ansible_facts"]["nvidia"]


def timed(func, repeat):
    samples = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = func()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        tree = build_host(Path(workdir) / "host")
        real = with_real_libraries(tree)
        t_base, _ = timed(lambda: baseline(str(tree)), args.repeat)
        t_gather, facts = timed(lambda: probe_facts.gather(str(tree), live=False), args.repeat)
        t_live, live_facts = timed(lambda: probe_facts.gather(str(tree), live=True), args.repeat)
        t_module, module_facts = timed(lambda: module_run(tree, workdir), args.repeat)
        copies = [(c["source"], c["version"]) for c in facts["cudnn"]]
        loaded = sum(1 for c in live_facts["cudnn"] if c["ctypes"]["state"] == "ok")
        print(f"synthetic host: {len(copies)} cuDNN copies {copies}")
        origin = "from the wheel cache" if real else "no wheel cache: fake libraries only"
        print(f"real libcudnn loaded by ctypes in the live run: {loaded} ({origin})")
        print(f"median of {args.repeat} runs")
        print(f"  baseline os.walk + header reads : {t_base * 1000:8.1f} ms  (ratio 1.00)")
        print(
            f"  gather (no library loads)       : {t_gather * 1000:8.1f} ms  (ratio {t_gather / t_base:.2f})"
        )
        print(f"  gather (+ ctypes in children)   : {t_live * 1000:8.1f} ms  (ratio {t_live / t_base:.2f})")
        print(
            f"  module as Ansible runs it       : {t_module * 1000:8.1f} ms  (ratio {t_module / t_base:.2f})"
        )
        verdict = "OK" if t_module < 0.5 else "OVER"
        print(f"target: module under 500 ms -> {verdict}")
        assert len(module_facts["cudnn"]) == len(copies)


if __name__ == "__main__":
    main()
