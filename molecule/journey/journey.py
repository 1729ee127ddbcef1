"""The journey (issue 37): README.md's user commands, as written, in a user's empty project directory.

Run by converge.yml on the controller:

    PYTHONPATH=CHECKOUT journey.py --project CHECKOUT --work DIR --key SSH_KEY --host GROUP=CONTAINER ...

(the toolchain's Python, .venv: the docker SDK, as the lab uses it; PYTHONPATH for tests/readme_journey.py)

1. builds the collection's tarball from the checkout (README.md's build line, with --output-path DIR) and
   installs it with README.md's offline install line into DIR/collections, the only collections path;
2. writes the user's project in DIR: an empty ansible.cfg, README.md's inventory with its hosts replaced
   by the lab containers (same groups, README's vars), README.md's playbook as written,
   inventory/example/group_vars/login.yml (the login group's switches) and project/group_vars/all.yml (the
   lab's settings, and only those);
3. runs README.md's ansible-playbook lines of "A first run" and "The main jobs" in README order, as written
   (bash -c LINE), a syntax check for the ones that cannot run in the lab (tests/readme_journey.py
   SYNTAX_ONLY says why), then the journey's own commands (EXTRA);
4. writes DIR/journey.json: every command, its exit code and time, its log (DIR/logs) and the record of
   callback_plugins/journey_record.py (DIR/records), which the tests in tests/ read.

Every command runs in DIR with HOME=DIR/home and no ANSIBLE_* or MOLECULE_* variable of molecule's run but
the collections path and the recorder; it stops at the first that fails and prints the end of its log.
"""

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import docker
import yaml

from tests import readme_journey

HERE = Path(__file__).resolve().parent

# The journey's own commands after README.md's, each with why it is there. README's own commands never plan
# the driver on the login node (its first run's driver play is on gpu_nodes, its main jobs pass
# gpufleet_driver_hosts=gpu_nodes), so these two show that the login node stays driver-free on its own.
EXTRA = [
    (
        "the driver planned for every host: the login node's plan says the example inventory's switch "
        "(nvidia_driver_enabled: false) disables it",
        "ansible-playbook -i {inventory} gpufleet.nvidia.preflight",
    ),
    (
        "without that switch, the product's default: the driver role on the login node, which has no GPU, "
        "plans nothing and changes nothing (nvidia_driver_install_without_gpu is false there)",
        "ansible-playbook -i {inventory} gpufleet.nvidia.driver -l login -e nvidia_driver_enabled=true",
    ),
]
SSH_WAIT = 90
LAB_NETWORK = "gpufleet-lab"


def user_env(work):
    """A user's shell: molecule's ANSIBLE_*/MOLECULE_* settings gone, HOME in the project, the fresh
    collections path alone, the recorder enabled; ansible-playbook is the one beside this Python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MOLECULE_", "PYTHONPATH"))}
    env.update(
        HOME=str(work / "home"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        ANSIBLE_COLLECTIONS_PATH=str(work / "collections"),
        ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="journey_record",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        LC_ALL="C.UTF-8",
    )
    return env


class Runner:
    def __init__(self, work):
        self.work = work
        self.env = user_env(work)
        self.runs = []

    def run(self, kind, executed, command=None, why="", cwd=None):
        """bash -c EXECUTED in the project (or cwd); its output in logs/, its record in records/."""
        index = len(self.runs) + 1
        log = self.work / "logs" / f"{index:02d}.log"
        record = self.work / "records" / f"{index:02d}.json"
        env = {**self.env, "JOURNEY_RECORD": str(record)}
        print(f"=== journey {index:02d} ({kind}): {executed}", flush=True)
        t0 = time.monotonic()
        with log.open("w") as out:
            rc = subprocess.run(
                ["bash", "-c", executed],
                check=False,
                cwd=cwd or self.work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            ).returncode
        seconds = round(time.monotonic() - t0, 1)
        entry = {
            "index": index,
            "kind": kind,
            "section": command.section if command else "",
            "line": command.line if command else executed,
            "argv": list(command.argv) if command else shlex.split(executed, comments=True),
            "playbook": command.playbook if command else "",
            "executed": executed,
            "why": why,
            "rc": rc,
            "seconds": seconds,
            "log": str(log.relative_to(self.work)),
            "record": str(record.relative_to(self.work)) if record.exists() else None,
        }
        self.runs.append(entry)
        recap = json.loads(record.read_text())["recap"] if record.exists() else {}
        counts = ", ".join(
            f"{h} changed={c.get('changed')} failed={c.get('failures')}" for h, c in recap.items()
        )
        print(f"    rc={rc} in {seconds}s{'; ' + counts if counts else ''}", flush=True)
        if rc != 0:
            tail = log.read_text().splitlines()[-80:]
            raise SystemExit(
                f"journey: {executed!r} failed (exit {rc}); the end of {log}:\n" + "\n".join(tail)
            )
        return entry


def parse_hosts(items):
    """--host GROUP=CONTAINER ... -> {group: {container: {ansible_host: its address on the lab network}}}"""
    client, hosts = docker.from_env(), {}
    for item in items:
        group, name = item.split("=", 1)
        networks = client.containers.get(name).attrs["NetworkSettings"]["Networks"]
        hosts.setdefault(group, {})[name] = {"ansible_host": networks[LAB_NETWORK]["IPAddress"]}
    return hosts


def wait_ssh(hosts):
    deadline = time.monotonic() + SSH_WAIT
    for group in hosts.values():
        for name, hostvars in group.items():
            while True:
                try:
                    socket.create_connection((hostvars["ansible_host"], 22), timeout=2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"journey: no sshd on {name} within {SSH_WAIT}s") from None
                    time.sleep(1)


def write_project(work, project, journey, hosts, key):
    """The user's project: README's inventory (lab hosts) and playbook, the example's login switches, the
    lab's settings, and the lab key where those settings look for it."""
    (work / "ansible.cfg").write_text("")
    inventory = readme_journey.lab_inventory(journey.inventory, hosts)
    header = (
        "# README.md's first-run inventory, its hosts replaced by the lab's containers (molecule/journey)\n"
    )
    (work / journey.inventory_name).write_text(header + yaml.safe_dump(inventory, sort_keys=False))
    (work / journey.playbook_name).write_text(journey.playbook_text)
    (work / "group_vars").mkdir()
    shutil.copy(project / "inventory/example/group_vars/login.yml", work / "group_vars/login.yml")
    shutil.copy(HERE / "project/group_vars/all.yml", work / "group_vars/all.yml")
    (work / "lab-ssh").mkdir(mode=0o700)
    shutil.copy(key, work / "lab-ssh/id_ed25519")
    os.chmod(work / "lab-ssh/id_ed25519", 0o600)


def install(runner, project, journey):
    """README's build line (into the project: --output-path) and its offline install line, as written."""
    build = shlex.join([*journey.build.argv, "--output-path", str(runner.work)])
    runner.run("build", build, journey.build, cwd=project)
    runner.run("install", journey.install.line, journey.install)
    found = sorted(p.name for p in (runner.work / "collections/ansible_collections").iterdir())
    if found != ["gpufleet"]:
        raise SystemExit(f"journey: the install put {found} on the collections path, not gpufleet alone")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--host", action="append", default=[], required=True)
    args = parser.parse_args(argv)
    project, work = args.project.resolve(), args.work.resolve()
    journey = readme_journey.journey((project / "README.md").read_text())
    hosts = parse_hosts(args.host)
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("home", "logs", "records"):
        (work / sub).mkdir(parents=True)
    runner = Runner(work)
    t0 = time.monotonic()
    try:
        install(runner, project, journey)
        write_project(work, project, journey, hosts, args.key)
        wait_ssh(hosts)
        for command in journey.commands:
            if command.how == "run":
                runner.run(command.section, command.line, command)
            else:
                runner.run(f"{command.section}, syntax check", command.syntax_check, command, command.why)
        for why, line in EXTRA:
            command = readme_journey.parse_command("journey", line.format(inventory=journey.inventory_name))
            runner.run("journey", command.line, command, why)
    finally:
        summary = {
            "seconds": round(time.monotonic() - t0, 1),
            "inventory": journey.inventory_name,
            "playbook": journey.playbook_name,
            "hosts": hosts,
            "runs": runner.runs,
        }
        (work / "journey.json").write_text(json.dumps(summary, indent=1))
    print(f"journey: {len(runner.runs)} commands in {summary['seconds']}s")


if __name__ == "__main__":
    main()
