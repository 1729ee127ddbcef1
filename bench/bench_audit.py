"""Benchmark: playbooks/audit.yml over N lab hosts (SSH) against a naive audit and a bare ping.

Measured in the same process, on the same hosts, alternating, each `--rounds` times (the best round is the
figure, the median is printed beside it: on a shared machine the best round is the least disturbed one):
- ping:  `ansible all -m ansible.builtin.ping` (the floor: one SSH round trip per host);
- audit: `ansible-playbook playbooks/audit.yml` (one nvidia_facts round trip per host + the reports);
- naive: `ansible-playbook bench/naive_audit.yml` (setup + nvidia-smi + dpkg -l + find cudnn_version.h: what
  people do today, and it still misses pip/conda copies and the loader's choice).

Prints seconds, audit/ping (goal <= 1.2), naive/audit (goal >= 3) and the per-host cost of each against ping.
Hosts: `--inventory FILE` (existing hosts) or, by default, `python -m lab hosts up --count N --prefix P`
(the lab must be up: `python -m lab up`); `--down` removes those hosts afterwards.

With --options, also each setting users reach for at scale, side by side in the same rounds: strategy
free (the default is linear), forks 5 and 10, pipelining off, SSH ControlPersist off, no fact cache,
nvidia_facts ad hoc (what the playbook adds), and mitogen's mitogen_linear and mitogen_free strategies
when the mitogen package is importable (pip install mitogen, or GPUFLEET_MITOGEN=DIR after
pip install --target DIR mitogen).

Run: .venv/bin/python bench/bench_audit.py [--count 20] [--rounds 3] [--forks 20] [--options]
Not part of `make test` (it needs the lab and takes minutes).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
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


def own_inventory(prefix, path):
    """This prefix's hosts of this checkout's lab only (the lab's inventory also lists its other prefixes;
    the lab rewrites its file on the next `up`, so the benchmark works on a copy)."""
    doc = yaml.safe_load(lab_hosts.INVENTORY.read_text(encoding="utf-8"))
    lab = doc["all"]["children"]["lab_hosts"]
    group = lab_hosts.group_name(prefix)
    lab["children"] = {group: lab["children"][group]}
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


# --options: the settings users reach for at scale, each an audit run with these environment changes
OPTIONS = {
    "audit free": ({}, ["-e", "gpufleet_audit_strategy=free"]),
    "audit forks=5": ({"ANSIBLE_FORKS": "5"}, []),
    "audit forks=10": ({"ANSIBLE_FORKS": "10"}, []),
    "audit no pipelining": ({"ANSIBLE_PIPELINING": "False"}, []),
    "audit no ControlPersist": ({"ANSIBLE_SSH_ARGS": "-o ControlMaster=no"}, []),
    "audit no fact cache": ({"ANSIBLE_CACHE_PLUGIN": "ansible.builtin.memory"}, []),
    "facts ad hoc": ({}, None),  # nvidia_facts alone (`ansible -m`): what the playbook adds on top
}


def mitogen_option():
    """mitogen's strategies, when ansible_mitogen is importable (pip install mitogen, or GPUFLEET_MITOGEN=DIR
    for ``pip install --target DIR mitogen``)."""
    where = os.environ.get("GPUFLEET_MITOGEN")
    if where:
        sys.path.insert(0, where)
    try:
        mitogen = importlib.import_module("ansible_mitogen")
    except Exception:  # not installed, or refuses this ansible-core version
        return None
    root = Path(mitogen.__file__).parent
    env = {
        "ANSIBLE_STRATEGY_PLUGINS": str(root / "plugins" / "strategy"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(root.parent), os.environ.get("PYTHONPATH")) if p),
    }
    return {
        f"audit {name}": (env, ["-e", f"gpufleet_audit_strategy={name}"])
        for name in ("mitogen_linear", "mitogen_free")
    }


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--prefix", default="gpufleet-bench")
    ap.add_argument("--inventory", help="use these hosts instead of starting lab hosts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forks", type=int, default=20)
    ap.add_argument("--options", action="store_true", help="also measure forks, strategy, pipelining, ...")
    ap.add_argument("--down", action="store_true", help="remove the lab hosts afterwards")
    return ap.parse_args()


def commands_for(args, inv, work):
    audit = [str(BIN / "ansible-playbook"), *inv, "playbooks/audit.yml"]
    audit += ["-e", f"gpufleet_audit_report_dir={work / 'reports'}"]
    commands = {
        "ping": ({}, [str(BIN / "ansible"), *inv, "all", "-m", "ansible.builtin.ping"]),
        "audit": ({}, audit),
        "naive": ({}, [str(BIN / "ansible-playbook"), *inv, "bench/naive_audit.yml"]),
    }
    if args.options:
        for name, (env, extra) in {**OPTIONS, **(mitogen_option() or {})}.items():
            if extra is None:
                commands[name] = (
                    env,
                    [str(BIN / "ansible"), *inv, "all", "-m", "gpufleet.nvidia.nvidia_facts"],
                )
            else:
                commands[name] = (env, audit + extra)
    return commands


def print_results(times, hosts, args):
    # the best round of each: on a shared machine, the run least disturbed by other jobs (medians printed too)
    med = {name: min(v) for name, v in times.items()}
    print(
        f"audit: hosts {hosts}, forks {args.forks}, rounds {args.rounds} (best round, seconds, side by side; "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    for name in times:
        extra = (med[name] - med["ping"]) / max(hosts, 1)
        print(
            f"  {name:24s} {med[name]:7.2f} s  {med[name] / med['ping']:5.2f}x ping  "
            f"{med[name] / med['audit']:5.2f}x audit  (+{extra:.3f} s/host over ping)  "
            f"median {statistics.median(times[name]):.2f}  runs: " + " ".join(f"{t:.2f}" for t in times[name])
        )
    ratio, over = med["naive"] / med["audit"], med["audit"] / med["ping"]
    print(f"  audit / ping = {over:.2f}x  (goal <= 1.2x: {'met' if over <= 1.2 else 'NOT met'})")
    print(f"  naive / audit = {ratio:.2f}x wall time  (goal >= 3x: {'met' if ratio >= 3 else 'NOT met'})")
    above = (med["naive"] - med["ping"]) / max(med["audit"] - med["ping"], 1e-9)
    print(
        f"  naive / audit = {above:.2f}x above the ping floor (the cost beyond one SSH round trip per host; "
        f"the floor, {med['ping']:.2f} s, caps the wall-time ratio at {med['naive'] / med['ping']:.2f}x)"
    )


def main():
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpufleet-bench-"))
    if args.inventory:
        inventory = Path(args.inventory).resolve()
    else:
        subprocess.run(
            [sys.executable, "-m", "lab", "hosts", "up", "--count", str(args.count), "--prefix", args.prefix],
            cwd=ROOT,
            check=True,
        )
        inventory = own_inventory(args.prefix, work / "inventory.yml")
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
        ANSIBLE_FORKS=str(args.forks),
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(work / "facts"),
        ANSIBLE_NOCOLOR="1",
    )
    inv = ["-i", str(inventory)]
    commands = commands_for(args, inv, work)
    hosts = subprocess.run(
        [str(BIN / "ansible-inventory"), *inv, "--list"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.count('"ansible_host"')
    run(commands["ping"][1], env)  # warm-up: SSH host keys, interpreter, page cache on the hosts
    times = {name: [] for name in commands}
    for r in range(args.rounds):
        order = list(commands) if r % 2 == 0 else list(reversed(commands))
        for name in order:
            extra_env, cmd = commands[name]
            times[name].append(run(cmd, dict(env, **extra_env)))
    print_results(times, hosts, args)
    if args.down and not args.inventory:
        subprocess.run(
            [sys.executable, "-m", "lab", "hosts", "down", "--prefix", args.prefix], cwd=ROOT, check=True
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
