"""Imports go one way: each layer of plugins/ imports only what docs/architecture.md allows it.

Every .py under plugins/module_utils/, plugins/action/, plugins/filter/ and plugins/modules/ is parsed (ast)
and each of its
imports (top level or inside a function, relative ones resolved, ``importlib.import_module("...")`` with a
literal too) is checked against RULES: the collection's own layers it may import, plus the standard library,
plus what OUTSIDE names (ansible-core where the layer runs with it). A forbidden import fails with file, line
and the import.
plan/ also does no host I/O: it runs on the controller and decides from facts, so a call that opens, lists,
stats or runs something there (HOST_IO_CALLS, HOST_IO_MODULES) fails too.

plugins/modules/ runs on the target: a module imports probe/, install/ and kb/ only (never plan/ or report/,
which are the controller's), so target payloads carry probe/ and install/ only. The documentation stubs of the
action plugins (STUBS) import nothing but their option spec.
"""

import ast
import sys

import pytest

from tests.unit.arch.scan import ROOT, plugin_files

PLUGINS = "ansible_collections.gpufleet.nvidia.plugins"
MODULE_UTILS = PLUGINS + ".module_utils"
STDLIB = frozenset(sys.stdlib_module_names)

# layer -> the collection's layers it may import (its own included)
RULES = {
    "kb": {"kb"},
    "probe": {"kb", "probe", "openpgp"},
    "plan": {"kb", "versions", "plan"},
    "report": {"plan", "kb", "versions", "report"},
    "install": {"kb", "install", "openpgp"},
    "versions": {"versions"},
    # OpenPGP keys (armor, packets, fingerprints): shared by the target's readers (probe/sources.py) and
    # executors (install/repo.py); it imports nothing of the collection
    "openpgp": {"openpgp"},
    "action_options": {"action_options"},
    "action_common": {"action_common"},
    "action": {"plan", "report", "kb", "versions", "action_options", "action_common"},
    "filter": {"plan", "report", "kb", "versions"},
    "modules": {"probe", "install", "kb"},
}
# the modules that document an action plugin of the same name (the action does the work on the controller):
# their one import of the collection is the option spec they document
STUBS = {
    "plugins/modules/nvidia_plan.py": MODULE_UTILS + ".action_options",
    "plugins/modules/nvidia_fleet_report.py": MODULE_UTILS + ".report.options",
    "plugins/modules/nvidia_compat.py": MODULE_UTILS + ".action_options",
    "plugins/modules/nvidia_inputs.py": MODULE_UTILS + ".action_options",
}
# layer -> what else it may import besides the standard library (module prefixes: ansible-core and what it
# requires)
OUTSIDE = {
    # ansible-core's target-side helpers, shipped in every module's payload (redist: open_url for proxies
    # and CA bundles); nothing else of Ansible runs on a target
    "install": ("ansible.module_utils",),
    # controller side: ansible-core and PyYAML (one of its requirements)
    "action": ("ansible", "yaml"),
    "filter": ("ansible", "yaml"),
    # the target side: AnsibleModule and the other helpers ansible-core ships in every module's payload
    "modules": ("ansible.module_utils",),
}

# plan/ decides from facts on the controller: none of these may appear there
HOST_IO_CALLS = {"open", "io.open", "os.open", "os.fdopen", "codecs.open"}
HOST_IO_CALLS |= {
    f"os.{name}" for name in ("listdir", "scandir", "walk", "stat", "lstat", "readlink", "access")
}
HOST_IO_CALLS |= {f"os.path.{name}" for name in ("exists", "lexists", "isfile", "isdir", "islink", "ismount")}
HOST_IO_CALLS |= {f"os.path.{name}" for name in ("getsize", "getmtime", "realpath", "samefile")}
HOST_IO_MODULES = ("subprocess", "glob")


def layer_of_file(rel):
    """The layer of a file of plugins/ (``plugins/module_utils/kb/gpus.py`` -> ``kb``)."""
    parts = rel.split("/")
    if parts[1] != "module_utils":
        return parts[1]
    return parts[2][: -len(".py")] if parts[2].endswith(".py") else parts[2]


def package_of_file(rel):
    """The dotted package a file of plugins/ belongs to (for relative imports)."""
    return ".".join([PLUGINS.rsplit(".", 1)[0], *rel[: -len(".py")].split("/")[:-1]])


def _imported(node, rel):
    """(line, dotted target) of every module or name an import node brings in."""
    if isinstance(node, ast.Import):
        return [(node.lineno, alias.name) for alias in node.names]
    base = node.module or ""
    if node.level:
        package = package_of_file(rel).split(".")
        base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    return [(node.lineno, f"{base}.{alias.name}") for alias in node.names]


def imports(tree, rel):
    """(line, dotted target) of every import of a parsed file."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += _imported(node, rel)
        elif isinstance(node, ast.Call) and _dotted(node.func) in ("importlib.import_module", "__import__"):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
    return found


def target_layer(target):
    """The collection layer a dotted import target is in, or None when it is not the collection's."""
    if target.startswith(MODULE_UTILS + "."):
        return target[len(MODULE_UTILS) + 1 :].split(".")[0]
    if target == MODULE_UTILS:
        return "module_utils"
    if target.startswith(PLUGINS + "."):
        return target[len(PLUGINS) + 1 :].split(".")[0]
    if target.startswith("ansible_collections.gpufleet."):
        return "gpufleet"
    return None


def allowed(layer):
    """What a layer may import, as the message says it."""
    return ", ".join(["stdlib", *sorted(RULES[layer]), *OUTSIDE.get(layer, ())])


def forbidden_stub_import(rel, target):
    """Why the documentation stub ``rel`` may not import ``target``, or None when it may."""
    spec = STUBS[rel]
    if target == spec or target.startswith(spec + "."):
        return None
    if target_layer(target) is not None:
        return f"{rel} may not import {target}: a documentation stub imports only {spec} of the collection"
    return forbidden_import("modules", target)


def forbidden_import(layer, target):
    """Why ``layer`` may not import ``target``, or None when it may."""
    ours = target_layer(target)
    if ours is not None:
        return None if ours in RULES[layer] else f"{layer} may not import {target} (layer {ours})"
    if target.split(".")[0] in STDLIB:
        return None
    if any(target == p or target.startswith(p + ".") for p in OUTSIDE.get(layer, ())):
        return None
    return f"{layer} may not import {target} (not the standard library)"


def _dotted(node):
    """``os.path.exists`` for that attribute chain, ``open`` for a name; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _aliases(tree):
    """{local name: dotted name} of the file's absolute imports (``import os.path as p``: p -> os.path)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                names[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def host_io(tree):
    """(line, what) of every host read or command of a parsed file (imports of HOST_IO_MODULES included)."""
    names = _aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            targets = []
        found += [(node.lineno, f"imports {t}") for t in targets if t.split(".")[0] in HOST_IO_MODULES]
        dotted = _dotted(node.func) if isinstance(node, ast.Call) else None
        if dotted:
            head, _sep, rest = dotted.partition(".")
            full = names.get(head, head) + ("." + rest if rest else "")
            if full in HOST_IO_CALLS or full.split(".")[0] in HOST_IO_MODULES:
                found.append((node.lineno, f"calls {full}()"))
    return found


def violations(path, rel):
    """Every forbidden import of one file, and for plan/ every host I/O: ``file:line: ...`` lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    layer = layer_of_file(rel)
    found = []
    for line, target in imports(tree, rel):
        why = forbidden_stub_import(rel, target) if rel in STUBS else forbidden_import(layer, target)
        if why:
            words = f"stdlib, ansible.module_utils, {STUBS[rel]}" if rel in STUBS else allowed(layer)
            found.append((line, f"{why}; allowed: {words}"))
    if layer == "plan":
        found += [(line, f"plan/ does no host I/O: {what}") for line, what in host_io(tree)]
    return [f"{rel}:{line}: {text}" for line, text in sorted(found)]


@pytest.mark.parametrize("path", plugin_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layers(path):
    rel = str(path.relative_to(ROOT))
    assert violations(path, rel) == []


def test_the_stubs_are_the_modules_of_action_plugins():
    """Every action plugin documents itself in a stub of STUBS; the stubs are exactly those."""
    actions = {f"plugins/modules/{p.name}" for p in (ROOT / "plugins" / "action").glob("*.py")}
    assert actions == set(STUBS)


def test_every_layer_has_a_rule():
    """A new folder of module_utils (or a new top-level module) needs its line in RULES first."""
    layers = {layer_of_file(str(p.relative_to(ROOT))) for p in plugin_files()}
    assert layers <= set(RULES), sorted(layers - set(RULES))
    assert {"kb", "probe", "plan", "report", "install", "versions", "action", "filter"} <= layers


# ------------------------------------------------------------------ the check catches what it must
MU = MODULE_UTILS
P = "plugins/module_utils/"
BREACHES = {
    (P + "probe/gpu.py", "probe_imports_plan"): f"from {MU}.plan import gpus as _kb_gpus\n",
    (P + "kb/gpus.py", "kb_imports_versions"): f"from {MU}.versions import parse_version\n",
    (P + "kb/gpus.py", "kb_imports_the_probe_package"): f"from {MU} import probe\n",
    (P + "kb/new.py", "kb_imports_a_third_party"): "import yaml\n",
    (P + "plan/new.py", "plan_imports_probe"): f"import {MU}.probe.facts\n",
    (P + "plan/new.py", "plan_imports_report"): f"from {MU}.report.findings import finding\n",
    (P + "plan/new.py", "plan_imports_install"): f"from {MU}.install import redist\n",
    (P + "plan/new.py", "plan_imports_probe_relatively"): "from ..probe import gpu\n",
    (P + "plan/new.py", "plan_imports_a_module"): f"from {PLUGINS}.modules import nvidia_facts\n",
    (P + "plan/new.py", "plan_imports_ansible"): "from ansible.module_utils.basic import AnsibleModule\n",
    (
        P + "plan/new.py",
        "plan_imports_dynamically",
    ): f"import importlib\nM = importlib.import_module('{MU}.probe')\n",
    (P + "report/new.py", "report_imports_probe"): f"def f():\n    from {MU}.probe.facts import gather\n",
    (P + "install/new.py", "install_imports_plan"): f"from {MU}.plan import redist\n",
    (P + "probe/new.py", "probe_imports_report"): f"from {MU}.report import rows\n",
    (P + "versions.py", "versions_imports_kb"): f"from {MU}.kb import arch\n",
    (P + "openpgp.py", "openpgp_imports_kb"): f"from {MU}.kb import gpufleet\n",
    (P + "plan/new.py", "plan_imports_openpgp"): f"from {MU} import openpgp\n",
    ("plugins/action/new.py", "action_imports_probe"): f"from {MU}.probe.facts import SUBSETS\n",
    ("plugins/filter/new.py", "filter_imports_probe"): f"from {MU}.probe import gpu\n",
    ("plugins/filter/new.py", "filter_imports_install"): f"from {MU}.install.redist import fetch\n",
    ("plugins/modules/new.py", "module_imports_plan"): f"from {MU}.plan import repo as repo_plan\n",
    (
        "plugins/modules/new.py",
        "module_imports_plan_in_a_function",
    ): f"def f():\n    from {MU}.plan import stack\n",
    ("plugins/modules/new.py", "module_imports_report"): f"from {MU}.report.findings import finding\n",
    ("plugins/modules/new.py", "module_imports_versions"): f"from {MU}.versions import parse_version\n",
    (
        "plugins/modules/new.py",
        "module_imports_an_action_spec",
    ): f"from {MU}.action_options import NVIDIA_PLAN\n",
    (
        "plugins/modules/new.py",
        "module_imports_the_controller",
    ): "from ansible.plugins.action import ActionBase\n",
    ("plugins/modules/nvidia_plan.py", "stub_imports_plan"): f"from {MU}.plan import roles\n",
    ("plugins/modules/nvidia_plan.py", "stub_imports_probe"): f"from {MU}.probe.facts import gather\n",
    ("plugins/modules/nvidia_fleet_report.py", "stub_imports_report"): f"from {MU}.report import build\n",
}
PLAN_HOST_IO = {
    "open": "def f(path):\n    with open(path) as handle:\n        return handle.read()\n",
    "io_open": 'import io\nT = io.open("/etc/os-release").read()\n',
    "exists": 'import os\nE = os.path.exists("/usr/local/cuda")\n',
    "isdir_alias": 'import os.path as osp\nD = osp.isdir("/opt")\n',
    "isfile_from": 'from os.path import isfile\nF = isfile("/etc/ld.so.cache")\n',
    "listdir": 'import os\nL = os.listdir("/usr/local")\n',
    "scandir_from": 'from os import scandir\nS = list(scandir("/usr/local"))\n',
    "subprocess": 'import subprocess\nR = subprocess.run(["nvidia-smi"], check=False)\n',
    "glob": 'import glob\nG = glob.glob("/usr/local/cuda-*")\n',
    "glob_from": 'from glob import glob\nG = glob("/usr/local/cuda-*")\n',
}


@pytest.mark.parametrize(("rel", "name"), sorted(BREACHES), ids=[n for _r, n in sorted(BREACHES)])
def test_a_forbidden_import_is_caught(tmp_path, rel, name):
    path = tmp_path / "breach.py"
    path.write_text(BREACHES[(rel, name)])
    found = violations(path, rel)
    assert len(found) == 1, (name, found)
    assert found[0].startswith(f"{rel}:"), found
    assert " may not import " in found[0]


def test_the_message_names_file_line_and_import(tmp_path):
    path = tmp_path / "gpu.py"
    path.write_text(f"import re\n\nfrom {MU}.plan import gpus\n")
    assert violations(path, "plugins/module_utils/probe/gpu.py") == [
        f"plugins/module_utils/probe/gpu.py:3: probe may not import {MU}.plan.gpus (layer plan); "
        "allowed: stdlib, kb, openpgp, probe"
    ]
    path.write_text("import yaml\n")
    assert violations(path, "plugins/module_utils/install/x.py") == [
        "plugins/module_utils/install/x.py:1: install may not import yaml (not the standard library); "
        "allowed: stdlib, install, kb, openpgp, ansible.module_utils"
    ]


@pytest.mark.parametrize("name", sorted(PLAN_HOST_IO))
def test_host_io_in_plan_is_caught(tmp_path, name):
    path = tmp_path / "new.py"
    path.write_text(PLAN_HOST_IO[name])
    found = violations(path, "plugins/module_utils/plan/new.py")
    assert found, name
    assert all("plan/ does no host I/O" in f for f in found), found
    # the same code is no breach of the layers elsewhere: report/ merges files on the controller
    assert violations(path, "plugins/module_utils/report/new.py") == []


def test_allowed_imports_and_pure_path_helpers_pass(tmp_path):
    path = tmp_path / "fine.py"
    path.write_text(
        "from __future__ import annotations\n"
        "import os\nimport re\n"
        f"from {MU}.kb import arch as kb_arch\n"
        f"from {MU}.kb.gpus import resolve_gpu\n"
        f"from {MU}.versions import parse_version\n"
        f"from {MU}.plan import compat\n"
        "from . import stack\n"
        "D = os.path.dirname(os.path.normpath('/usr/local/cuda-13.0/bin'))\n"
        "def f(handle):\n    return handle.open()\n"
    )
    assert violations(path, "plugins/module_utils/plan/new.py") == []
    assert violations(path, "plugins/module_utils/report/new.py") == []
    path.write_text("from ansible.module_utils.urls import open_url\nimport socket\n")
    assert violations(path, "plugins/module_utils/install/new.py") == []
    path.write_text(f"from ansible.errors import AnsibleFilterError\nfrom {MU}.kb.facts import SUBSETS\n")
    assert violations(path, "plugins/filter/new.py") == []
    assert violations(path, "plugins/action/new.py") == []
    path.write_text(
        "from ansible.module_utils.basic import AnsibleModule\n"
        f"from {MU}.install import repo as install_repo\n"
        f"from {MU}.probe import packages\nfrom {MU}.kb.gpufleet import HOST_CACHE\n"
    )
    assert violations(path, "plugins/modules/new.py") == []
    path.write_text(
        f"from ansible.module_utils.basic import AnsibleModule\nfrom {MU}.action_options import NVIDIA_PLAN\n"
    )
    assert violations(path, "plugins/modules/nvidia_plan.py") == []
    path.write_text(f"from {MU}.report.options import ARGUMENT_SPEC\n")
    assert violations(path, "plugins/modules/nvidia_fleet_report.py") == []
