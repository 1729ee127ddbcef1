"""plan/cuda.py: the one default-CUDA decision, the variables' validation and the toolkit plan."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpufleet as kb_gpufleet
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cuda, stack
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan

H200 = {"device_id": "0x2335", "subsystem_vendor_id": "0x10de", "subsystem_device_id": "0x18bf"}


def request(**kwargs):
    req = {
        "versions": ["13.0"],
        "default": "",
        "source": "redist",
        "verify_arch": "",
        "releases": {},
        "components": ["toolkit"],
        "controller_cache": False,
        "controller_cache_dir": "/var/tmp/gpufleet-redist",
        "base_url": "https://developer.download.nvidia.com/compute",
        "remove_unlisted": False,
        "profile": True,
        "ldconfig": True,
        "skip_compat": False,
        "existing": "refuse",
        "machine": "x86_64",
    }
    req.update(kwargs)
    return req


@pytest.mark.parametrize(
    ("versions", "default", "expected"),
    [
        (["12.9"], "", "12.9"),  # the bug: cuDNN picked CUDA 13 here
        (["12.9", "13.0.2"], "", "13.0"),
        (["12.9", "13.0"], "12.9", "12.9"),
        (["12.9", "13.0"], "12.9.1", "12.9"),
        (["13.0"], None, "13.0"),
    ],
)
def test_default_cuda_is_the_explicit_default_else_the_last_listed(versions, default, expected):
    assert cuda.default_cuda(versions, default) == expected


def test_an_unknown_cuda_release_names_the_users_variable():
    with pytest.raises(stack.PlanError) as err:
        cuda.validate(["12.99"])
    msg = str(err.value)
    assert msg.startswith("cuda_toolkit_versions=['12.99'] (allowed: a non-empty list")
    assert "'12.99' is not a CUDA release gpufleet knows; known: 12.0, 12.1" in msg
    assert "cuda_version" not in msg


def test_a_wrong_default_names_only_the_default():
    with pytest.raises(stack.PlanError) as err:
        cuda.validate(["13.0"], "12.9")
    msg = str(err.value)
    assert msg == "cuda_toolkit_default=12.9 (allowed: empty or one of cuda_toolkit_versions: 13.0)"
    assert "bad variable" not in msg


@pytest.mark.parametrize(
    ("versions", "default", "arch", "expected"),
    [
        (["13.x"], "", "", "cuda_toolkit_versions=['13.x'] (allowed: a non-empty list"),
        ([], "", "", "cuda_toolkit_versions=[] (allowed: a non-empty list"),
        (["10.2"], "", "", "'10.2' is not a CUDA release gpufleet knows"),
        (["13.0"], "13.x", "", "cuda_toolkit_default=13.x (allowed: empty or one of"),
        (["13.0"], "", "90", "cuda_toolkit_verify_arch=90 (allowed: empty or e.g. sm_90)"),
    ],
)
def test_validation_names_the_one_wrong_variable(versions, default, arch, expected):
    with pytest.raises(stack.PlanError) as err:
        cuda.validate(versions, default, arch)
    assert expected in str(err.value)


def test_newer_than_known_is_left_to_the_source():
    cuda.validate(["14.0.1"])  # compat warns; the redist table or the packages decide


def test_plan_paths_alternatives_files_and_redist():
    plan = cuda.plan(request(versions=["12.9", "13.0"], default="12.9"), facts={})
    assert plan["default"] == "12.9"
    assert [t["dest"] for t in plan["toolkits"]] == ["/usr/local/cuda-12.9", "/usr/local/cuda-13.0"]
    assert [t["alternative"] for t in plan["toolkits"]] == ["cuda-12", "cuda-13"]
    assert [t["release"] for t in plan["toolkits"]] == ["12.9.1", "13.0.2"]
    assert plan["toolkits"][1]["components"][:3] == ["cuda_nvcc", "cuda_crt", "libnvvm"]
    assert plan["alternatives_args"] == ["12.9", "12.9", "13.0"]
    assert plan["profile"]["path"] == "/etc/profile.d/gpufleet-cuda.sh"
    assert "/usr/local/cuda/bin" in plan["profile"]["content"]
    assert plan["ld_conf"]["content"].endswith("/usr/local/cuda/lib64\n")
    assert plan["redist"]["platform"] == "linux-x86_64"
    assert plan["redist"]["base_url"] == "https://developer.download.nvidia.com/compute"
    assert plan["verify"]["nvcc"][0] == {"path": "/usr/local/cuda-12.9/bin/nvcc", "expect": "release 12.9,"}


def test_controller_cache_makes_the_host_read_its_copy():
    plan = cuda.plan(request(controller_cache=True), facts={})
    assert plan["redist"]["base_url"] == kb_gpufleet.HOST_CACHE == "/var/cache/gpufleet/redist"
    assert plan["redist"]["controller_base_url"] == "https://developer.download.nvidia.com/compute"


def test_redist_release_table_and_platform_errors_name_the_variable():
    with pytest.raises(stack.PlanError, match="cuda_toolkit_versions: CUDA 11.2 has no known redist release"):
        cuda.plan(request(versions=["11.2"], skip_compat=True))
    with pytest.raises(stack.PlanError, match="ansible_facts.machine=ppc64le"):
        cuda.plan(request(machine="ppc64le", skip_compat=True))
    assert (
        cuda.plan(request(versions=["11.2"], source="nvidia_repo", skip_compat=True))["toolkits"][0][
            "release"
        ]
        is None
    )


def test_distro_has_no_alternatives_and_verifies_usr():
    plan = cuda.plan(request(source="distro", skip_compat=True))
    assert plan["alternatives_args"] == []
    assert not plan["profile"]["wanted"]
    assert not plan["ld_conf"]["wanted"]
    assert plan["verify"]["prefixes"] == ["/usr"]


def test_removal_only_of_owned_unlisted_toolkits():
    owned = ["/usr/local/cuda-12.4", "/usr/local/cuda-13.0", "/opt/cuda-11.8", "/usr/local/cuda"]
    plan = cuda.plan(request(remove_unlisted=True), facts={}, owned=owned)
    assert plan["remove"] == [{"path": "/usr/local/cuda-12.4", "alternatives": ["cuda", "cuda-12"]}]
    assert cuda.remove_alternatives(plan["remove"]) == [
        {"path": "/usr/local/cuda-12.4", "name": "cuda"},
        {"path": "/usr/local/cuda-12.4", "name": "cuda-12"},
    ]
    assert cuda.plan(request(), facts={}, owned=owned)["remove"] == []


@pytest.mark.parametrize(
    ("arch", "gpus", "expected"),
    [
        ("sm_80", [{"compute_capability": "9.0"}], "sm_80"),
        ("", [{"compute_capability": "unknown"}, {"compute_capability": "12.0"}], "sm_120"),
        ("", [], "sm_90"),
    ],
)
def test_verify_arch(arch, gpus, expected):
    assert cuda.verify_arch(arch, gpus) == expected


def test_verify_arch_from_the_facts_gpu():
    plan = cuda.plan(request(), facts={"gpus": [H200]})
    assert plan["verify"]["arch"] == "sm_90"
    assert plan["compat"]["gpus"][0]["name"] == "NVIDIA H200"


def test_an_incompatible_plan_is_reported_not_raised():
    v100 = {"device_id": "0x1db5"}
    plan = cuda.plan(request(), facts={"gpus": [v100]})
    assert plan["compat"]["compatible"] is False
    assert "is not supported by CUDA 13.0" in plan["compat"]["errors"][0]
    assert cuda.plan(request(skip_compat=True), facts={"gpus": [v100]})["compat"]["skipped"] is True


# plan/stack.py (shared by the toolkit and cuDNN plans)
def test_compat_inputs_from_facts_and_overrides():
    facts = {
        "gpus": [H200, {"device_id": "unknown", "compute_capability": "unknown"}],
        "driver": {"loaded_version": "580.95.05", "loaded_kernel_module": "open", "version": "590.1"},
        "host": {"os": {"distribution": "Ubuntu", "version": "24.04", "key": "ubuntu2404"}},
    }
    got = stack.compat_inputs(facts)
    assert got["gpus"] == [
        {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18bf", "pci_subsystem_vendor_id": "0x10de"}
    ]
    assert (got["driver_version"], got["kernel_module"]) == ("580.95.05", "open")
    assert got["os_info"] == {"distribution": "Ubuntu", "version": "24.04"}
    over = stack.compat_inputs(
        facts, {"gpus": [], "driver_branch": "595", "os": {"distribution": "debian", "version": "12"}}
    )
    assert over["gpus"] == []
    assert (over["driver_version"], over["driver_branch"], over["kernel_module"]) == (None, "595", "auto")
    assert over["os_info"] == {"distribution": "debian", "version": "12"}


def test_compat_inputs_carry_the_pci_ids_name_of_an_unknown_gpu():
    rubin = {"device_id": "0x3fff", "pci_ids_name": "GR150 [Future Rubin]", "compute_capability": "unknown"}
    got = stack.compat_inputs({"gpus": [rubin, dict(H200, pci_ids_name=None)]})
    assert got["gpus"] == [
        {"pci_device_id": "0x3fff", "pci_ids_name": "GR150 [Future Rubin]"},
        {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18bf", "pci_subsystem_vendor_id": "0x10de"},
    ]


def test_compat_inputs_read_the_pci_spelling_and_a_gpu_known_by_name_only():
    """Facts written in the ``pci_*`` spelling keep their subsystem ids; a GPU NVML or nvidia-smi reported by
    name only is checked by its name (nvidia_compat's inputs come from here too)."""
    given = {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18BF", "pci_subsystem_vendor_id": "0x10DE"}
    by_name = {"device_id": "unknown", "compute_capability": "unknown", "name": "Tesla V100-SXM2-32GB"}
    nothing = {"device_id": "unknown", "compute_capability": "unknown", "name": "unknown"}
    got = stack.compat_inputs({"gpus": [given, by_name, nothing]})
    assert got["gpus"] == [given, {"name": "Tesla V100-SXM2-32GB"}]


def test_compat_input_errors_name_the_users_variables():
    assert (
        stack.user_wording("gpus[0]: 'x' is not a mapping") == "nvidia_driver_gpus[0]: 'x' is not a mapping"
    )
    assert stack.user_wording("driver_branch: 'R9' ...").startswith("nvidia_driver_branch: ")
    with pytest.raises(stack.PlanError, match=r"^nvidia_driver_gpus\[0\]"):
        stack.run_checks([("x", {})], dict(stack.compat_inputs({}), gpus=["bogus"]))


# ---------------------------------------------------------------- who owns /usr/local/cuda-X.Y (redist)
# The real H200: CUDA 13.0 from NVIDIA's apt packages (tests/data/h200-ubuntu2404: dpkg status).
H200_DEB_TOOLKIT = {
    "path": "/usr/local/cuda-13.0",
    "version": "13.0.2",
    "source": "deb",
    "package": {"name": "cuda-toolkit-13-0-config-common", "version": "13.0.96-1", "manager": "deb"},
    "gpufleet_marker": False,
}
RUNFILE_TOOLKIT = {"path": "/usr/local/cuda-13.0", "version": "13.0.1", "source": "runfile", "package": None}
GPUFLEET_TOOLKIT = {
    "path": "/usr/local/cuda-13.0",
    "version": "13.0.2",
    "source": "redist",
    "gpufleet_marker": True,
}
HAND_MADE_TOOLKIT = {"path": "/usr/local/cuda-13.0", "version": "13.0.2", "source": "redist", "package": None}


def facts_with(*toolkits):
    return {"gpus": [], "cuda": {"toolkits": list(toolkits)}}


def plan_with(toolkit, existing="refuse", **kw):
    return cuda.plan(request(existing=existing, skip_compat=True, **kw), facts=facts_with(toolkit))


def test_the_h200s_package_toolkit_is_refused_by_default_naming_path_and_package():
    """The first wave replaced this very tree on the H200 and reported success."""
    with pytest.raises(stack.PlanError) as err:
        plan_with(H200_DEB_TOOLKIT)
    message = str(err.value)
    assert message.startswith("cuda_toolkit_existing=refuse (allowed: refuse (the default), adopt, replace)")
    assert (
        "/usr/local/cuda-13.0 is already there, owned by package cuda-toolkit-13-0-config-common 13.0.96-1"
        in (message)
    )
    assert "set cuda_toolkit_existing: adopt" in message


@pytest.mark.parametrize("toolkit", [RUNFILE_TOOLKIT, HAND_MADE_TOOLKIT], ids=["runfile", "hand-made"])
def test_other_foreign_trees_are_refused_by_default(toolkit):
    with pytest.raises(stack.PlanError, match="is already there, owned by"):
        plan_with(toolkit)


def test_adopt_leaves_a_matching_tree_alone_and_still_verifies_it():
    plan = plan_with(H200_DEB_TOOLKIT, existing="adopt")
    (entry,) = plan["toolkits"]
    assert entry["action"] == "adopt" and entry["existing"]["owner"] == "package"
    assert plan["install"] == [] and plan["adopted"] == ["/usr/local/cuda-13.0"]
    assert plan["verify"]["prefixes"] == ["/usr/local/cuda-13.0"]
    assert plan["alternatives_args"] == ["13.0", "13.0"]


@pytest.mark.parametrize("wanted", ["12.9", "13.0.1"])
def test_adopt_refuses_a_tree_of_another_version(wanted):
    toolkit = dict(H200_DEB_TOOLKIT, path=f"/usr/local/cuda-{cuda.xy(wanted)}")
    with pytest.raises(stack.PlanError, match=f"it holds CUDA 13.0.2, not {wanted}"):
        plan_with(toolkit, existing="adopt", versions=[wanted])


def test_replace_is_refused_for_a_packages_tree():
    with pytest.raises(stack.PlanError, match="removed through the package manager"):
        plan_with(H200_DEB_TOOLKIT, existing="replace")


@pytest.mark.parametrize("toolkit", [RUNFILE_TOOLKIT, HAND_MADE_TOOLKIT], ids=["runfile", "hand-made"])
def test_replace_backs_up_a_tree_that_is_no_packages(toolkit):
    plan = plan_with(toolkit, existing="replace")
    (entry,) = plan["install"]
    assert entry["action"] == "replace" and entry["replace"] is True


def test_gpufleets_own_tree_is_kept_current_under_every_policy():
    for existing in cuda.EXISTING_POLICIES:
        (entry,) = plan_with(GPUFLEET_TOOLKIT, existing=existing)["install"]
        assert entry["action"] == "install" and entry["replace"] is False


def test_a_packages_tree_is_the_package_managers_business_with_nvidia_repo():
    """nvidia_repo installs packages: a tree of NVIDIA's packages is theirs to keep (apt/dnf present)."""
    plan = plan_with(H200_DEB_TOOLKIT, source="nvidia_repo")
    assert (
        plan["toolkits"][0]["action"] == "install" and plan["toolkits"][0]["existing"]["owner"] == "package"
    )
    assert (
        cuda.plan(request(source="distro", skip_compat=True), facts=facts_with(H200_DEB_TOOLKIT))["toolkits"][
            0
        ]["existing"]
        is None
    )


@pytest.mark.parametrize("toolkit", [RUNFILE_TOOLKIT, HAND_MADE_TOOLKIT])
def test_nvidia_repo_refuses_to_unpack_packages_over_a_foreign_tree(toolkit):
    """apt would write its files into a runfile's or a hand-made tree: refused like redist."""
    with pytest.raises(
        stack.PlanError, match=r"^cuda_toolkit_existing=refuse .*/usr/local/cuda-13.0 is already"
    ):
        plan_with(toolkit, source="nvidia_repo")


# A site's own package of the toolkit (an HPC center's rpm or deb) owning /usr/local/cuda-13.0 (issue 38)
SITE_RPM_TOOLKIT = {
    "path": "/usr/local/cuda-13.0",
    "version": "13.0.2",
    "source": "rpm",
    "package": {"name": "hpc-site-cuda-13-0", "version": "13.0.2-1.site", "manager": "rpm"},
    "owner": {"kind": "package", "name": "hpc-site-cuda-13-0", "version": "13.0.2-1.site",
              "words": "package hpc-site-cuda-13-0 13.0.2-1.site"},
}  # fmt: skip


def test_nvidia_repo_refuses_a_tree_another_package_owns_naming_it():
    """Before, any package's tree was taken for NVIDIA's: apt or dnf then collided with its files in the
    middle of the transaction (dnf: "conflicts between attempted installs"; dpkg: "trying to overwrite")."""
    with pytest.raises(stack.PlanError) as err:
        plan_with(SITE_RPM_TOOLKIT, source="nvidia_repo")
    message = str(err.value)
    assert message.startswith("cuda_toolkit_existing=refuse (allowed: refuse (the default), adopt, replace)")
    assert (
        "/usr/local/cuda-13.0 is already there, owned by package hpc-site-cuda-13-0 13.0.2-1.site" in message
    )
    assert "it is not one of NVIDIA's CUDA packages" in message
    (entry,) = plan_with(SITE_RPM_TOOLKIT, source="nvidia_repo", existing="adopt")["toolkits"]
    assert entry["action"] == "adopt"


@pytest.mark.parametrize(
    ("name", "version", "nvidia"),
    [
        ("cuda-toolkit-13-0-config-common", "13.0", True),
        ("cuda-nvcc-13-0", "13.0.2", True),
        ("libcublas-dev-13-0", "13.0", True),
        ("libcublas-devel-13-0", "13.0", True),
        ("cuda-nvcc-12-9", "13.0", False),
        ("hpc-site-cuda-13-0", "13.0", False),
        ("nvidia-cuda-toolkit", "13.0", False),
        ("", "13.0", False),
    ],
)
def test_nvidias_toolkit_packages_by_name(name, version, nvidia):
    assert repo_plan.nvidia_toolkit_package(name, version) is nvidia


def test_switching_from_gpufleets_redist_tree_to_packages_is_explicit():
    with pytest.raises(
        stack.PlanError, match=r"gpufleet's redist install, and cuda_toolkit_source is nvidia_repo"
    ):
        plan_with(GPUFLEET_TOOLKIT, source="nvidia_repo")
    plan = plan_with(GPUFLEET_TOOLKIT, existing="replace", source="nvidia_repo", stamp="20261201T120000Z")
    assert plan["retire"] == [
        {"path": "/usr/local/cuda-13.0", "backup": "/usr/local/cuda-13.0.gpufleet-backup-20261201T120000Z"}
    ]
    assert plan["install"] == [] and plan["package_versions"] == ["13.0"]
    adopted = plan_with(GPUFLEET_TOOLKIT, existing="adopt", source="nvidia_repo")
    assert adopted["adopted"] == ["/usr/local/cuda-13.0"] and adopted["package_versions"] == []


def test_an_unknown_policy_names_the_variable():
    with pytest.raises(stack.PlanError, match=r"cuda_toolkit_existing=keep \(allowed: refuse"):
        plan_with(H200_DEB_TOOLKIT, existing="keep")


def test_the_default_redist_toolkit_is_the_whole_toolkit_and_verify_proves_cublas_and_curand():
    """Issue 36: a program that links cuBLAS failed on a host gpufleet provisioned with CUDA 13.0."""
    plan = cuda.plan(request(skip_compat=True), facts={})
    toolkit = plan["toolkits"][0]
    assert {"libcublas", "libcufft", "libcurand", "libcusolver", "libcusparse"} <= set(toolkit["components"])
    assert "libcublas" not in toolkit["optional_components"]
    assert "nsight_systems" in toolkit["optional_components"]
    assert "nvidia_driver" not in toolkit["components"]
    assert toolkit["component_sets"] == ["toolkit"]
    assert plan["verify"]["libraries"] == ["cublas", "curand"]


def test_the_compiler_set_verifies_no_library_and_packages_verify_them_all():
    compiler = cuda.plan(request(components=["compiler"], skip_compat=True), facts={})
    assert compiler["verify"]["libraries"] == []
    assert compiler["toolkits"][0]["optional_components"] == []
    both = request(versions=["12.9", "13.0"], components=["compiler", "libcublas"], skip_compat=True)
    both = cuda.plan(both)
    assert both["verify"]["libraries"] == ["cublas"]
    for source in ("nvidia_repo", "distro"):
        plan = cuda.plan(request(source=source, components=["compiler"], skip_compat=True), facts={})
        assert plan["verify"]["libraries"] == ["cublas", "curand"], source
        assert plan["toolkits"][0]["components"] == []


def test_no_component_at_all_is_refused_naming_the_variable():
    with pytest.raises(stack.PlanError, match=r"^cuda_toolkit_redist_components=\[\] \(allowed: a non-empty"):
        cuda.plan(request(components=[], skip_compat=True), facts={})


def test_every_cuda_package_on_the_h200_is_one_of_nvidias_toolkit_packages():
    """The patterns hold the real host's list (tests/data/h200-ubuntu2404: CUDA 13.0 from NVIDIA's apt
    repository), but for what is not the toolkit's: cuDNN, NCCL."""
    tsv = Path(__file__).resolve().parents[4] / "data" / "h200-ubuntu2404" / "dpkg-query-nvidia-cuda.tsv"
    names = [line.split("\t")[0] for line in tsv.read_text().splitlines() if line.strip()]
    toolkit = [n for n in names if not n.startswith(("libcudnn", "libnccl"))]
    assert len(toolkit) > 30
    assert [n for n in toolkit if not repo_plan.nvidia_toolkit_package(n, "13.0")] == []
