"""bench/bench_plan.py's pure helpers, offline and lab-free: arguments, payload inspection, the plays it
writes, the tables, the order of the rounds, when part 3 is skipped; and that `make bench` and
bench/README.md name every bench script."""

import base64
import importlib.util
import io
import re
import subprocess
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
C = "ansible_collections/gpufleet/nvidia/plugins/"


def _load():
    spec = importlib.util.spec_from_file_location("bench_plan", ROOT / "bench" / "bench_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_plan = _load()


def test_defaults_and_limits():
    args = bench_plan.parse_args([])
    assert (args.base, args.hosts, args.rounds, args.tree) == ("6a1778b", 10, 3, "h200")
    assert not args.no_lab and not args.keep and args.payload is None
    args = bench_plan.parse_args(["--hosts", "2", "--rounds", "1", "--tree", "bare", "--no-lab"])
    assert (args.hosts, args.rounds, args.tree, args.no_lab) == (2, 1, "bare", True)
    for bad in (["--hosts", "0"], ["--rounds", "0"], ["--tree", "rhel"]):
        with pytest.raises(SystemExit):
            bench_plan.parse_args(bad)


def _wrapper(names):
    """An AnsiballZ-like wrapper: the zip of ``names`` (each holding its own name) as ``zip_data=``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            zf.writestr(name, name * 10)
    data = base64.b64encode(buf.getvalue()).decode()
    return (
        f"#!/usr/bin/python\ndef _ansiballz_main(): pass\n_ansiballz_main(\nzip_data='{data}',\n)\n".encode()
    )


NAMES = [
    "ansible/__init__.py",
    "ansible/module_utils/basic.py",
    "ansible_collections/__init__.py",
    C + "module_utils/__init__.py",
    C + "module_utils/probe/facts.py",
    C + "module_utils/probe/gpu.py",
    C + "module_utils/plan/gpus.py",
    C + "module_utils/versions.py",
    C + "modules/nvidia_facts.py",
]


def test_payload_files_reads_the_zip_the_wrapper_carries():
    files = bench_plan.payload_files(_wrapper(NAMES))
    assert [name for name, _ in files] == NAMES
    assert all(size > 0 for _, size in files)
    with pytest.raises(ValueError, match="zip_data"):
        bench_plan.payload_files(b"#!/usr/bin/python\nprint('no payload')\n")


def test_payload_groups_name_the_module_utils_packages():
    groups = bench_plan.payload_groups([(name, 10) for name in NAMES])
    assert groups == {
        "ansible.module_utils": (2, 20),
        "(namespace __init__)": (2, 20),
        "probe/": (2, 20),
        "plan/": (1, 10),
        "versions.py": (1, 10),
        "modules/": (1, 10),
    }


def test_payload_rows_put_the_packages_in_order_and_mark_what_a_payload_lacks():
    new = [(n, 1024) for n in NAMES if "/plan/" not in n]
    payloads = {
        "old": {"bytes": 2000, "files": [(n, 1024) for n in NAMES]},
        "new": {"bytes": 1500, "files": new},
        "absent": None,
    }
    rows = bench_plan.payload_rows(payloads)
    assert rows[0] == ("AnsiballZ payload, bytes", "2,000", "1,500", "-")
    assert [r[0].strip() for r in rows[1:]] == [
        "ansible.module_utils",
        "plan/",
        "probe/",
        "versions.py",
        "modules/",
        "(namespace __init__)",
    ]
    assert rows[2] == ("  plan/", "1 / 1.0", "-", "-")


def test_table_aligns_columns():
    text = bench_plan.table(("", "s"), [("ping", "1.00"), ("a longer name", "12.50")])
    lines = text.splitlines()
    assert lines[0] == "                   s"
    assert lines[1] == "-------------  -----"
    assert lines[2] == "ping            1.00"
    assert lines[3] == "a longer name  12.50"


def test_rounds_alternate_the_order():
    assert bench_plan.rounds_order(["ping", "old", "new"], 3) == [
        ["ping", "old", "new"],
        ["new", "old", "ping"],
        ["ping", "old", "new"],
    ]


def test_timing_rows_are_medians_per_host_and_against_ping():
    times = {"ping": [1.0, 3.0, 2.0], "old": [6.0, 5.0, 7.0], "new": [3.0, 2.5, 4.0]}
    rows, med = bench_plan.timing_rows(times, 2)
    assert med == {"ping": 2.0, "old": 6.0, "new": 3.0}
    assert rows[1] == ("old", "6.00", "3.000", "3.00x", "+2.000", "6.00 5.00 7.00")
    assert rows[0][3:5] == ("1.00x", "+0.000")
    assert bench_plan.over_floor(med, "old", "new") == "above the ping floor 0.25x"
    assert "not above" in bench_plan.over_floor({"ping": 2.0, "old": 2.0, "new": 1.0}, "old", "new")


PREFLIGHT = [
    {"name": "facts", "gpufleet.nvidia.nvidia_facts": {"gather_subset": ["gpu"]}, "register": "__f"},
    {
        "name": "plan",
        "gpufleet.nvidia.nvidia_cudnn_plan": {"facts": "{{ __f.ansible_facts.nvidia }}", "machine": "x"},
        "register": "__p",
    },
    {"name": "later", "ansible.builtin.debug": {"msg": "not part of the plan step"}},
]


def test_old_play_is_the_base_preflights_facts_and_plan_tasks():
    play = bench_plan.old_play(PREFLIGHT, {"cudnn_version": "9.14.0", "cudnn_cuda_major": ""})[0]
    assert play["gather_facts"] is False and play["hosts"] == "all"
    assert [t["name"] for t in play["tasks"]] == ["facts", "plan"]
    assert play["tasks"][0][bench_plan.FACTS] == {"gather_subset": ["gpu"], "root": "{{ fake_root }}"}
    plan = play["tasks"][1][bench_plan.OLD_PLAN]
    assert (plan["machine"], plan["os_family"]) == ("x86_64", "Debian")
    assert play["vars"] == {"cudnn_version": "9.14.0", **bench_plan.PLAN_VARS}
    assert PREFLIGHT[0][bench_plan.FACTS] == {"gather_subset": ["gpu"]}  # the input is left as it was
    with pytest.raises(ValueError, match="no gpufleet.nvidia.nvidia_facts task"):
        bench_plan.old_play(PREFLIGHT[1:], {})


def test_old_play_from_the_default_base():
    found = subprocess.run(
        ["git", "show", "6a1778b:roles/cudnn/tasks/preflight.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        pytest.skip("the default base commit is not in this clone")
    tasks = bench_plan.old_play(yaml.safe_load(found.stdout), {})[0]["tasks"]
    assert [next(k for k in t if k.startswith("gpufleet.")) for t in tasks] == [
        bench_plan.FACTS,
        bench_plan.OLD_PLAN,
    ]
    assert tasks[0][bench_plan.FACTS]["owner_paths"] == ["{{ cudnn_prefix }}"]


def test_new_play_and_facts_play():
    new = bench_plan.new_play()[0]
    assert new["tasks"][0][bench_plan.NEW_PLAN] == {"role": "cudnn", "root": "{{ fake_root }}"}
    assert new["vars"] == bench_plan.PLAN_VARS and new["gather_facts"] is False
    facts = bench_plan.facts_play(bench_plan.old_play(PREFLIGHT, {}), Path("/tmp/f.json"))[0]
    assert facts["hosts"] == "plan000"
    copy = facts["tasks"][1]["ansible.builtin.copy"]
    assert copy["content"] == "{{ __f.ansible_facts.nvidia | to_json }}" and copy["dest"] == "/tmp/f.json"


def test_lab_skip_reasons(tmp_path):
    archive = "cudnn/a.tar.xz"
    mirror = tmp_path / "mirror"
    running = ("running", [str(mirror)])
    assert bench_plan.lab_skip_reason(True, True, mirror, archive, running) == "--no-lab"
    assert "docker does not answer" in bench_plan.lab_skip_reason(False, False, mirror, archive, running)
    assert "has no cudnn/a.tar.xz" in bench_plan.lab_skip_reason(False, True, mirror, archive, running)
    (mirror / "cudnn").mkdir(parents=True)
    (mirror / archive).write_text("x")
    assert "not running" in bench_plan.lab_skip_reason(False, True, mirror, archive, None)
    assert "not running" in bench_plan.lab_skip_reason(
        False, True, mirror, archive, ("exited", [str(mirror)])
    )
    other = ("running", ["/elsewhere/.lab/mirror"])
    assert "another mirror" in bench_plan.lab_skip_reason(False, True, mirror, archive, other)
    assert bench_plan.lab_skip_reason(False, True, mirror, archive, running) is None


def _fake_bench_install(calls):
    def playbook(inv, path, limit, env, *extra):
        calls.append(("playbook", Path(path).parent.parent.name, Path(path).name))
        return 1.0, 0 if Path(path).parent.parent.name == "new" else 1

    def sh(cmd, env=None, check=True):
        calls.append(("sh", cmd[-1]))
        return 0.5, ""

    return SimpleNamespace(playbook=playbook, sh=sh)


def test_noop_rounds_alternate_and_count_changes(tmp_path):
    calls = []
    trees = {"OLD": (tmp_path / "old", {}), "NEW": (tmp_path / "new", {})}
    args = SimpleNamespace(rounds=2)
    times, changed = bench_plan.noop_rounds(_fake_bench_install(calls), "inv", "h", trees, args)
    assert times == {
        "ping": [0.5, 0.5],
        "OLD cuda.yml + cudnn.yml": [2.0, 2.0],
        "NEW cuda.yml + cudnn.yml": [2.0, 2.0],
    }
    assert changed == {"ping": [], "OLD cuda.yml + cudnn.yml": [2, 2], "NEW cuda.yml + cudnn.yml": [0, 0]}
    steps = [c[1] if c[0] == "playbook" else "ping" for c in calls if c[0] == "sh" or c[2] == "cuda.yml"]
    # one untimed run of each tree, then round 1 in order, round 2 reversed
    assert steps == ["old", "new", "ping", "old", "new", "new", "old", "ping"]


def test_part_noop_skips_with_a_line_when_told(monkeypatch, capsys, tmp_path):
    fake = SimpleNamespace(
        ARCHIVE="cudnn/a.tar.xz",
        lab_serve=SimpleNamespace(mirror_dir=lambda: tmp_path),
        lab_engine=SimpleNamespace(docker_answers=lambda: pytest.fail("docker asked under --no-lab")),
    )
    monkeypatch.setattr(bench_plan, "load_bench_install", lambda: fake)
    bench_plan.part_noop(SimpleNamespace(no_lab=True), tmp_path, tmp_path)
    assert "3. no-op converge on a lab host: SKIPPED: --no-lab" in capsys.readouterr().out


def test_make_bench_and_the_docs_name_every_bench_script():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    docs = (ROOT / "bench" / "README.md").read_text().split("## `make bench`", 1)[1].split("\n## ", 1)[0]
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        assert f"bench/{script.name}" in recipe, f"make bench does not run bench/{script.name}"
        lacks = f"bench/README.md's make bench table lacks bench/{script.name}"
        assert f"`bench/{script.name}" in docs, lacks
