"""Every documented tag of cuda_toolkit and cudnn runs its phase's tasks (issue 11: include_tasks lost them).

Runs playbooks/cuda.yml, playbooks/cudnn.yml and playbooks/site.yml as a user does, with --tags, against this
machine in check mode (nothing changes), the redist base URLs pointing at the manifests in
tests/data/redist/mirror (check mode reads a manifest, fetches no archive). Asserts which tasks ran.

Run: .venv/bin/pytest tests/integration/test_provisioning_tags.py
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.playbook import ROOT, run

MIRROR = f"file://{ROOT}/tests/data/redist/mirror"
BASE = {
    "ansible_become": False,  # this machine, as the user running the tests; check mode writes nothing
    # the redist path, from the manifests of tests/data/redist/mirror (the roles' default is nvidia_repo)
    "cuda_toolkit_source": "redist",
    "cudnn_source": "redist",
    "cuda_toolkit_redist_base_url": MIRROR,
    "cudnn_redist_base_url": MIRROR,
    "cudnn_cuda_major": "13",
    # this machine may carry a /usr/local/cuda-13.0 that gpufleet did not install: plan the replacement
    # (with a backup) so that every phase runs; check mode changes nothing
    "cuda_toolkit_existing": "replace",
}
NVIDIA_REPO = {
    "cuda_toolkit_source": "nvidia_repo",
    "cudnn_source": "nvidia_repo",
    "cuda_toolkit_repo_use_existing": True,
    "cudnn_repo_use_existing": True,
}
# one task of each phase that runs on this machine in check mode
CUDA, CUDNN, INTERNAL = (
    "gpufleet.nvidia.cuda_toolkit : ",
    "gpufleet.nvidia.cudnn : ",
    "gpufleet.nvidia.internal : ",
)
MARKERS = {
    "cuda_toolkit": {
        "preflight": CUDA
        + "Preflight | Plan (variables, the host's facts, compatibility, owners; no network)",
        "sources": INTERNAL + "Repository | Use the host's existing NVIDIA repositories",
        "install": CUDA + "Install | Toolkits /usr/local/cuda-X.Y (verified, unpacked to a staging tree, "
        "renamed into place)",
        "configure": CUDA + "Configure | PATH to the default toolkit (/etc/profile.d)",
        "verify": CUDA + "Verify | What is verified",
    },
    "cudnn": {
        "preflight": CUDNN
        + "Preflight | Plan (variables, the host's facts, compatibility, owners; no network)",
        "sources": INTERNAL + "Repository | Use the host's existing NVIDIA repositories",
        "install": CUDNN + "Install | cuDNN trees (verified, atomic; switch current-cuda<M>; keep "
        "cudnn_keep_versions older)",
        "configure": CUDNN + "Configure | Main build's libraries in the dynamic linker cache",
        "verify": CUDNN + "Verify | What is verified",
    },
}
PLAYBOOKS = {"cuda_toolkit": "playbooks/cuda.yml", "cudnn": "playbooks/cudnn.yml"}
PHASES = ("preflight", "sources", "install", "configure", "verify")
# (role, tag, phases expected to run); sources runs with the nvidia_repo source (redist has no sources phase)
CASES = [(role, role, ("preflight", "install", "configure", "verify")) for role in MARKERS] + [
    (role, f"{role}_{phase}", ("preflight", phase) if phase != "preflight" else ("preflight",))
    for role in MARKERS
    for phase in PHASES
]


def _command(tmp_path_factory, role, tag):
    """(tmp dir, playbook, extra vars, tag) of one run; the directories are made here, before the threads."""
    if role == "site":
        return tmp_path_factory.mktemp("site"), ROOT / "playbooks/site.yml", BASE, tag
    extra = dict(BASE, **(NVIDIA_REPO if tag.endswith("_sources") else {}))
    return tmp_path_factory.mktemp(tag), ROOT / PLAYBOOKS[role], extra, tag


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """All the runs at once (each is a separate ansible-playbook on this machine)."""
    assert (ROOT / ".venv/bin/ansible-playbook").exists(), "run `make venv` first"
    keys = [(role, tag) for role, tag, _ in CASES] + [("site", "cudnn")]
    commands = {key: _command(tmp_path_factory, *key) for key in keys}
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {
            key: pool.submit(run, tmp, playbook, extra, tags=tag, check=True, timeout=300)
            for key, (tmp, playbook, extra, tag) in commands.items()
        }
        return {key: future.result() for key, future in futures.items()}


def named(ran):
    """The task names without what the plan fills in after ': ' (the install tasks say what they install)."""
    return [n.split("): ", 1)[0] + ")" if "): " in n else n for n in ran]


@pytest.mark.parametrize(("role", "tag", "phases"), CASES, ids=[c[1] for c in CASES])
def test_each_documented_tag_runs_its_phase(runs, role, tag, phases):
    result = runs[(role, tag)]
    assert result.rc == 0, result.text[-3000:]
    ran = named(result.tasks("localhost"))
    for phase in PHASES:
        marker = MARKERS[role][phase]
        if phase in phases:
            assert marker in ran, f"--tags {tag}: {phase} did not run ({marker!r}); ran: {ran}"
        else:
            assert marker not in ran, f"--tags {tag}: {phase} ran ({marker!r})"


def test_site_tags_cudnn_runs_every_cudnn_phase_and_nothing_else(runs):
    """The issue's command: `site.yml --tags cudnn` ran only cudnn's preflight."""
    result = runs[("site", "cudnn")]
    assert result.rc == 0, result.text[-3000:]
    ran = named(result.tasks("localhost"))
    for phase in ("preflight", "install", "configure", "verify"):
        assert MARKERS["cudnn"][phase] in ran, (phase, ran)
    assert MARKERS["cuda_toolkit"]["preflight"] not in ran
    assert MARKERS["cuda_toolkit"]["install"] not in ran


def test_the_install_tasks_say_what_they_install(runs):
    """Issue 37: a long install names what it downloads and installs (the plan's words, not Jinja's)."""
    ran = runs[("cuda_toolkit", "cuda_toolkit_install")].tasks("localhost")
    assert MARKERS["cuda_toolkit"]["install"] + ": CUDA 13.0.2 (toolkit) into " in " ".join(ran), ran
    ran = runs[("cudnn", "cudnn_install")].tasks("localhost")
    cudnn = ": cuDNN 9.14.0 for CUDA 13 (cudnn) under /opt/nvidia/cudnn"
    assert MARKERS["cudnn"]["install"] + cudnn in ran, ran
