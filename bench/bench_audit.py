"""Benchmark: playbooks/audit.yml over N lab hosts (SSH) against a naive audit and a bare ping.

Measured in the same process, on the same hosts, alternating, each `--rounds` times (median reported):
- ping:  `ansible all -m ansible.builtin.ping` (the floor: one SSH round trip per host);
- audit: `ansible-playbook playbooks/audit.yml` (one nvidia_facts round trip per host + the reports);
- naive: `ansible-playbook bench/naive_audit.yml` (setup + nvidia-smi + dpkg -l + find cudnn_version.h: what
  people do today, and it still misses pip/conda copies and the loader's choice).

Prints seconds, the ratio naive/audit (goal >= 3) and the per-host cost of each against ping.
Hosts: `--inventory FILE` (existing hosts) or, by default, `python -m lab hosts up --count N --prefix P`
(the lab must be up: `python -m lab up`); `--down` removes those hosts afterwards.

Run: .venv/bin/python bench/bench_audit.py [--count 20] [--rounds 3] [--forks 20]
Not part of `make test` (it needs the lab and takes minutes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(cmd, env, timeout=1800):
    start = time.monotonic()
    proc = subprocess.run(
        cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(
            f"bench: {' '.join(map(str, cmd))} failed (rc {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        )
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--prefix", default="gpufleet-bench")
    ap.add_argument("--inventory", help="use these hosts instead of starting lab hosts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forks", type=int, default=20)
    ap.add_argument("--down", action="store_true", help="remove the lab hosts afterwards")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="gpufleet-bench-"))
    if args.inventory:
        inventory = Path(args.inventory).resolve()
    else:
        subprocess.run(
            [sys.executable, "-m", "lab", "hosts", "up", "--count", str(args.count), "--prefix", args.prefix],
            cwd=ROOT,
            check=True,
        )
        inventory = work / "inventory.yml"
        shutil.copy(ROOT / ".lab" / "inventory.yml", inventory)  # the lab rewrites its file on the next `up`
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
        ANSIBLE_FORKS=str(args.forks),
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(work / "facts"),
        ANSIBLE_NOCOLOR="1",
    )
    inv = ["-i", str(inventory)]
    commands = {
        "ping": [str(BIN / "ansible"), *inv, "all", "-m", "ansible.builtin.ping"],
        "audit": [
            str(BIN / "ansible-playbook"),
            *inv,
            "playbooks/audit.yml",
            "-e",
            f"gpufleet_audit_report_dir={work / 'reports'}",
        ],
        "naive": [str(BIN / "ansible-playbook"), *inv, "bench/naive_audit.yml"],
    }
    hosts = subprocess.run(
        [str(BIN / "ansible-inventory"), *inv, "--list"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.count('"ansible_host"')
    # warm-up: SSH host keys, interpreter, page cache on the hosts
    run(commands["ping"], env)
    times = {name: [] for name in commands}
    for r in range(args.rounds):
        order = list(commands) if r % 2 == 0 else list(reversed(commands))
        for name in order:
            times[name].append(run(commands[name], env))
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"hosts: {hosts}  forks: {args.forks}  rounds: {args.rounds}  (median seconds)")
    for name in ("ping", "audit", "naive"):
        extra = (med[name] - med["ping"]) / max(hosts, 1)
        print(
            f"  {name:6s} {med[name]:7.2f} s   {med[name] / max(hosts, 1):6.3f} s/host   "
            f"{med[name] / med['ping']:5.2f}x ping   (+{extra:.3f} s/host over ping)   runs: "
            + " ".join(f"{t:.2f}" for t in times[name])
        )
    ratio = med["naive"] / med["audit"]
    print(f"naive / audit = {ratio:.2f}x wall time  (goal >= 3x: {'met' if ratio >= 3 else 'NOT met'})")
    above = (med["naive"] - med["ping"]) / max(med["audit"] - med["ping"], 1e-9)
    print(
        f"naive / audit = {above:.2f}x above the ping floor (the cost beyond one SSH round trip per host; "
        f"the floor, {med['ping']:.2f} s, caps the wall-time ratio at {med['naive'] / med['ping']:.2f}x)"
    )
    if args.down and not args.inventory:
        subprocess.run(
            [sys.executable, "-m", "lab", "hosts", "down", "--prefix", args.prefix], cwd=ROOT, check=True
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
