"""Benchmark: Ansible's per-task cost with pipelining off and on, side by side in one run.

molecule writes its own ansible.cfg (which replaces the project's, where ``[ssh_connection] pipelining`` is
on), so every scenario ran without pipelining until .config/molecule/config.yml set ``ANSIBLE_PIPELINING``.
Without it each task is several connection calls (make a temporary directory, put the module, run it,
remove the directory); with it one (the module goes to python's stdin). This measures the same small
playbook (``--tasks`` command and stat tasks) both ways, alternating, against:

- a docker instance of the lab's Debian 12 image (the molecule scenarios' connection), and
- with ``--vm NAME``, a running lab guest over ssh (``python -m lab vm start NAME``; the driver-vm
  scenarios), where every process the guest starts is emulated (TCG) and costs far more.

Run: .venv/bin/python bench/bench_pipelining.py [--repeat N] [--tasks N] [--vm NAME]. Needs the lab's
images (``python -m lab up``). Prints seconds per task and the ratio off/on.
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

ROOT = Path(__file__).resolve().parents[1]
PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
IMAGE = "gpufleet/debian12"
CONTAINER = "gpufleet-bench-pipelining"
VM_INVENTORY = ROOT / ".lab" / "vm-inventory.yml"

PLAY = """\
- hosts: {host}
  gather_facts: false
  tasks:
    - ansible.builtin.command: "true"
      changed_when: false
      loop: "{{{{ range({half}) | list }}}}"
    - ansible.builtin.stat:
        path: /etc/passwd
      loop: "{{{{ range({half}) | list }}}}"
"""


def run_play(inventory, play, pipelining):
    env = dict(os.environ, ANSIBLE_PIPELINING=str(pipelining).lower())
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / ".collections")
    env["ANSIBLE_CONFIG"] = str(Path(play).with_name("ansible.cfg"))  # neither the project's nor a user's
    start = time.monotonic()
    argv = [str(PLAYBOOK), "-i", str(inventory), str(play)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - start
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        sys.exit(f"bench_pipelining: ansible-playbook failed (pipelining {pipelining}):\n{tail}")
    return took


def measure(label, inventory, host, *, tasks, repeat, work):
    play = Path(work) / f"{host}.yml"
    play.with_name("ansible.cfg").write_text("[defaults]\nhost_key_checking = false\n", encoding="utf-8")
    play.write_text(PLAY.format(host=host, half=max(1, tasks // 2)), encoding="utf-8")
    times = {False: [], True: []}
    for _ in range(repeat):
        for pipelining in (False, True):
            times[pipelining].append(run_play(inventory, play, pipelining))
    off, on = statistics.median(times[False]), statistics.median(times[True])
    count = 2 * max(1, tasks // 2)
    print(
        f"{label}: {count} tasks, median of {repeat}: without pipelining {off:.1f} s "
        f"({off / count:.2f} s/task), with {on:.1f} s ({on / count:.2f} s/task): {off / on:.2f}x"
    )
    return off / on


def docker(work, tasks, repeat):
    subprocess.run(["docker", "rm", "-f", CONTAINER], capture_output=True, check=False)
    subprocess.run(["docker", "run", "-d", "--rm", "--name", CONTAINER, IMAGE, "sleep", "3600"],
                   check=True, capture_output=True)  # fmt: skip
    try:
        inventory = Path(work) / "docker.ini"
        inventory.write_text(
            f"{CONTAINER} ansible_connection=community.docker.docker"
            " ansible_python_interpreter=/usr/bin/python3\n",
            encoding="utf-8",
        )
        return measure("docker instance", inventory, CONTAINER, tasks=tasks, repeat=repeat, work=work)
    finally:
        subprocess.run(["docker", "rm", "-f", CONTAINER], capture_output=True, check=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--vm", help="a running lab guest (python -m lab vm start NAME), measured over ssh")
    parser.add_argument("--vm-tasks", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-") as work:
        docker(work, args.tasks, args.repeat)
        if args.vm:
            if not VM_INVENTORY.exists():
                sys.exit(f"bench_pipelining: no {VM_INVENTORY}: first python -m lab vm start {args.vm}")
            label = f"VM guest {args.vm} (ssh)"
            measure(label, VM_INVENTORY, args.vm, tasks=args.vm_tasks, repeat=args.repeat, work=work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
