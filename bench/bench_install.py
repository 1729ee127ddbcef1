"""Benchmark: provisioning on lab hosts, each figure a ratio against a baseline measured in the same run.

On fresh lab hosts (`python -m lab hosts up --prefix gpufleet-benchi`, the lab must be up), with the roles'
redist source on the lab mirror (CUDA 13.0.2, cuDNN 9.14.0.64 for CUDA 13, 450 MiB):
- install: ``playbooks/cudnn.yml`` on a fresh host (download, sha256, unpack, links, ld cache, verify) against
  fetching the same archive from the mirror and ``tar -xf`` on the same host (and ``tar -xf`` alone);
- no-op: ``playbooks/cuda.yml`` + ``playbooks/cudnn.yml`` again on the converged host (changed=0 expected)
  against ``ansible -m ping`` of that host and against the first converge;
- controller cache: ``playbooks/cudnn.yml`` with ``cudnn_controller_cache: true`` on two fresh hosts; the
  mirror server's log counts the downloads of each archive (the goal: one download per artifact, whatever
  the number of hosts).

Run: .venv/bin/python bench/bench_install.py [--keep]   (minutes; removes its hosts unless --keep)
Not part of `make test`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))
lab_hosts = importlib.import_module("lab.hosts")
lab_serve = importlib.import_module("lab.serve")
lab_engine = importlib.import_module("lab.engine")

PREFIX = "gpufleet-benchi"
CUDNN = {"cudnn_version": "9.14.0.64", "cudnn_cuda_major": 13}
ARCHIVE = "cudnn/redist/cudnn/linux-x86_64/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz"
GROUP_VARS = {
    "cuda_toolkit_source": "redist",
    "cudnn_source": "redist",
    "cuda_toolkit_redist_base_url": "http://gpufleet-mirror",
    "cudnn_redist_base_url": "http://gpufleet-mirror",
    "cuda_toolkit_redist_releases": {"13.0": "13.0.2"},
    "cuda_toolkit_versions": ["13.0"],
    "cuda_toolkit_default": "13.0",
    "cuda_toolkit_install_host_compiler": False,
    "cuda_toolkit_verify": False,
    **CUDNN,
}


def sh(cmd, env=None, check=True):
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    if check and proc.returncode != 0:
        sys.exit(
            f"bench: {' '.join(map(str, cmd))} failed (rc {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        )
    return elapsed, proc.stdout


def inventory(work, prefix=PREFIX):
    """This prefix's lab hosts and the roles' variables (group_vars beside the inventory file)."""
    doc = yaml.safe_load(lab_hosts.INVENTORY.read_text(encoding="utf-8"))
    lab = doc["all"]["children"]["lab_hosts"]
    group = lab_hosts.group_name(prefix)
    lab["children"] = {group: lab["children"][group]}
    (work / "group_vars").mkdir(parents=True, exist_ok=True)
    (work / "group_vars" / "all.yml").write_text(yaml.safe_dump(GROUP_VARS), encoding="utf-8")
    path = work / "inventory.yml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path, sorted(lab["children"][group]["hosts"])


def playbook(inv, name, limit, env, *extra):
    """``playbooks/NAME`` of this checkout (an absolute NAME: another tree's playbook); (seconds, changed)."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(inv), str(ROOT / "playbooks" / name), "-l", limit, *extra]
    elapsed, out = sh(cmd, env)
    changed = sum(int(m) for m in re.findall(r"changed=(\d+)", out))
    return elapsed, changed


def docker_exec(host, script):
    container = lab_hosts.container_name(host)
    return sh(["docker", "exec", container, "sh", "-c", script])[0]


def tar_baseline(host):
    """(fetch + tar -xf, tar -xf alone) of the cuDNN archive on ``host``, in a scratch directory."""
    fetch = (
        'python3 -c "import shutil,urllib.request;'
        f"shutil.copyfileobj(urllib.request.urlopen('http://gpufleet-mirror/{ARCHIVE}'),open('/tmp/a.tar.xz','wb'))\""
    )
    t_fetch = docker_exec(host, f"rm -rf /tmp/x /tmp/a.tar.xz && mkdir /tmp/x && {fetch}")
    t_tar = docker_exec(host, "tar -xf /tmp/a.tar.xz -C /tmp/x && sync")
    docker_exec(host, "rm -rf /tmp/x /tmp/a.tar.xz")
    return t_fetch + t_tar, t_tar


def mirror_gets(since):
    """{path: GET count} in the mirror server's log since ``since`` (Unix time)."""
    out = subprocess.run(
        ["docker", "logs", "--since", str(int(since)), "gpufleet-mirror"],
        capture_output=True,
        text=True,
        check=True,
    )
    counts = {}
    for m in re.finditer(r'"GET (/\S+) HTTP/[\d.]+" 200', out.stdout + out.stderr):
        if m.group(1).endswith(".tar.xz"):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def controller_cache(inv, hosts, env, work):
    """Downloads of each archive when ``hosts`` get cuDNN through the controller cache."""
    client = lab_engine.client()
    ip = lab_serve.container_ip(lab_serve.find(client, "gpufleet-mirror"))
    since = time.time() - 1
    elapsed, _ = playbook(
        inv,
        "cudnn.yml",
        ",".join(hosts),
        env,
        "-e",
        json.dumps(
            {
                "cudnn_controller_cache": True,
                "cudnn_controller_cache_dir": str(work / "redist-cache"),
                "cudnn_redist_base_url": f"http://{ip}",
            }
        ),
    )
    return elapsed, mirror_gets(since)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the lab hosts")
    args = ap.parse_args()
    sh([sys.executable, "-m", "lab", "hosts", "up", "--count", "3", "--prefix", PREFIX])
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-install-") as tmp:
        work = Path(tmp)
        inv, hosts = inventory(work)
        env = dict(
            os.environ,
            ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
            ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
            ANSIBLE_CACHE_PLUGIN_CONNECTION=str(work / "facts"),
            ANSIBLE_NOCOLOR="1",
        )
        first = hosts[0]
        t_ping, _ = sh([str(BIN / "ansible"), "-i", str(inv), first, "-m", "ansible.builtin.ping"], env)
        t_cuda, _ = playbook(inv, "cuda.yml", first, env)
        t_cudnn, _ = playbook(inv, "cudnn.yml", first, env)
        t_fetch_tar, t_tar = tar_baseline(first)
        t_ping, _ = sh([str(BIN / "ansible"), "-i", str(inv), first, "-m", "ansible.builtin.ping"], env)
        t_noop_cuda, changed_cuda = playbook(inv, "cuda.yml", first, env)
        t_noop_cudnn, changed_cudnn = playbook(inv, "cudnn.yml", first, env)
        t_cache, gets = controller_cache(inv, hosts[1:], env, work)
        noop = t_noop_cuda + t_noop_cudnn
        print("install: lab hosts, CUDA 13.0.2 + cuDNN 9.14.0.64 (CUDA 13) from the lab mirror, seconds")
        print(
            f"  cuDNN redist install (cudnn.yml, fresh host) {t_cudnn:.2f} s vs fetch + tar -xf "
            f"{t_fetch_tar:.2f} s "
            f"= {t_cudnn / t_fetch_tar:.2f}x (tar -xf alone {t_tar:.2f} s: {t_cudnn / t_tar:.2f}x)"
        )
        print(
            f"  no-op converge cuda.yml + cudnn.yml {noop:.2f} s (changed={changed_cuda + changed_cudnn}) vs "
            f"ping {t_ping:.2f} s = {noop / t_ping:.2f}x; vs first converge {t_cuda + t_cudnn:.2f} s = "
            f"{noop / (t_cuda + t_cudnn):.2f}x"
        )
        per = max(gets.values()) if gets else 0
        print(
            f"  controller cache, {len(hosts) - 1} hosts: {sum(gets.values())} download(s) of "
            f"{len(gets)} artifact(s) "
            f"({per} per artifact, goal 1: {'met' if per == 1 else 'NOT met'}) in {t_cache:.2f} s"
        )
    if not args.keep:
        sh([sys.executable, "-m", "lab", "hosts", "down", "--prefix", PREFIX])


if __name__ == "__main__":
    main()
