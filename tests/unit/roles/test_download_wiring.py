"""Issue 36: the roles' downloads and package manager runs take the role's proxies and CA bundle.

Every task of the roles (and of the internal role they include) that may reach a server - nvidia_redist,
nvidia_repo, apt, dnf, package, a dnf command - runs with the plan's ``download.environment`` (its own
``environment:`` or its block's), and gpufleet's own fetches (nvidia_redist, nvidia_repo's key) get the plan's
``download.ca_path``. apt with ``state: absent`` and no index refresh fetches nothing and may go without. The
values come from the plan (plan/downloads.py), never from the variables in Jinja: one decision, one place.
The same wiring run end to end through a local proxy: tests/unit/roles/test_download_proxy.py.
"""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PLANS = {
    "nvidia_driver": "__nvidia_driver_plan.download",
    "cuda_toolkit": "__cuda_toolkit_plan.plan.download",
    "cudnn": "__cudnn_plan.plan.download",
}
EXPECTED = {role: (f"{{{{ {p}.environment }}}}", f"{{{{ {p}.ca_path }}}}") for role, p in PLANS.items()}
EXPECTED["internal"] = ("{{ internal_environment }}", "{{ internal_ca_path }}")
FETCHERS = {"gpufleet.nvidia.nvidia_redist", "gpufleet.nvidia.nvidia_repo"}
PACKAGE_MANAGERS = {"ansible.builtin.apt", "ansible.builtin.dnf", "ansible.builtin.package"}
INTERNAL = "gpufleet.nvidia.internal"


def tasks(nodes, environment=None):
    """(task, the environment it runs with) of every task, blocks walked (a block's environment inherited)."""
    for node in nodes or []:
        env = node.get("environment", environment)
        if "block" in node:
            for key in ("block", "rescue", "always"):
                yield from tasks(node.get(key), env)
        else:
            yield node, env


def action(task):
    return next((k for k in task if k.startswith(("ansible.builtin.", "gpufleet.nvidia."))), None)


def reaches_a_server(task):
    """The task may fetch: a fetching module, a package manager (apt removing alone fetches nothing), dnf."""
    name = action(task)
    args = task.get(name) or {}
    if name in FETCHERS:
        return True
    if name == "ansible.builtin.apt":
        return args.get("state") != "absent" or bool(args.get("update_cache"))
    if name in PACKAGE_MANAGERS:
        return True
    if name == "ansible.builtin.command":
        argv = args.get("argv") if isinstance(args, dict) else None
        return "dnf" in str(argv if argv is not None else args)
    return False


def wiring_errors(role, path):
    """What is not wired in one task file: ``<file>: <task>: <what>``."""
    env_expr, ca_expr = EXPECTED[role]
    errors = []
    for task, env in tasks(yaml.safe_load(path.read_text())):
        where = f"{path.relative_to(path.parents[2])}: {task.get('name')}"
        name = action(task)
        args = task.get(name) if isinstance(task.get(name), dict) else {}
        if reaches_a_server(task) and env != env_expr:
            errors.append(f"{where}: environment is {env!r}, not {env_expr!r}")
        fetches = name in FETCHERS and args.get("state", "present") in ("present", "downloaded", "planned")
        if fetches and args.get("ca_path") != ca_expr:
            errors.append(f"{where}: ca_path is {args.get('ca_path')!r}, not {ca_expr!r}")
        if name == "ansible.builtin.include_role" and args.get("name") == INTERNAL:
            errors += _internal_vars(where, args.get("tasks_from"), task.get("vars") or {}, env_expr, ca_expr)
    return errors


def _internal_vars(where, entry, given, env_expr, ca_expr):
    """The internal role's entry points that download get the caller's plan's settings as their variables."""
    wanted = {
        "repository.yml": {"internal_environment": env_expr, "internal_ca_path": ca_expr},
        "host_compiler.yml": {"internal_environment": env_expr},
    }.get(entry, {})
    return [f"{where}: {name} is {given.get(name)!r}, not {value!r}" for name, value in wanted.items()
            if given.get(name) != value]  # fmt: skip


FILES = [
    (role, path) for role in EXPECTED for path in sorted((ROOT / "roles" / role / "tasks").glob("*.yml"))
]


@pytest.mark.parametrize(("role", "path"), FILES, ids=[str(p.relative_to(ROOT)) for _r, p in FILES])
def test_every_download_and_package_manager_run_takes_the_roles_proxies_and_ca(role, path):
    assert wiring_errors(role, path) == []


def test_the_scan_sees_the_tasks_that_download():
    """The scan is not vacuous: it finds the roles' fetching and package manager tasks, blocks included."""
    found = dict.fromkeys(EXPECTED, 0)
    for role, path in FILES:
        found[role] += sum(
            1 for task, _env in tasks(yaml.safe_load(path.read_text())) if reaches_a_server(task)
        )
    assert found["nvidia_driver"] >= 10, found  # the apt and dnf blocks, versionlocks, the index refresh
    assert found["cuda_toolkit"] >= 6, found  # redist preflight (2), install, nvidia_repo, apt, dnf, distro
    assert found["cudnn"] >= 7, found
    assert found["internal"] >= 4, found  # nvidia_repo, dnf metadata, apt and dnf host compiler


def test_the_check_would_catch_a_task_without_them(tmp_path):
    tasks_dir = tmp_path / "roles" / "cudnn" / "tasks"
    tasks_dir.mkdir(parents=True)
    bad = tasks_dir / "install.yml"
    bad.write_text(
        "- name: A fetch without the proxies\n"
        "  gpufleet.nvidia.nvidia_redist:\n"
        "    product: cudnn\n"
        "- name: A block\n"
        '  environment: "{{ cudnn_https_proxy }}"\n'  # the variable itself, not the plan's decision
        "  block:\n"
        "    - name: dnf inside\n"
        "      ansible.builtin.command:\n"
        "        argv: [dnf, versionlock, add, x]\n"
        "- name: apt removing fetches nothing\n"
        "  ansible.builtin.apt:\n"
        "    name: x\n"
        "    state: absent\n"
        "- name: Internal repository without the settings\n"
        "  ansible.builtin.include_role:\n"
        "    name: gpufleet.nvidia.internal\n"
        "    tasks_from: repository.yml\n"
    )
    found = wiring_errors("cudnn", bad)
    assert len(found) == 5, found
    assert sum(": environment is None" in f for f in found) == 1, found
    assert sum(": ca_path is None" in f for f in found) == 1, found
    assert sum("cudnn_https_proxy" in f for f in found) == 1, found
    assert sum("internal_environment" in f for f in found) == 1, found
    assert sum("internal_ca_path" in f for f in found) == 1, found
