"""Every conditional that is a bare field of a role's plan (`when: __nvidia_driver_plan.install`) reads a
boolean, on every host shape the plans serve.

ansible-core 2.19 refuses a conditional whose result is not a boolean ("Conditionals must have a boolean
result"); 2.16-2.18 take a non-empty string as true. `when: __nvidia_driver_plan.dnf_module` (the stream,
`@nvidia-driver:580-open/default`, or None) passed every Debian run and failed the first EL-shaped one (issue
38). A bare field is only ever read on the hosts whose plans carry it, so the plans are made here for Debian,
Ubuntu and EL 9/10 identities, with and without a GPU, from every source and state, and each bare field is
checked wherever a plan has it. Conditionals with an operator, a test or a filter are Jinja's business.
"""

import itertools
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import PlanError

ROOT = Path(__file__).resolve().parents[3]
BARE = re.compile(r"^(?:not\s+)?(__(nvidia_driver|cuda_toolkit|cudnn)_plan)((?:\.[a-z0-9_]+)+)$")
# how each role's tasks name its plan: the driver's vars/main.yml binds the plan itself, cuda_toolkit and
# cudnn read the nvidia_plan action's registered result (its .plan)
PREFIX = {"nvidia_driver": "", "cuda_toolkit": ".plan", "cudnn": ".plan"}
NESTED = ("block", "rescue", "always")
FINGERPRINT = "610C7B14E068A878070DA4E99CD0A493D42D0685"
H200 = {"device_id": "0x2335", "compute_capability": "9.0", "name": "NVIDIA H200"}


def _host(distribution, version, key):
    return {
        "host": {"os": {"distribution": distribution, "version": version, "key": key}, "container": "none",
                 "kernel_release": "6.1.0-40-amd64", "machine": "x86_64"},
        "gpus": [],
        "probes": {"gpu": {"state": "ok"}},
        "driver": {},
        "owners": {"paths": {}, "alternatives": {}, "linker": {"conf": [], "providers": {}}},
        "cuda": {"toolkits": []},
        "gather_subset": ["gpu", "driver", "cuda", "owners"],
    }  # fmt: skip


HOSTS = {
    "debian12": (_host("Debian", "12", "debian12"), "Debian"),
    "ubuntu2404": (_host("Ubuntu", "24.04", "ubuntu2404"), "Debian"),
    "rocky9": (_host("Rocky", "9", "rhel9"), "RedHat"),
    "rhel10": (_host("RedHat", "10", "rhel10"), "RedHat"),
}
VARIANTS = {
    "nvidia_driver": [
        {},
        {"nvidia_driver_kernel_module": "proprietary", "nvidia_driver_branch": "570"},
        {"nvidia_driver_fabricmanager": True},
        {"nvidia_driver_source": "distro"},
        {"nvidia_driver_state": "absent"},
        {"nvidia_driver_enabled": False},
    ],
    "cuda_toolkit": [
        {},
        {"cuda_toolkit_source": "redist"},
        {"cuda_toolkit_versions": ["12.9", "13.0"]},
        {"cuda_toolkit_state": "absent"},
        {"cuda_toolkit_enabled": False},
    ],
    "cudnn": [{}, {"cudnn_source": "redist"}, {"cudnn_state": "absent"}, {"cudnn_enabled": False}],
}


def _defaults(role):
    out = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    for other, names in roles.BORROWED.get(role, {}).items():
        theirs = yaml.safe_load((ROOT / "roles" / other / "defaults" / "main.yml").read_text())
        out.update({n: theirs[n] for n in names})
    return out


def _plans(role):
    """Every plan this test can make of ``role``: host shapes x GPU or none x variants."""
    made = []
    for (facts, family), gpus, given in itertools.product(HOSTS.values(), ([], [H200]), VARIANTS[role]):
        variables = dict(_defaults(role), **given)
        variables.update({k: FINGERPRINT for k in variables if k.endswith("_repo_key_fingerprint")})
        try:
            plan, _ = roles.plan(role, variables, dict(facts, gpus=gpus), {"os_family": family})
        except PlanError:
            continue
        made.append(plan)
    return made


def _tasks(items):
    for task in items or []:
        if isinstance(task, dict):
            yield task
            for key in NESTED:
                yield from _tasks(task.get(key))


def bare_conditionals():
    """[(file, task name, role, field path)] of every bare plan-field `when` of roles/."""
    out = subprocess.run(["git", "ls-files", "roles"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = []
    for name in out.stdout.splitlines():
        if not name.endswith((".yml", ".yaml")) or "/tasks/" not in name and "/handlers/" not in name:
            continue
        for task in _tasks(yaml.safe_load((ROOT / name).read_text())):
            when = task.get("when")
            for cond in when if isinstance(when, list) else [when]:
                match = BARE.match(str(cond).strip()) if isinstance(cond, str) else None
                if match:
                    role, path = match.group(2), match.group(3)
                    prefix = PREFIX[role]
                    if not path.startswith(prefix + "."):
                        found.append((name, task.get("name"), role, "?" + path))
                        continue
                    found.append((name, task.get("name"), role, path[len(prefix) + 1 :]))
    return found


PLANS = {role: _plans(role) for role in PREFIX}


def _lookup(plan, path):
    value = plan
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return KeyError
        value = value[part]
    return value


def test_the_plans_cover_every_host_shape():
    """The EL shapes plan too (a dnf manager), else the check below proves nothing for them."""
    managers = {(p.get("repo") or {}).get("manager") for p in PLANS["cuda_toolkit"]}
    assert {"apt", "dnf"} <= managers
    assert any(p.get("pkg_mgr") == "dnf" for p in PLANS["nvidia_driver"])
    assert all(len(PLANS[role]) >= 8 for role in PLANS)


@pytest.mark.parametrize("where", bare_conditionals(), ids=lambda w: f"{w[0]}:{w[3]}")
def test_a_bare_plan_field_conditional_is_a_boolean_wherever_the_plan_has_it(where):
    name, task, role, path = where
    assert not path.startswith("?"), f"{name}: {task!r} reads __{role}_plan{path[1:]} outside its plan"
    values = [v for v in (_lookup(p, path) for p in PLANS[role]) if v is not KeyError]
    assert values, f"{name}: {task!r}: no plan of {role} has {path}"
    wrong = sorted({repr(v) for v in values if not isinstance(v, bool)})
    assert not wrong, (
        f"{name}: task {task!r} has `when: __{role}_plan{PREFIX[role]}.{path}`, "
        f"which is {', '.join(wrong[:3])}"
        " in some plans: ansible-core 2.19 refuses a non-boolean conditional (compare it or make it a bool)"
    )
