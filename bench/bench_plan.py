"""Benchmark: a role's plan step on the host (OLD) against the plan on the controller (NEW), side by side.

OLD is a checkout of a base commit (``--base``, default 6a1778b: the cudnn preflight ran ``nvidia_facts`` and
then the module ``nvidia_cudnn_plan`` on the host, with plan/, kb/ and probe/ in its payload), unpacked by
this script with ``git archive`` into a temporary directory (its own ``.collections`` link; removed at the
end). NEW is this checkout as it is (the action plugin ``nvidia_plan``: ``nvidia_facts`` on the host, the
plan in the controller's fork). Measured in one run:

1. payload: the AnsiballZ payload ansible-core builds (``module_common.modify_module``, in a subprocess per
   tree with the collection path pointed at that tree) for ``nvidia_facts`` in each tree and for OLD's
   ``nvidia_cudnn_plan`` (the old plan step shipped both): bytes and the module_utils packages each carries
   (NEW's ``nvidia_facts`` must carry no plan/);
2. plan step: the cudnn role's plan step on ``--hosts`` N local-connection hosts, each pointed at its own fake
   root tree (``--tree``: tests/data/facts/fakeroot.py's ``h200`` or ``bare``), so nothing depends on this
   machine. OLD is a playbook of the two tasks the old preflight ran (taken from the base commit's
   ``roles/cudnn/tasks/preflight.yml``, ``root:`` the fake tree), NEW one ``gpufleet.nvidia.nvidia_plan``
   task; ``ansible -m ping`` of the same hosts is the floor. Each runs once untimed (it must succeed), then
   ``--rounds`` R times alternating; the median wall time is the figure;
3. no-op converge: ``playbooks/cuda.yml`` + ``playbooks/cudnn.yml`` again on a converged lab host (changed=0
   expected; bench/bench_install.py's hosts and variables) with OLD's and NEW's playbooks and collection,
   alternating, against ``ansible -m ping`` of that host. Needs the lab (``make lab``); skipped with a line
   saying why when it is not up, or with ``--no-lab``.

Run: .venv/bin/python bench/bench_plan.py [--base REV] [--hosts 10] [--rounds 3] [--tree h200|bare]
     [--no-lab] [--keep]   (--keep keeps the lab host of part 3). Not part of `make test`.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import importlib.util
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FACTS = "gpufleet.nvidia.nvidia_facts"
OLD_PLAN = "gpufleet.nvidia.nvidia_cudnn_plan"
NEW_PLAN = "gpufleet.nvidia.nvidia_plan"
# what the old cudnn preflight asked nvidia_facts for (roles/cudnn/tasks/preflight.yml at the base)
FACTS_ARGS = {"gather_subset": ["gpu", "driver", "owners"], "owner_paths": ["/opt/nvidia/cudnn"]}
# the role variables of part 2, the same for OLD and NEW: cuDNN for CUDA 13; the H200 tree's packaged cuDNN
# is what the loader resolves, which the plan refuses to shadow unless told to
PLAN_VARS = {"cudnn_cuda_major": 13, "cudnn_system_default": True}
# the old plan module took these from gathered facts; the playbooks of part 2 gather none
OLD_PLAN_HOST = {"machine": "x86_64", "os_family": "Debian"}
COLLECTION = "ansible_collections/gpufleet/nvidia/plugins/"
PREFIX = "gpufleet-benchp"
MIRROR = "gpufleet-mirror"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="6a1778b", help="the OLD commit (default 6a1778b)")
    ap.add_argument("--hosts", type=int, default=10, help="hosts of part 2 (default 10)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds of parts 2 and 3 (default 3)")
    ap.add_argument("--tree", choices=("h200", "bare"), default="h200", help="fake root of part 2's hosts")
    ap.add_argument("--no-lab", action="store_true", help="skip part 3 (the no-op converge on a lab host)")
    ap.add_argument("--keep", action="store_true", help="keep part 3's lab host")
    ap.add_argument("--payload", help=argparse.SUPPRESS)  # child mode: build one module's payload, print JSON
    ap.add_argument("--payload-args", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.hosts < 1 or args.rounds < 1:
        ap.error("--hosts and --rounds must be at least 1")
    return args


# ---------------------------------------------------------------------------------------------- the trees


def git(*argv, cwd=ROOT):
    proc = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench_plan: git {' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def new_label():
    """This checkout: its HEAD, and whether tracked files differ from it (NEW is the working tree)."""
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short=12", "HEAD") + (" + uncommitted changes" if dirty else "")


def make_old_tree(base, work):
    """The base commit unpacked under ``work``/old with its own collection link (and this checkout's other
    collections: ansible.posix, community.docker, for part 3's playbooks)."""
    tree = work / "old"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", base], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    namespaces = tree / ".collections" / "ansible_collections"
    (namespaces / "gpufleet").mkdir(parents=True)
    (namespaces / "gpufleet" / "nvidia").symlink_to("../../..")
    ours = ROOT / ".collections" / "ansible_collections"
    for other in sorted(ours.iterdir()) if ours.is_dir() else []:
        if other.is_dir() and other.name != "gpufleet":
            (namespaces / other.name).symlink_to(other.resolve())
    return tree


def tree_env(tree, work, label):
    """Ansible pointed at ``tree``: its ansible.cfg and collection; a fact cache of its own under ``work``."""
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(tree / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(tree / ".collections"),
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(work / f"facts-{label}"),
        ANSIBLE_NOCOLOR="1",
    )


def run_timed(cmd, env, cwd=ROOT):
    """Seconds of one command; exits with its output's tail when it fails."""
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    took = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(
            f"bench_plan: {' '.join(map(str, cmd))} failed (rc {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        )
    return took


# -------------------------------------------------------------------------------------- tables and figures


def table(headers, rows):
    """A plain-text table: columns as wide as their widest cell, the first left-aligned, the others right."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def rounds_order(names, rounds):
    """The order of each round: as given, then reversed, alternating (a drift in load hits both sides)."""
    return [list(names) if r % 2 == 0 else list(reversed(names)) for r in range(rounds)]


def timing_rows(times, hosts, floor="ping"):
    """Rows (name, median s, s/host, x floor, s/host above the floor, runs) from {name: [seconds]}."""
    med = {name: statistics.median(runs) for name, runs in times.items()}
    rows = []
    for name, runs in times.items():
        rows.append(
            (
                name,
                f"{med[name]:.2f}",
                f"{med[name] / hosts:.3f}",
                f"{med[name] / med[floor]:.2f}x",
                f"{(med[name] - med[floor]) / hosts:+.3f}",
                " ".join(f"{t:.2f}" for t in runs),
            )
        )
    return rows, med


TIMING_HEADERS = ("", "median s", "s/host", "x ping", "s/host over ping", "runs (s)")


# ----------------------------------------------------------------------------------------- part 1: payload


def payload_files(wrapper):
    """[(name, compressed bytes)] of the zip an AnsiballZ wrapper carries (its ``zip_data=`` argument)."""
    found = re.search(rb"zip_data='([A-Za-z0-9+/=]+)'", wrapper)
    if not found:
        raise ValueError("no zip_data in this AnsiballZ wrapper")
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(found.group(1)))) as zf:
        return [(info.filename, info.compress_size) for info in zf.infolist()]


def payload_group(name):
    """The package a payload file belongs to: ``ansible.module_utils``, a collection module_utils package
    (``plan/``, ``probe/``, ``kb/``, ``versions.py``), ``modules/`` or ``(namespace __init__)``."""
    if name.startswith("ansible/"):
        return "ansible.module_utils"
    if name.startswith(COLLECTION + "module_utils/"):
        rest = name[len(COLLECTION + "module_utils/") :]
        if rest == "__init__.py":
            return "(namespace __init__)"
        return rest.split("/", 1)[0] + "/" if "/" in rest else rest
    if name.startswith(COLLECTION + "modules/"):
        return "modules/"
    return "(namespace __init__)"


def payload_groups(files):
    """{group: (files, compressed bytes)} of a payload's files, in first-seen order."""
    groups = {}
    for name, size in files:
        count, total = groups.get(payload_group(name), (0, 0))
        groups[payload_group(name)] = (count + 1, total + size)
    return groups


def payload_child(module, module_args):
    """Child mode: ``module``'s payload as this process's Ansible (ANSIBLE_COLLECTIONS_PATH) builds it."""
    module_common = importlib.import_module("ansible.executor.module_common")
    loader = importlib.import_module("ansible.plugins.loader")
    templar = importlib.import_module("ansible.template").Templar
    data_loader = importlib.import_module("ansible.parsing.dataloader").DataLoader
    loader.init_plugin_loader()
    found = loader.module_loader.find_plugin_with_context(module)
    if not found.resolved:
        print(json.dumps({"module": module, "missing": True}))
        return 0
    built = module_common.modify_module(
        module_name=module,
        module_path=found.plugin_resolved_path,
        module_args=module_args,
        templar=templar(loader=data_loader()),
        task_vars={"ansible_python_interpreter": sys.executable},
        module_compression="ZIP_DEFLATED",  # ansible-core's default (DEFAULT_MODULE_COMPRESSION)
    )
    out = {
        "module": module,
        "path": os.path.realpath(found.plugin_resolved_path),
        "bytes": len(built.b_module_data),
        "files": payload_files(built.b_module_data),
    }
    print(json.dumps(out))
    return 0


def build_payload(tree, work, label, module, module_args):
    """The child's answer for ``module`` in ``tree`` (None when the tree has no such module)."""
    env = tree_env(tree, work, label)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--payload", module]
    cmd += ["--payload-args", json.dumps(module_args)]
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench_plan: building the {module} payload in {tree} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out.get("missing"):
        return None
    if not out["path"].startswith(str(tree.resolve()) + os.sep):
        sys.exit(f"bench_plan: {module} for {tree} resolved to {out['path']}, outside that tree")
    return out


def group_order(group):
    """ansible.module_utils first, the collection's packages by name, then modules/, namespace files last."""
    last = {"ansible.module_utils": 0, "modules/": 2, "(namespace __init__)": 3}
    return (last.get(group, 1), group)


def payload_rows(payloads):
    """Rows of the payload table: total bytes, then each package's files and compressed KiB per payload."""
    groups = sorted({g for p in payloads.values() if p for g in payload_groups(p["files"])}, key=group_order)
    rows = [("AnsiballZ payload, bytes", *(f"{p['bytes']:,}" if p else "-" for p in payloads.values()))]
    for g in groups:
        cells = []
        for p in payloads.values():
            count, size = payload_groups(p["files"]).get(g, (0, 0)) if p else (0, 0)
            cells.append(f"{count} / {size / 1024:.1f}" if count else "-")
        rows.append((f"  {g}", *cells))
    return rows


def part_payload(old, new, work):
    payloads = {
        "OLD nvidia_facts": build_payload(old, work, "old", FACTS, FACTS_ARGS),
        "NEW nvidia_facts": build_payload(new, work, "new", FACTS, FACTS_ARGS),
        "OLD nvidia_cudnn_plan": build_payload(old, work, "old", OLD_PLAN, {}),
    }
    print("\n1. AnsiballZ payloads (ZIP_DEFLATED, base64; packages: files / compressed KiB)")
    print(table(("", *payloads), payload_rows(payloads)))
    old_step = sum(p["bytes"] for k, p in payloads.items() if p and k.startswith("OLD"))
    new_facts = payloads["NEW nvidia_facts"]
    print(
        f"  the plan step ships per host: OLD {old_step:,} bytes (nvidia_facts + nvidia_cudnn_plan; the facts"
        f" went along as the latter's arguments, part 2 says how many bytes), NEW {new_facts['bytes']:,} "
        f"(nvidia_facts) = {new_facts['bytes'] / old_step:.2f}x"
    )
    carried = "plan/" in payload_groups(new_facts["files"])
    print(f"  plan/ in NEW's nvidia_facts payload: {'yes: NOT met' if carried else 'no (required: none)'}")
    return payloads


# ------------------------------------------------------------------------------------ part 2: plan step


def build_roots(work, count, kind):
    """``count`` fake root trees (tests/data/facts/fakeroot.py), each with an x86-64 /bin/sh."""
    for path in (str(ROOT), str(ROOT / ".collections")):
        if path not in sys.path:
            sys.path.insert(0, path)
    fakeroot = importlib.import_module("tests.data.facts.fakeroot")
    roots = []
    for i in range(count):
        root = work / "roots" / f"host{i:03d}"
        if kind == "h200":
            fakeroot.h200(root)
        else:
            fakeroot.bare(root, container=True)
        fakeroot.elf_shell(root, 62)
        roots.append(root)
    return roots


def plan_inventory(path, roots):
    """Local-connection hosts (this venv's python), each with its fake root as ``fake_root``."""
    hosts = {f"plan{i:03d}": {"fake_root": str(root)} for i, root in enumerate(roots)}
    doc = {
        "all": {
            "hosts": hosts,
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        }
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def old_play(preflight, defaults):
    """The old preflight's nvidia_facts and nvidia_cudnn_plan tasks as a play: facts under ``fake_root``, the
    role's defaults and PLAN_VARS as play variables, machine and os_family given (no fact gathering)."""
    tasks = [dict(t) for t in preflight if FACTS in t or OLD_PLAN in t]
    if [FACTS in t for t in tasks] != [True, False]:
        raise ValueError(f"the base's cudnn preflight has no {FACTS} task followed by {OLD_PLAN}")
    tasks[0][FACTS] = dict(tasks[0][FACTS], root="{{ fake_root }}")
    tasks[1][OLD_PLAN] = dict(tasks[1][OLD_PLAN], **OLD_PLAN_HOST)
    play = {"name": "OLD plan step", "hosts": "all", "gather_facts": False}
    return [dict(play, vars={**(defaults or {}), **PLAN_VARS}, tasks=tasks)]


def new_play():
    task = {"name": "Plan on the controller", NEW_PLAN: {"role": "cudnn", "root": "{{ fake_root }}"}}
    play = {"name": "NEW plan step", "hosts": "all", "gather_facts": False}
    return [dict(play, vars=dict(PLAN_VARS), tasks=[task])]


def facts_play(old, dest):
    """OLD's nvidia_facts task on the first host, its facts written to ``dest`` as JSON (their size)."""
    facts = next(t for t in old[0]["tasks"] if FACTS in t)
    content = "{{ " + facts["register"] + ".ansible_facts.nvidia | to_json }}"
    write = {"ansible.builtin.copy": {"content": content, "dest": str(dest), "mode": "0644"}}
    return [dict(old[0], name="OLD facts, their size", hosts="plan000", tasks=[facts, write])]


def write_plays(old, work):
    def load(path):
        return yaml.safe_load(path.read_text(encoding="utf-8"))

    cudnn = old / "roles" / "cudnn"
    plays = {
        "old": old_play(load(cudnn / "tasks" / "preflight.yml"), load(cudnn / "defaults" / "main.yml")),
        "new": new_play(),
    }
    plays["facts"] = facts_play(plays["old"], work / "facts.json")
    paths = {}
    for label, play in plays.items():
        paths[label] = work / f"plan-{label}.yml"
        paths[label].write_text(yaml.safe_dump(play, sort_keys=False), encoding="utf-8")
    return paths


def part_plan(args, old, work):
    roots = build_roots(work, args.hosts, args.tree)
    inv = str(plan_inventory(work / "plan-inventory.yml", roots))
    plays = write_plays(old, work)
    envs = {"old": tree_env(old, work, "old"), "new": tree_env(ROOT, work, "new")}
    playbook = [str(BIN / "ansible-playbook"), "-i", inv]
    commands = {
        "ping": (envs["new"], ROOT, [str(BIN / "ansible"), "-i", inv, "all", "-m", "ansible.builtin.ping"]),
        "OLD nvidia_facts + nvidia_cudnn_plan": (envs["old"], old, [*playbook, str(plays["old"])]),
        "NEW nvidia_plan": (envs["new"], ROOT, [*playbook, str(plays["new"])]),
    }
    for env, cwd, cmd in commands.values():  # untimed: each must succeed; caches and bytecode warm
        run_timed(cmd, env, cwd)
    times = {name: [] for name in commands}
    for order in rounds_order(list(commands), args.rounds):
        for name in order:
            env, cwd, cmd = commands[name]
            times[name].append(run_timed(cmd, env, cwd))
    rows, med = timing_rows(times, args.hosts)
    print(
        f"\n2. the cudnn role's plan step, {args.hosts} local-connection hosts (fake root: {args.tree}), "
        f"median of {args.rounds} alternating rounds after one untimed run each (load average "
        f"{os.getloadavg()[0]:.1f})"
    )
    print(table(TIMING_HEADERS, rows))
    old_name, new_name = list(commands)[1:]
    print(f"  NEW / OLD = {med[new_name] / med[old_name]:.2f}x wall; " + over_floor(med, old_name, new_name))
    run_timed([*playbook, str(plays["facts"])], envs["old"], old)
    size = (work / "facts.json").stat().st_size
    print(f"  OLD also sent the facts back to each host: {size:,} bytes of JSON as nvidia_cudnn_plan's facts")


def over_floor(med, old_name, new_name, floor="ping"):
    above_old, above_new = med[old_name] - med[floor], med[new_name] - med[floor]
    if above_old <= 0:
        return "OLD is not above the ping floor: no ratio above it"
    return f"above the ping floor {above_new / above_old:.2f}x"


# ----------------------------------------------------------------------------------- part 3: no-op converge


def load_bench_install():
    """bench/bench_install.py as a module (its lab hosts, variables and helpers)."""
    spec = importlib.util.spec_from_file_location("bench_install", ROOT / "bench" / "bench_install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lab_skip_reason(no_lab, docker_ok, mirror, archive, server):
    """Why part 3 cannot run (None: it can). ``mirror``: this checkout's lab mirror directory; ``archive``:
    the cuDNN archive bench_install.py installs, relative to it; ``server``: (status, [mounted host
    directories]) of the lab's mirror server, None when there is none."""
    if no_lab:
        return "--no-lab"
    if not docker_ok:
        return "docker does not answer (make lab)"
    if not (Path(mirror) / archive).is_file():
        return f"this checkout's lab mirror ({mirror}) has no {archive} (make lab)"
    if server is None or server[0] != "running":
        return f"the lab's mirror server ({MIRROR}) is not running (make lab)"
    if str(Path(mirror).resolve()) not in {str(Path(m).resolve()) for m in server[1]}:
        return f"the lab's mirror server serves another mirror ({', '.join(server[1])}), not {mirror}"
    return None


def lab_state(bench_install, no_lab):
    """lab_skip_reason's answer for this checkout's lab, asking docker only when needed."""
    mirror = bench_install.lab_serve.mirror_dir()
    if no_lab:
        return lab_skip_reason(True, False, mirror, bench_install.ARCHIVE, None)
    docker_ok = bench_install.lab_engine.docker_answers()
    server = None
    if docker_ok:
        found = bench_install.lab_serve.find(bench_install.lab_engine.client(), MIRROR)
        if found is not None:
            server = (found.status, [m.get("Source", "") for m in found.attrs.get("Mounts", [])])
    return lab_skip_reason(False, docker_ok, mirror, bench_install.ARCHIVE, server)


def noop_converge(bi, inv, host, tree, env):
    """(seconds, changed) of cuda.yml + cudnn.yml of ``tree`` on ``host``."""
    cuda = bi.playbook(inv, tree / "playbooks" / "cuda.yml", host, env)
    cudnn = bi.playbook(inv, tree / "playbooks" / "cudnn.yml", host, env)
    return cuda[0] + cudnn[0], cuda[1] + cudnn[1]


def noop_rounds(bi, inv, host, trees, args):
    """{name: [seconds]} and {name: [changed]} of ping and each tree's no-op converge, alternating."""
    ping = [str(BIN / "ansible"), "-i", str(inv), host, "-m", "ansible.builtin.ping"]
    steps = {"ping": None, **{f"{label} cuda.yml + cudnn.yml": label for label in trees}}
    for tree, env in trees.values():  # untimed: the OLD roles' first look at NEW's converge
        noop_converge(bi, inv, host, tree, env)
    times, changed = {name: [] for name in steps}, {name: [] for name in steps}
    for order in rounds_order(list(steps), args.rounds):
        for name in order:
            if steps[name] is None:
                times[name].append(bi.sh(ping, trees["NEW"][1])[0])
                continue
            took, count = noop_converge(bi, inv, host, *trees[steps[name]])
            times[name].append(took)
            changed[name].append(count)
    return times, changed


def part_noop(args, old, work):
    bi = load_bench_install()
    reason = lab_state(bi, args.no_lab)
    if reason:
        print(f"\n3. no-op converge on a lab host: SKIPPED: {reason}")
        return
    bi.sh([sys.executable, "-m", "lab", "hosts", "up", "--count", "1", "--prefix", PREFIX])
    try:
        inv, hosts = bi.inventory(work / "lab", PREFIX)
        trees = {"OLD": (old, tree_env(old, work, "lab-old")), "NEW": (ROOT, tree_env(ROOT, work, "lab-new"))}
        host = hosts[0]
        noop_converge(bi, inv, host, *trees["NEW"])  # the first converge (NEW's roles)
        times, changed = noop_rounds(bi, inv, host, trees, args)
    finally:
        if not args.keep:
            bi.sh([sys.executable, "-m", "lab", "hosts", "down", "--prefix", PREFIX])
    rows, med = timing_rows(times, 1)
    print(
        f"\n3. no-op converge cuda.yml + cudnn.yml on lab host {host} (converged by NEW), median of "
        f"{args.rounds} alternating rounds after one untimed run each (load average {os.getloadavg()[0]:.1f})"
    )
    print(table(TIMING_HEADERS[:4] + TIMING_HEADERS[5:], [r[:4] + r[5:] for r in rows]))
    for name, counts in changed.items():
        if name != "ping":
            print(f"  {name}: changed per run {counts}" + ("" if not any(counts) else " (expected 0)"))
    old_name, new_name = list(times)[1:]
    print(f"  NEW / OLD = {med[new_name] / med[old_name]:.2f}x wall; " + over_floor(med, old_name, new_name))


# ------------------------------------------------------------------------------------------------- main


def main(argv=None):
    args = parse_args(argv)
    if args.payload:
        return payload_child(args.payload, json.loads(args.payload_args))
    base = git("rev-parse", "--verify", f"{args.base}^{{commit}}")
    print(f"bench_plan: OLD {base[:12]} (--base {args.base}), NEW {new_label()} (this checkout, {ROOT})")
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-plan-") as tmp:
        work = Path(tmp)
        old = make_old_tree(base, work)
        if not (old / "plugins" / "modules" / "nvidia_cudnn_plan.py").is_file():
            sys.exit(f"bench_plan: {base[:12]} has no {OLD_PLAN}: choose a --base from before the plan moved")
        part_payload(old, ROOT, work)
        part_plan(args, old, work)
        part_noop(args, old, work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
