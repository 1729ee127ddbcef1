"""Benchmark: molecule's create + destroy of a docker scenario, molecule-plugins' playbooks against ours.

The shared molecule config (.config/molecule/config.yml) names .config/molecule/docker-create.yml and
docker-destroy.yml: one synchronous docker_container call per platform. molecule-plugins' own playbooks
start the containers as async jobs polled every 5 s, template a Dockerfile and look for images and networks
that our prebuilt local images never need. This runs ``molecule create`` then ``molecule destroy`` of one
scenario with each base config, alternating: ours as it is, and a copy without the two playbook entries
(molecule then takes the driver's own). ``make test`` runs them for every docker scenario twice a scenario
(destroy first, then create, destroy at the end) and once more in the matrix's smoke.

Run: .venv/bin/python bench/bench_molecule_docker.py [--repeat N] [--scenario NAME]. Needs the lab's images
and network (``python -m lab up``). Prints the medians and the ratio theirs/ours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MOLECULE = ROOT / ".venv" / "bin" / "molecule"
BASE = ROOT / ".config" / "molecule" / "config.yml"


def theirs(work):
    """The shared config without our create/destroy: molecule-plugins' docker playbooks."""
    config = yaml.safe_load(BASE.read_text(encoding="utf-8"))
    playbooks = config["provisioner"].pop("playbooks")
    assert set(playbooks) == {"create", "destroy"}, playbooks
    path = Path(work) / "config.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def create_destroy(base, scenario):
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / ".collections")
    took = []
    for action in ("create", "destroy"):
        start = time.monotonic()
        argv = [str(MOLECULE), "-c", str(base), action, "-s", scenario]
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        took.append(time.monotonic() - start)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-2000:]
            sys.exit(f"bench_molecule_docker: molecule {action} failed ({base}):\n{tail}")
    return took


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenario", default="smoke")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-") as work:
        bases = {"molecule-plugins": theirs(work), "ours": BASE}
        times = {name: {"create": [], "destroy": []} for name in bases}
        for _ in range(args.repeat):
            for name, base in bases.items():
                create, destroy = create_destroy(base, args.scenario)
                times[name]["create"].append(create)
                times[name]["destroy"].append(destroy)
    med = {n: {a: statistics.median(v) for a, v in t.items()} for n, t in times.items()}
    for name, m in med.items():
        print(
            f"molecule {args.scenario}, {name}: create {m['create']:.1f} s, destroy {m['destroy']:.1f} s "
            f"(median of {args.repeat})"
        )
    total = {n: m["create"] + 2 * m["destroy"] for n, m in med.items()}
    plugins, ours = total["molecule-plugins"], total["ours"]
    print(
        f"create + two destroys (what molecule test runs): molecule-plugins {plugins:.1f} s, "
        f"ours {ours:.1f} s: {plugins / ours:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
