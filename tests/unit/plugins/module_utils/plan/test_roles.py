"""plan/roles.py: a role's plan from its own variables (its defaults file, as the nvidia_plan action reads
them) and one host's facts."""

from pathlib import Path

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import PlanError

ROLES = Path(__file__).resolve().parents[5] / "roles"
DEBIAN12 = {
    "host": {"os": {"distribution": "Debian", "version": "12", "key": "debian12"}, "container": "none",
             "kernel_release": "6.1.0-40-amd64", "machine": "x86_64"},
    "gpus": [],
    "probes": {"gpu": {"state": "ok"}},
    "driver": {},
    "owners": {"paths": {}, "alternatives": {}, "linker": {"conf": [], "providers": {}}},
    "cuda": {"toolkits": []},
    "gather_subset": ["gpu", "driver", "cuda", "owners"],
}  # fmt: skip


H200 = {"device_id": "0x2335", "compute_capability": "9.0", "name": "NVIDIA H200"}


def defaults(role, **given):
    """The role's variables as the action resolves them with nothing set: its defaults file."""
    out = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    for other, names in roles.BORROWED.get(role, {}).items():
        theirs = yaml.safe_load((ROLES / other / "defaults" / "main.yml").read_text())
        out.update({n: theirs[n] for n in names})
    out.update(given)
    return out


def test_with_nothing_set_the_plans_are_the_default_stack():
    """driver 580 + CUDA 13.0 + cuDNN 9.14 for CUDA 13: the roles' defaults, read from their files only (the
    driver on a GPU host: DEBIAN12 has none, its plan there: test_driver_nogpu.py)."""
    driver, _ = roles.plan("nvidia_driver", defaults("nvidia_driver"), dict(DEBIAN12, gpus=[H200]))
    cuda, _ = roles.plan("cuda_toolkit", defaults("cuda_toolkit"), DEBIAN12)
    cudnn, _ = roles.plan("cudnn", defaults("cudnn"), DEBIAN12)
    assert driver["branch"] == "580"
    assert cuda["versions"] == ["13.0"] and cuda["default"] == "13.0"
    assert (cudnn["main"]["version"], cudnn["main"]["cuda_major"]) == ("9.14.0", "13")
    assert "branch 580" in driver["summary"]
    assert cuda["summary"].startswith("CUDA toolkit 13.0 from ")
    assert cudnn["summary"].startswith("cuDNN 9.14.0 for CUDA 13 ")


def test_cudnn_follows_the_default_cuda_the_host_sets():
    plan, _ = roles.plan("cudnn", defaults("cudnn", cuda_toolkit_versions=["12.9"]), DEBIAN12)
    assert plan["main"]["cuda_major"] == "12"


def test_every_variable_a_request_reads_is_the_roles_own():
    """The requests read the role's variables by their real names; a renamed variable fails here."""
    assert roles.cuda_request(defaults("cuda_toolkit"), "x86_64", "")["versions"] == ["13.0"]
    assert roles.cudnn_request(defaults("cudnn"), "x86_64", "Debian")["cuda_versions"] == ["13.0"]
    assert roles.driver_request(defaults("nvidia_driver"), False)["branch"] == "580"


@pytest.mark.parametrize(
    ("role", "given", "subsets", "owner_paths", "mok_paths"),
    [
        # the defaults: NVIDIA's repository (issue 36), whose packages and sources the plan reads
        ("cuda_toolkit", {}, ["gpu", "driver", "cuda", "owners", "packages", "sources"], [], []),
        ("cuda_toolkit", {"cuda_toolkit_source": "redist"}, ["gpu", "driver", "cuda", "owners"], [], []),
        ("cuda_toolkit", {"cuda_toolkit_source": "distro"}, ["gpu", "driver", "packages"], [], []),
        (
            "cudnn",
            {"cudnn_source": "nvidia_repo"},
            ["gpu", "driver", "owners", "packages", "sources"],
            ["/opt/nvidia/cudnn"],
            [],
        ),
        (
            "cudnn",
            {"cudnn_source": "nvidia_repo", "cudnn_repo_use_existing": True},
            ["gpu", "driver", "owners", "packages"],
            ["/opt/nvidia/cudnn"],
            [],
        ),
        (
            "cuda_toolkit",
            {"cuda_toolkit_source": "nvidia_repo"},
            ["gpu", "driver", "cuda", "owners", "packages", "sources"],
            [],
            [],
        ),
        (
            "cudnn",
            {"cudnn_source": "redist", "cudnn_prefix": "/srv/cudnn"},
            ["gpu", "driver", "owners"],
            ["/srv/cudnn"],
            [],
        ),
        ("cudnn", {}, ["gpu", "driver", "owners", "packages", "sources"], ["/opt/nvidia/cudnn"], []),
        # packages: gpufleet's record of the driver packages its installs added (issue 36)
        ("nvidia_driver", {}, ["gpu", "driver", "packages", "sources"], [], []),
        ("nvidia_driver", {"nvidia_driver_repo_use_existing": True}, ["gpu", "driver", "packages"], [], []),
        (
            "nvidia_driver",
            {"nvidia_driver_mok_key": "/k.priv", "nvidia_driver_mok_cert": "/k.der"},
            ["gpu", "driver", "packages", "sources"],
            [],
            ["/k.priv", "/k.der"],
        ),
    ],
)
def test_facts_wanted(role, given, subsets, owner_paths, mok_paths):
    wanted = roles.facts_wanted(role, defaults(role, **given))
    assert wanted == {"gather_subset": subsets, "owner_paths": owner_paths, "mok_paths": mok_paths}


def test_one_gathering_for_a_stack_is_the_union():
    wanted = roles.merge_wanted(
        roles.facts_wanted(r, defaults(r)) for r in ("nvidia_driver", "cuda_toolkit", "cudnn")
    )
    assert wanted["gather_subset"] == ["gpu", "driver", "packages", "sources", "cuda", "owners"]
    assert wanted["owner_paths"] == ["/opt/nvidia/cudnn"]


def test_validation_before_any_fact_names_the_variable():
    with pytest.raises(PlanError, match=r"^cudnn_version=9\.x \(allowed: X\.Y\.Z or X\.Y\.Z\.B"):
        roles.validate("cudnn", defaults("cudnn", cudnn_version="9.x"))
    with pytest.raises(PlanError, match=r"^cuda_toolkit_default=12\.9 \(allowed: empty or one of"):
        roles.validate("cuda_toolkit", defaults("cuda_toolkit", cuda_toolkit_default="12.9"))


def test_an_unknown_role_is_refused():
    with pytest.raises(PlanError, match=r"^role=internal \(allowed: cuda_toolkit, cudnn, nvidia_driver\)"):
        roles.facts_wanted("internal", {})


def test_the_driver_target_of_a_stack():
    variables = defaults("nvidia_driver", nvidia_driver_kernel_module="open")
    driver, _ = roles.plan("nvidia_driver", variables, dict(DEBIAN12, gpus=[H200]))
    assert roles.driver_target(driver) == {
        "driver_branch": "580",
        "driver_version": None,
        "kernel_module": "open",
    }
    assert roles.driver_target({"install": False, "host_managed": True}) is None


def test_a_stack_checks_cuda_against_the_driver_it_installs():
    """CUDA 13.0 needs R580: with the driver role planning 570, the CUDA check refuses before any change."""
    h200 = dict(DEBIAN12, gpus=[H200])
    driver, _ = roles.plan("nvidia_driver", defaults("nvidia_driver", nvidia_driver_branch="570"), h200)
    context = {"overrides": roles.driver_target(driver)}
    _plan, compat = roles.plan("cuda_toolkit", defaults("cuda_toolkit"), h200, context)
    assert compat["errors"], compat
    assert "570" in compat["errors"][0], compat["errors"]


def test_report_lines_print_every_error_and_warning():
    plans = {"cuda_toolkit": {"summary": "CUDA toolkit 13.0 from redist, default 13.0"}}
    compat = {
        "cuda_toolkit": {"gpus": [{"name": "NVIDIA H200"}], "warnings": ["w1"], "errors": [],
                         "recommended": {"driver_branch": "580", "kernel_module": "open", "cuda_max": "13.5",
                                         "cudnn_max": "9.28.1"}},
        "cudnn": {"gpus": [], "warnings": ["w1", "w2"], "errors": [], "recommended": None},
    }  # fmt: skip
    errors = {"cudnn": ["cudnn: cudnn_version=9.x (allowed: X.Y.Z or X.Y.Z.B, e.g. 9.14.0 or 9.14.0.64)"]}
    lines = roles.report_lines(["cuda_toolkit", "cudnn"], plans, compat, errors)
    assert lines == [
        "FAIL: GPUs NVIDIA H200; 1 error(s), 2 warning(s)",
        "cuda_toolkit: CUDA toolkit 13.0 from redist, default 13.0",
        "error: cudnn: cudnn_version=9.x (allowed: X.Y.Z or X.Y.Z.B, e.g. 9.14.0 or 9.14.0.64)",
        "warning: w1",
        "warning: w2",
        "recommended: driver R580 open, CUDA <= 13.5, cuDNN <= 9.28.1",
    ]


H200_PACKAGES = {
    "manager": "apt",
    "installed": {
        "libcudnn9-cuda-13": {"version": "9.14.0.64-1", "held": True},
        "libcudnn9-dev-cuda-13": {"version": "9.14.0.64-1", "held": True},
        "libcudnn9-headers-cuda-13": {"version": "9.14.0.64-1", "held": True},
    },
    "python_apt": {"importable": False, "candidate": "none", "interpreter": "/usr/bin/python3"},
}
UBUNTU = dict(DEBIAN12, host=dict(DEBIAN12["host"], os={"distribution": "Ubuntu", "version": "24.04",
                                                        "key": "ubuntu2404"}))  # fmt: skip


def test_the_package_plan_is_decided_on_the_controller_from_the_packages_facts():
    """nvidia_repo state=planned read the package database on the target; the plan now reads the facts."""
    facts = dict(UBUNTU, packages=dict(H200_PACKAGES, python_apt=None))
    plan, _ = roles.plan("cudnn", defaults("cudnn", cudnn_source="nvidia_repo"), facts)
    assert plan["repo"]["manager"] == "apt" and plan["repo"]["repo_dir"] == "ubuntu2404"
    assert plan["packages"]["missing"] == []
    assert "libcudnn9-cuda-13" in plan["packages"]["installed"]
    moved, _ = roles.plan(
        "cudnn", defaults("cudnn", cudnn_source="nvidia_repo", cudnn_version="9.19.0"), facts
    )
    assert "libcudnn9-cuda-13" in moved["packages"]["unhold"]


def test_apt_without_python_apt_is_refused_before_any_change():
    facts = dict(UBUNTU, packages=dict(H200_PACKAGES, installed={}))
    with pytest.raises(PlanError, match=r"^cudnn_source='nvidia_repo' installs libcudnn9-cuda-13=9\.14\.0"):
        roles.plan("cudnn", defaults("cudnn", cudnn_source="nvidia_repo"), facts)


def test_redist_plans_no_packages():
    plan, _ = roles.plan("cudnn", defaults("cudnn", cudnn_source="redist"), DEBIAN12)
    assert plan["repo"] == {} and plan["packages"]["specs"] == []


def test_the_defaults_install_from_nvidias_repository_as_nvidias_guide_does():
    """Issue 36: cuda_toolkit_source and cudnn_source default to nvidia_repo, as the driver's does."""
    cuda, _ = roles.plan("cuda_toolkit", defaults("cuda_toolkit"), DEBIAN12)
    cudnn, _ = roles.plan("cudnn", defaults("cudnn"), DEBIAN12)
    assert cuda["packages"]["specs"] == ["cuda-toolkit-13-0"]
    assert cudnn["packages"]["specs"] == [
        "libcudnn9-cuda-13=9.14.0*", "libcudnn9-dev-cuda-13=9.14.0*", "libcudnn9-headers-cuda-13=9.14.0*"
    ]  # fmt: skip
    for plan in (cuda, cudnn):
        assert (
            plan["repo"]["url"] == "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
        )


# ---------------------------------------------------------------- a host that already has NVIDIA's repository
NVIDIA_2404 = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
CUDA_LIST = "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list"
CUDA_KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"


def nvidia_guide(fingerprint="EB693B3035CD5710E231E123A4B469963BF863CC"):
    """The facts of a host set up by NVIDIA's installation guide: cuda-keyring's .list and keyring."""
    entry = {
        "file": CUDA_LIST, "format": "one-line", "line": 1, "id": None, "enabled": True, "types": ["deb"],
        "uris": [NVIDIA_2404], "suites": ["/"], "components": [], "options": {}, "gpgcheck": None,
        "repo_gpgcheck": None, "gpgkey": [], "keyrings": [CUDA_KEYRING], "fingerprints": [],
        "inline_key": False, "owner": "cuda-keyring",
    }  # fmt: skip
    keyring = {"exists": True, "fingerprints": [fingerprint], "subkeys": [], "owner": "cuda-keyring",
               "reason": None}  # fmt: skip
    sources = {"entries": [entry], "keyrings": {CUDA_KEYRING: keyring}, "trusted": [], "reasons": []}
    packages = dict(H200_PACKAGES, python_apt=None)
    return dict(UBUNTU, packages=packages, sources=sources)


def test_every_role_adopts_the_nvidia_guides_source_through_one_function():
    for role in ("cudnn", "cuda_toolkit", "nvidia_driver"):
        variables = defaults(role, **{f"{role}_source": "nvidia_repo"})
        if role == "nvidia_driver":  # these facts have no GPU
            variables["nvidia_driver_install_without_gpu"] = True
        plan, _ = roles.plan(role, variables, nvidia_guide())
        assert plan["repo"]["adopt"]["path"] == CUDA_LIST, role
        assert plan["repo"]["remove_own"] == []
        assert f"adopting {CUDA_LIST} (cuda-keyring)" in plan["summary"], (role, plan["summary"])


def test_the_retired_key_is_refused_before_any_change_naming_the_roles_variables():
    old = nvidia_guide("AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80")
    with pytest.raises(
        PlanError, match=rf"^cudnn_source='nvidia_repo': {CUDA_LIST} \(line 1\) already serves"
    ):
        roles.plan("cudnn", defaults("cudnn", cudnn_source="nvidia_repo"), old)
    driver, _ = roles.plan(
        "nvidia_driver", defaults("nvidia_driver", nvidia_driver_install_without_gpu=True), old
    )
    assert driver["repo"] == {}
    assert any("nvidia_driver_repo_key_fingerprint" in e and "7fa2af80" in e for e in driver["errors"])


def test_use_existing_takes_the_hosts_sources_as_they_are():
    old = nvidia_guide("AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80")
    variables = defaults("cudnn", cudnn_source="nvidia_repo", cudnn_repo_use_existing=True)
    plan, _ = roles.plan("cudnn", variables, old)
    assert "adopt" not in plan["repo"] and "adopting" not in plan["summary"]


def test_without_the_sources_facts_the_repository_is_todays():
    plan, _ = roles.plan(
        "cudnn", defaults("cudnn", cudnn_source="nvidia_repo"), dict(UBUNTU, packages=H200_PACKAGES)
    )
    assert plan["repo"]["adopt"] is None and plan["repo"]["path"].endswith("gpufleet-nvidia-cuda.sources")


def test_the_plans_say_what_their_install_steps_install():
    """Issue 37: the install tasks' names say what they download and install, in the plans' words."""
    cuda, _ = roles.plan("cuda_toolkit", defaults("cuda_toolkit", cuda_toolkit_source="redist"), DEBIAN12)
    assert cuda["progress"] == "CUDA 13.0.2 (toolkit) into /usr/local/cuda-13.0"
    compiler = defaults(
        "cuda_toolkit", cuda_toolkit_source="redist", cuda_toolkit_redist_components=["compiler"]
    )
    cuda, _ = roles.plan("cuda_toolkit", compiler, DEBIAN12)
    assert cuda["progress"] == "CUDA 13.0.2 (compiler) into /usr/local/cuda-13.0"
    assert cuda["toolkits"][0]["components"] == [
        "cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart", "cuda_cccl", "cuda_nvrtc"
    ]  # fmt: skip
    cudnn, _ = roles.plan("cudnn", defaults("cudnn", cudnn_source="redist"), DEBIAN12)
    assert cudnn["progress"] == "cuDNN 9.14.0 for CUDA 13 (cudnn) under /opt/nvidia/cudnn"
    cuda, _ = roles.plan("cuda_toolkit", defaults("cuda_toolkit", cuda_toolkit_source="nvidia_repo"), UBUNTU)
    assert cuda["progress"] == "packages cuda-toolkit-13-0 from nvidia_repo"


def test_the_toolkits_packages_are_held_like_cudnns():
    """Issue 36: cuda_toolkit_hold, as cudnn_hold and nvidia_driver_hold (default true)."""
    cuda, _ = roles.plan("cuda_toolkit", defaults("cuda_toolkit"), DEBIAN12)
    assert cuda["hold"] is True and cuda["versionlock"] == []  # apt holds the set's names
    assert cuda["packages"]["hold"] == cuda["packages"]["hold_missing"] == ["cuda-toolkit-13-0"]
    assert "packages held (cuda_toolkit_hold)" in cuda["summary"]
    off, _ = roles.plan("cuda_toolkit", defaults("cuda_toolkit", cuda_toolkit_hold=False), DEBIAN12)
    assert off["hold"] is False and "held" not in off["summary"]
    redist, _ = roles.plan("cuda_toolkit", defaults("cuda_toolkit", cuda_toolkit_source="redist"), DEBIAN12)
    assert redist["hold"] is False  # a redist tree has no package to hold
    rocky = {
        **DEBIAN12,
        "host": {**DEBIAN12["host"], "os": {"distribution": "Rocky", "version": "9", "key": "rhel9"}},
    }
    variables = defaults(
        "cuda_toolkit", cuda_toolkit_versions=["12.9", "13.0"], cuda_toolkit_repo_key_fingerprint="A" * 40
    )
    dnf, _ = roles.plan("cuda_toolkit", variables, rocky)
    assert dnf["versionlock"] == ["cuda-*-12-9", "lib*-12-9", "cuda-*-13-0", "lib*-13-0"]


def test_a_locked_toolkit_moved_to_another_version_is_released_first_on_dnf():
    """Issue 38: dnf filters a locked package's move out ("All matches were filtered out by exclude
    filtering"), so a pinned X.Y.Z moved up or down releases that release's locks (its patterns), not the
    other releases'; nothing is released when nothing moves, and apt releases packages.unhold instead."""
    rocky = {
        **DEBIAN12,
        "host": {**DEBIAN12["host"], "os": {"distribution": "Rocky", "version": "9", "key": "rhel9"}},
        "gather_subset": [*DEBIAN12["gather_subset"], "packages"],
    }
    locked = {"cuda-toolkit-12-9": {"version": "12.9.1-1", "held": True},
              "cuda-toolkit-13-0": {"version": "13.0.2-1", "held": True}}  # fmt: skip
    facts = dict(rocky, packages={"installed": locked})
    variables = defaults(
        "cuda_toolkit", cuda_toolkit_versions=["12.9.1", "13.0.1"], cuda_toolkit_repo_key_fingerprint="A" * 40
    )
    dnf, _ = roles.plan("cuda_toolkit", variables, facts)
    assert dnf["packages"]["missing"] == ["cuda-toolkit-13-0-13.0.1"]
    assert dnf["versionlock_release"] == ["cuda-*-13-0", "lib*-13-0"]
    same, _ = roles.plan("cuda_toolkit", dict(variables, cuda_toolkit_versions=["12.9.1", "13.0.2"]), facts)
    assert same["versionlock_release"] == [] and same["packages"]["missing"] == []
    unheld, _ = roles.plan("cuda_toolkit", dict(variables, cuda_toolkit_hold=False), facts)
    # a lock of an earlier run still binds
    assert unheld["versionlock_release"] == ["cuda-*-13-0", "lib*-13-0"]
    apt, _ = roles.plan(
        "cuda_toolkit", defaults("cuda_toolkit"), dict(DEBIAN12, packages={"installed": locked})
    )
    assert apt["versionlock_release"] == []


def test_rhel8_package_paths_are_refused_with_an_ansible_core_that_cannot_run_dnf_there():
    """Issue 38: RHEL 8's python3-dnf exists for platform-python 3.6 only, which ansible-core 2.17 dropped as
    a target: every dnf task would fail mid-run, so the plan refuses before any change and says what works."""
    rocky8 = {**DEBIAN12, "host": {**DEBIAN12["host"], "os": {"distribution": "Rocky", "version": "8.10",
                                                               "key": "rhel8"}}}  # fmt: skip
    variables = defaults("cudnn", cudnn_repo_key_fingerprint="A" * 40)
    with pytest.raises(
        PlanError, match=r"^cudnn installs with dnf on Rocky 8.10, which ansible-core 2.19.4 "
    ):
        roles.plan("cudnn", variables, rocky8, {"ansible_core": "2.19.4"})
    message = roles.el8_dnf_refusal("cudnn", variables, rocky8, "2.17.0")
    assert "ansible-core 2.16 or cudnn_source: redist. Nothing was changed" in message
    assert roles.el8_dnf_refusal("cudnn", variables, rocky8, "2.16.14") is None
    assert roles.el8_dnf_refusal("cudnn", dict(variables, cudnn_source="redist"), rocky8, "2.19.4") is None
    assert "nvidia_driver installs with dnf" in roles.el8_dnf_refusal("nvidia_driver", {}, rocky8, "2.18.1")
    rocky9 = {
        **rocky8,
        "host": {**rocky8["host"], "os": {"distribution": "Rocky", "version": "9", "key": "rhel9"}},
    }
    assert roles.el8_dnf_refusal("cudnn", variables, rocky9, "2.19.4") is None


UBUNTU2404_ARM = dict(
    DEBIAN12,
    host={"os": {"distribution": "Ubuntu", "version": "24.04", "key": "ubuntu2404"}, "container": "none",
          "kernel_release": "6.8.0-1015-nvidia-64k", "machine": "aarch64", "tegra": None},
)  # fmt: skip


@pytest.mark.parametrize("role", ["nvidia_driver", "cuda_toolkit", "cudnn"])
def test_each_role_refuses_a_jetson_and_plans_an_arm_server_from_sbsa(role):
    """An Arm server (Grace: aarch64) gets NVIDIA's sbsa repository; a Jetson (facts' host.tegra) is refused
    by every role's plan before any change: JetPack installs its driver, CUDA and cuDNN."""
    gh200 = dict(UBUNTU2404_ARM, gpus=[{"device_id": "0x2342", "compute_capability": "9.0", "name": "GH200"}])
    plan, compat = roles.plan(role, defaults(role), gh200)
    assert compat["errors"] == [], compat
    assert "/repos/ubuntu2404/sbsa" in str(plan), plan
    jetson = dict(gh200, host=dict(gh200["host"], tegra="/etc/nv_tegra_release exists (# R36 (release))"))
    _plan, compat = roles.plan(role, defaults(role), jetson)
    assert any(e.startswith("this host is an NVIDIA Jetson") for e in compat["errors"]), compat


@pytest.mark.parametrize("role", ["nvidia_driver", "cuda_toolkit", "cudnn"])
def test_an_arm_server_on_debian_is_warned_that_nvidias_sbsa_repository_is_not_known(role):
    """kb/hosts.py SBSA_REPOSITORIES (issue 39): NVIDIA's Debian repositories are known with x86_64 and
    cross-linux-sbsa trees only (low confidence), so nvidia_repo on a Debian arm64 host is planned from
    .../debian12/sbsa/ with a warning naming the URL and the sure way; Ubuntu's sbsa tree is known."""
    gpus = [{"device_id": "0x2342", "compute_capability": "9.0", "name": "GH200"}]
    debian = dict(DEBIAN12, gpus=gpus, host=dict(DEBIAN12["host"], machine="aarch64", tegra=None))
    _plan, compat = roles.plan(role, defaults(role), debian)
    assert compat["errors"] == [], compat
    (warning,) = [w for w in compat["warnings"] if "sbsa repository" in w]
    assert warning.startswith(f"{role}_source: nvidia_repo on an Arm server (aarch64) with Debian 12: "), (
        warning
    )
    assert "/repos/debian12/sbsa/" in warning
    assert warning.endswith(kb_hosts.SBSA_ADVICE[role])
    _plan, compat = roles.plan(role, defaults(role), dict(UBUNTU2404_ARM, gpus=gpus))
    assert not [w for w in compat["warnings"] if "sbsa repository" in w], compat["warnings"]
    x86 = dict(debian, host=dict(debian["host"], machine="x86_64"))
    _plan, compat = roles.plan(role, defaults(role), x86)
    assert not [w for w in compat["warnings"] if "sbsa repository" in w], compat["warnings"]
    if role != "nvidia_driver":  # the redist archives: no repository at all
        redist = dict(defaults(role), **{f"{role}_source": "redist"})
        _plan, compat = roles.plan(role, redist, debian)
        assert not [w for w in compat["warnings"] if "sbsa repository" in w], compat["warnings"]
