"""journey scenario: what README.md's commands, run as written by journey.py in a user's project, did.

The controller's side (journey/journey.json, the recorder's records, the audit's reports) is read from the
scenario's directory; the hosts' side through testinfra on each container.
"""

import json
import os
from pathlib import Path

import pytest
import readme_journey
import yaml

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
WORK = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "journey"
GPU, LOGIN = "gpufleet-journey-gpu", "gpufleet-journey-login"
# Debian's 535 userspace (molecule/driver's list): no kernel module in a container
DRIVER_PACKAGES = ["nvidia-smi", "libcuda1", "libnvidia-ml1", "nvidia-kernel-support", "nvidia-persistenced"]
REPORTS = [
    "gpufleet-audit.json",
    "gpufleet-audit.csv",
    "gpufleet-audit.md",
    "gpufleet-audit.html",
    "gpufleet.prom",
]


@pytest.fixture(scope="module")
def journey():
    return json.loads((WORK / "journey.json").read_text())


def _run(journey, section, playbook, *, with_arg=None, without_arg=None):
    """The one run of a README section's (or the journey's own) command of a playbook."""
    found = [
        r
        for r in journey["runs"]
        if r["section"] == section
        and r["playbook"] == playbook
        and (with_arg is None or with_arg in r["argv"])
        and (without_arg is None or without_arg not in r["argv"])
    ]
    assert len(found) == 1, (section, playbook, with_arg, [r["line"] for r in found])
    return found[0]


def _record(run):
    return json.loads((WORK / run["record"]).read_text())


def _plan_records(run, host, in_role=None):
    """The nvidia_plan results (phase preflight) of a host in one run: those of a role's own tasks
    (in_role=True), of the playbooks' tasks (False), or all (None)."""
    return [
        r
        for r in _record(run)["records"]
        if r["host"] == host
        and r.get("phase") == "preflight"
        and (in_role is None or bool(r["role"]) == in_role)
    ]


def _plans(run, host, in_role=None):
    """role -> (summary, errors) of the nvidia_plan results (phase preflight) of a host in one run."""
    plans = {}
    for r in _plan_records(run, host, in_role):
        # a role whose plan cannot work has errors and no plan
        for role in {**r["plans"], **r["errors"]}:
            plans[role] = ((r["plans"].get(role) or {}).get("summary"), r["errors"].get(role, []))
    return plans


def test_every_readme_command_ran_as_written(journey):
    readme = readme_journey.journey((PROJECT / "README.md").read_text())
    ran = [r for r in journey["runs"] if r["kind"] in (readme_journey.FIRST_RUN, readme_journey.MAIN_JOBS)]
    assert [r["line"] for r in ran] == [c.line for c in readme.commands if c.how == "run"]
    assert all(r["executed"] == r["line"] and r["rc"] == 0 for r in ran), ran
    assert {r["playbook"] for r in ran} >= {
        readme.playbook_name,
        "gpufleet.nvidia.site",
        "gpufleet.nvidia.preflight",
        "gpufleet.nvidia.audit",
    }
    # the user's project: README's playbook as written, README's inventory with the lab's hosts in its groups
    assert (WORK / readme.playbook_name).read_text() == readme.playbook_text
    written = yaml.safe_load((WORK / readme.inventory_name).read_text())
    assert readme_journey.groups_with_hosts(written) == {"gpu_nodes": [GPU], "login": [LOGIN]}
    assert written["all"]["vars"] == readme.inventory["all"]["vars"]
    assert set(readme_journey.groups_with_hosts(readme.inventory)) == {"gpu_nodes", "login"}


def test_what_cannot_run_in_the_lab_is_syntax_checked(journey):
    checked = [r for r in journey["runs"] if r["kind"].endswith("syntax check")]
    assert [r["playbook"] for r in checked] == ["gpufleet.nvidia.driver_upgrade"]
    assert all(r["rc"] == 0 and r["executed"].endswith(" --syntax-check") and r["why"] for r in checked)


def test_the_collection_came_from_its_tarball_alone(journey):
    build, install = journey["runs"][:2]
    assert (build["kind"], install["kind"]) == ("build", "install")
    assert install["executed"] == install["line"] and "--offline" in install["argv"]
    collections = WORK / "collections" / "ansible_collections"
    assert sorted(p.name for p in collections.iterdir()) == ["gpufleet"]
    assert (collections / "gpufleet/nvidia/MANIFEST.json").is_file()
    assert not (collections / "gpufleet/nvidia").is_symlink()
    assert (WORK / "ansible.cfg").read_text() == ""


def test_a_second_run_of_site_changes_nothing(journey):
    """README's main job `gpufleet.nvidia.site` after its first run: every host ok, nothing changed."""
    recap = _record(_run(journey, readme_journey.MAIN_JOBS, "gpufleet.nvidia.site"))["recap"]
    assert set(recap) == {GPU, LOGIN}, recap
    for host, counts in recap.items():
        assert counts["changed"] == 0 and counts["failures"] == 0 and counts["ok"] > 0, (host, counts)


def test_the_first_run_installed_on_both_hosts(journey):
    recap = _record(_run(journey, readme_journey.FIRST_RUN, "site.yml", without_arg="--check"))["recap"]
    assert recap[GPU]["changed"] > 0 and recap[LOGIN]["changed"] > 0, recap


def test_preflight_says_what_the_roles_did(journey):
    """README's preflight and README's site run (both with gpufleet_driver_hosts=gpu_nodes, on the same
    converged hosts): the same plan of every role for every host, no error in either, and the lines the
    preflight prints are its plans'."""
    preflight = _run(journey, readme_journey.MAIN_JOBS, "gpufleet.nvidia.preflight")
    site = _run(journey, readme_journey.MAIN_JOBS, "gpufleet.nvidia.site")
    expected_roles = {GPU: {"nvidia_driver", "cuda_toolkit", "cudnn"}, LOGIN: {"cuda_toolkit", "cudnn"}}
    for host, roles in expected_roles.items():
        checked = _plans(preflight, host)
        gate = _plans(site, host, in_role=False)
        own = _plans(site, host, in_role=True)
        assert set(checked) == set(gate) == set(own) == roles, (host, checked, gate, own)
        assert checked == gate == own, host
        assert all(errors == [] for _, errors in checked.values()), checked
        (planned,) = _plan_records(preflight, host)
        printed = [r["msg"] for r in _record(preflight)["records"] if r["host"] == host and "msg" in r]
        assert printed == [planned["lines"]] and planned["lines"][0].startswith("OK: "), printed
        for role, (summary, _) in checked.items():
            assert f"{role}: {summary}" in planned["lines"], (role, planned["lines"])


def test_the_login_node_says_why_it_has_no_driver(journey):
    """The journey's own commands: the driver planned on every host (the example's switch), and the driver
    role on the login node without that switch (the product's default on a host without a GPU)."""
    switched = _run(journey, "journey", "gpufleet.nvidia.preflight")
    summary, errors = _plans(switched, LOGIN)["nvidia_driver"]
    assert summary.startswith("disabled by nvidia_driver_enabled: false") and errors == [], summary
    role = _run(journey, "journey", "gpufleet.nvidia.driver")
    summary, errors = _plans(role, LOGIN, in_role=True)["nvidia_driver"]
    assert summary.startswith("no NVIDIA GPU on this host") and errors == [], summary
    recap = _record(role)["recap"]
    assert set(recap) == {LOGIN} and recap[LOGIN]["changed"] == 0, recap


def test_the_audit_reports_are_in_the_working_directory(journey):
    for run in [r for r in journey["runs"] if r["playbook"] == "gpufleet.nvidia.audit"]:
        assert run["rc"] == 0, run
    for name in REPORTS:
        assert (WORK / "reports" / name).is_file(), name
    report = json.loads((WORK / "reports/gpufleet-audit.json").read_text())
    assert sorted(h["name"] for h in report["hosts"]) == [GPU, LOGIN]
    # not inside the installed collection
    assert list((WORK / "collections").rglob("gpufleet-audit.*")) == []


def _installed_nvidia_packages(host):
    out = host.check_output("dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n'")
    return sorted(
        line.split()[1]
        for line in out.splitlines()
        # installed (the second letter), held or not: the driver role holds its packages ("hi")
        if line[1:2] == "i" and ("nvidia" in line or "libcuda" in line)
    )


def test_the_driver_is_on_the_gpu_node_only(host):
    name = host.backend.get_hostname()
    packages = _installed_nvidia_packages(host)
    conf_dir = host.file("/etc/modprobe.d")
    modprobe = conf_dir.listdir() if conf_dir.exists else []
    gpufleet_files = [f for f in modprobe if "gpufleet" in f]
    if name == LOGIN:
        assert packages == [], packages
        assert gpufleet_files == [], gpufleet_files
        assert not host.file("/etc/apt/sources.list.d/gpufleet-debian-nonfree.sources").exists
    else:
        assert set(DRIVER_PACKAGES) <= set(packages), packages
        assert "blacklist-nouveau-gpufleet.conf" in gpufleet_files, modprobe


def test_the_toolkit_on_both_and_cudnn_on_the_gpu_node(host):
    """README's site.yml installs both on both groups; inventory/example's login.yml switches cuDNN off."""
    assert host.file("/usr/local/cuda-13.0/bin/nvcc").is_file
    assert host.file("/opt/nvidia/cudnn").is_directory == (host.backend.get_hostname() == GPU)
