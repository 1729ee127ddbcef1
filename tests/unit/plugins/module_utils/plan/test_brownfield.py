"""Issue 12: who owns what is there, decided from fixture roots through the real probes, then the plans.

Each root is a host of one kind (the H200's real dpkg state, a runfile toolkit, a hand-made tree, a link made
outside update-alternatives, files gpufleet did not write, a foreign cuDNN tree, a source switch); the facts
come from probe_facts.gather on it, as nvidia_facts returns them, and the cuda/cudnn plans decide.
"""

import json

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cuda as plan_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cudnn as plan_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import stack
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts

from tests.data.facts import fakeroot

STAMP = "20261201T120000Z"
R131 = {"13.1": "13.1.0"}


def facts_of(root):
    return probe_facts.gather(
        str(root), gather_subset=["gpu", "cuda", "owners"], owner_paths=["/opt/nvidia/cudnn"], live=False
    )


def cuda_plan(root, versions=("13.0",), **kw):
    req = {
        "versions": list(versions),
        "default": "",
        "source": "redist",
        "verify_arch": "",
        "releases": {},
        "components": ["toolkit"],
        "machine": "x86_64",
        "skip_compat": True,
        "stamp": STAMP,
        "existing": "refuse",
        **kw,
    }
    return plan_cuda.plan(req, facts=facts_of(root))


def cudnn_plan(root, version="9.14.0", **kw):
    req = {
        "version": version,
        "cuda_major": "13",
        "extra_variants": [],
        "source": "redist",
        "prefix": "/opt/nvidia/cudnn",
        "keep_versions": 1,
        "ldconfig": True,
        "skip_compat": True,
        "existing": "refuse",
        "cuda_versions": ["13.0"],
        "cuda_default": "",
        "machine": "x86_64",
        "os_family": "Debian",
        **kw,
    }
    return plan_cudnn.plan(req, facts=facts_of(root), os_info={"distribution": "Ubuntu", "version": "24.04"})


def refused(func, *args, **kw):
    with pytest.raises(stack.PlanError) as err:
        func(*args, **kw)
    return str(err.value)


@pytest.fixture
def h200(tmp_path):
    return fakeroot.h200(tmp_path)


def toolkit_tree(root, path, version, **extra):
    fakeroot.write(root, f"{path}/version.json", json.dumps({"cuda": {"version": version}}))
    fakeroot.write(root, f"{path}/bin/nvcc", "#!/bin/sh\n", mode=0o755)
    for name, text in extra.items():
        fakeroot.write(root, f"{path}/{name}", text)


# ------------------------------------------------------------------------------------------ the real H200
def test_h200_redist_over_the_package_tree_is_refused_naming_the_package_of_nvcc(h200):
    message = refused(cuda_plan, h200)
    assert message.startswith("cuda_toolkit_existing=refuse (allowed: refuse (the default), adopt, replace)")
    assert "/usr/local/cuda-13.0 is already there, owned by package cuda-nvcc-13-0 13.0.88-1" in message


def test_h200_adopt_keeps_the_default_and_the_linker_cache_as_they_are(h200):
    plan = cuda_plan(h200, existing="adopt")
    assert plan["adopted"] == ["/usr/local/cuda-13.0"] and plan["install"] == []
    assert plan["default_changes"] == [] and plan["link_backups"] == []
    (change,) = plan["loader"]
    assert change["soname"] == "libcudart.so.13" and change["changes"] is False
    assert change["before"]["owner"]["name"] == "cuda-cudart-13-0"


def test_h200_a_new_default_toolkit_beside_the_packages_needs_system_default(h200):
    message = refused(cuda_plan, h200, versions=["13.0", "13.1"], existing="adopt", releases=R131)
    assert message.startswith("cuda_toolkit_system_default=False")
    assert "/usr/local/cuda points to /usr/local/cuda-13.0 (package cuda-nvcc-13-0 13.0.88-1" in message
    assert "/usr/local/cuda-13.1" in message and "cuda_toolkit_default to 13.0" in message
    kept = cuda_plan(h200, versions=["13.0", "13.1"], default="13.0", existing="adopt", releases=R131)
    assert kept["default_changes"] == [] and kept["install"][0]["dest"] == "/usr/local/cuda-13.1"
    moved = cuda_plan(h200, versions=["13.0", "13.1"], existing="adopt", system_default=True, releases=R131)
    assert {(c["name"], c["before"], c["after"]) for c in moved["default_changes"]} == {
        ("cuda", "/usr/local/cuda-13.0", "/usr/local/cuda-13.1"),
        ("cuda-13", "/usr/local/cuda-13.0", "/usr/local/cuda-13.1"),
    }


def test_h200_cudnn_redist_would_take_libcudnn_from_the_package(h200):
    """gpufleet-cudnn.conf sorts before x86_64-linux-gnu.conf: the apt cuDNN would stop being loaded."""
    message = refused(cudnn_plan, h200)
    assert message.startswith("cudnn_system_default=False")
    assert (
        "libcudnn.so.9: /lib/x86_64-linux-gnu/libcudnn.so.9 (package libcudnn9-cuda-13 9.14.0.64-1) -> "
        "/opt/nvidia/cudnn/current-cuda13/lib/libcudnn.so.9 (gpufleet)" in message
    )
    allowed = cudnn_plan(h200, system_default=True)
    assert allowed["loader"][0]["changes"] is True and allowed["ld_conf"]["wanted"] is True
    beside = cudnn_plan(h200, ldconfig=False)
    assert beside["loader"] == [] and beside["ld_conf"]["wanted"] is False


def test_h200_cudnn_adopt_uses_the_packages_copy_only_at_the_same_release(h200):
    plan = cudnn_plan(h200, existing="adopt")
    assert plan["install"] == [] and plan["adopted"] == ["libcudnn.so.9"]
    assert plan["ld_conf"]["wanted"] is False and plan["ld_conf"]["remove"] is False
    message = refused(cudnn_plan, h200, version="9.19.0", existing="adopt")
    assert "cudnn_existing=adopt" in message and "cuDNN 9.14.0, not 9.19.0" in message


def test_h200_the_default_source_keeps_nvidias_packages_as_they_are(h200):
    """Issue 36: with the roles' default source (nvidia_repo) the H200's own NVIDIA packages are the toolkit
    and the cuDNN the plans want: nothing is refused, moved or backed up; the alternatives stay on 13.0."""
    plan = cuda_plan(h200, source="nvidia_repo")
    (toolkit,) = plan["toolkits"]
    assert toolkit["action"] == "install" and toolkit["existing"]["owner"] == "package"
    assert plan["retire"] == [] and plan["link_backups"] == [] and plan["default_changes"] == []
    assert plan["verify"]["libraries"] == ["cublas", "curand"]
    cudnn = cudnn_plan(h200, source="nvidia_repo")
    assert cudnn["transition"] in (None, {}) and cudnn["redist_install"] == []


# --------------------------------------------------------------------------------------- other owners
def test_a_runfile_toolkit_is_refused_then_replaced_into_a_dated_backup(tmp_path):
    toolkit_tree(tmp_path, "/usr/local/cuda-12.4", "12.4.1", **{"bin/cuda-uninstaller": "#!/bin/sh\n"})
    message = refused(cuda_plan, tmp_path, versions=["12.4"])
    assert "owned by NVIDIA's runfile installer (bin/cuda-uninstaller)" in message
    (entry,) = cuda_plan(tmp_path, versions=["12.4"], existing="replace")["install"]
    assert (entry["action"], entry["backup"]) == ("replace", f"/usr/local/cuda-12.4.gpufleet-backup-{STAMP}")


def test_a_directory_holding_only_a_hand_unpacked_cudnn_is_not_a_toolkit_to_adopt(tmp_path):
    fakeroot.tarball(tmp_path, "/usr/local/cuda-12.9", "9.10.2")
    assert "owned by unknown" in refused(cuda_plan, tmp_path, versions=["12.9"])
    assert "holds no CUDA toolkit to adopt" in refused(
        cuda_plan, tmp_path, versions=["12.9"], existing="adopt"
    )
    (entry,) = cuda_plan(tmp_path, versions=["12.9"], existing="replace")["install"]
    assert entry["replace"] is True


def test_a_file_where_the_toolkit_goes_is_refused_naming_the_versions_variable(tmp_path):
    fakeroot.write(tmp_path, "/usr/local/cuda-12.9", "not a tree\n")
    for existing in plan_cuda.EXISTING_POLICIES:
        message = refused(cuda_plan, tmp_path, versions=["12.9"], existing=existing)
        assert (
            message.startswith("cuda_toolkit_versions=12.9") and "/usr/local/cuda-12.9 is a file" in message
        )


def test_a_plain_link_made_by_a_runfile_is_left_or_backed_up_never_silently_replaced(tmp_path):
    toolkit_tree(tmp_path, "/usr/local/cuda-12.4", "12.4.1", **{"bin/cuda-uninstaller": "#!/bin/sh\n"})
    fakeroot.link(tmp_path, "/usr/local/cuda", "/usr/local/cuda-12.4")
    message = refused(cuda_plan, tmp_path, versions=["13.0"])
    assert "/usr/local/cuda is a symlink to /usr/local/cuda-12.4 made outside update-alternatives" in message
    adopted = cuda_plan(tmp_path, versions=["13.0"], existing="adopt")
    assert adopted["alternatives_args"] == ["--skip=cuda", "13.0", "13.0"]
    replaced = cuda_plan(tmp_path, versions=["13.0"], existing="replace")
    assert replaced["link_backups"] == [
        {"path": "/usr/local/cuda", "backup": f"/usr/local/cuda.gpufleet-backup-{STAMP}"}
    ]


def test_gpufleets_file_names_holding_someone_elses_file_are_refused(tmp_path):
    fakeroot.write(tmp_path, "/etc/profile.d/gpufleet-cuda.sh", "export PATH=/opt/site/cuda/bin:$PATH\n")
    assert "/etc/profile.d/gpufleet-cuda.sh exists and gpufleet did not write it" in refused(
        cuda_plan, tmp_path
    )
    assert cuda_plan(tmp_path, existing="replace")["profile"]["backup"] is True
    fakeroot.write(tmp_path, "/etc/profile.d/gpufleet-cuda.sh", plan_cuda.PROFILE_CONTENT)
    assert cuda_plan(tmp_path)["profile"]["backup"] is False


def test_a_foreign_tree_at_gpufleets_cudnn_path_is_refused_then_replaced(tmp_path):
    fakeroot.tarball(tmp_path, "/opt/nvidia/cudnn/9.14.0.64-cuda13", "9.14.0")
    message = refused(cudnn_plan, tmp_path)
    assert message.startswith("cudnn_existing=refuse")
    assert "/opt/nvidia/cudnn/9.14.0.64-cuda13 is already there" in message
    assert cudnn_plan(tmp_path, existing="replace")["variants"][0]["replace"] is True
    fakeroot.write(tmp_path, "/opt/nvidia/cudnn/9.14.0.64-cuda13/.gpufleet-redist.json", "{}")
    assert cudnn_plan(tmp_path)["variants"][0]["replace"] is False


def test_switching_cudnn_from_redist_to_packages_is_explicit(tmp_path):
    fakeroot.write(tmp_path, plan_cudnn.LD_CONF, "# Managed by gpufleet (cudnn)\n/opt/nvidia/cudnn/x/lib\n")
    fakeroot.write(tmp_path, "/opt/nvidia/cudnn/9.14.0.64-cuda13/.gpufleet-redist.json", "{}")
    message = refused(cudnn_plan, tmp_path, source="nvidia_repo")
    assert "switching sources is explicit" in message and "cudnn_existing: replace" in message
    plan = cudnn_plan(tmp_path, source="nvidia_repo", existing="replace")
    assert plan["transition"] == {
        "from": "redist",
        "to": "nvidia_repo",
        "removed": [plan_cudnn.LD_CONF],
        "kept": ["/opt/nvidia/cudnn/9.14.0.64-cuda13"],
    }
    assert plan["ld_conf"]["remove"] is True


def test_a_linker_file_gpufleet_did_not_write_is_never_removed(tmp_path):
    fakeroot.write(tmp_path, plan_cudnn.LD_CONF, "/srv/site/cudnn/lib\n")
    plan = cudnn_plan(tmp_path, source="nvidia_repo")
    assert plan["ld_conf"]["wanted"] is False and plan["ld_conf"]["remove"] is False


def test_a_hand_copy_first_in_the_linker_order_is_reported_and_verify_uses_gpufleets_path(h200):
    """NVIDIA's old tarball guide: cuDNN copied into the toolkit, found through 000_cuda.conf first."""
    lib = "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
    fakeroot.write(h200, f"{lib}/libcudnn.so.9.14.0", "ELF")
    fakeroot.link(h200, f"{lib}/libcudnn.so.9", "libcudnn.so.9.14.0")
    fakeroot.ld_cache(h200, [("libcudnn.so.9", "/usr/local/cuda/targets/x86_64-linux/lib/libcudnn.so.9")])
    plan = cudnn_plan(h200)
    (change,) = plan["loader"]
    assert change["shadowed"] is True and change["changes"] is False
    assert change["before"]["owner"]["kind"] == "tarball"
    assert plan["main"]["verify_lib"] == "/opt/nvidia/cudnn/current-cuda13/lib/libcudnn.so.9"
    message = refused(cudnn_plan, h200, system_default=True)
    assert "libcudnn.so.9 stays /usr/local/cuda/targets/x86_64-linux/lib/libcudnn.so.9" in message
    assert "gpufleet does not reorder files it did not write" in message


def test_the_default_refusal_says_how_to_keep_a_default_that_is_not_listed(h200):
    message = refused(cuda_plan, h200, versions=["13.1"], existing="adopt", releases=R131)
    assert "add 13.0 to cuda_toolkit_versions with cuda_toolkit_existing: adopt" in message


@pytest.mark.parametrize(
    ("func", "var"), [(cuda_plan, "cuda_toolkit_existing"), (cudnn_plan, "cudnn_existing")]
)
def test_an_unknown_policy_names_the_variable_and_what_is_allowed(tmp_path, func, var):
    message = refused(func, tmp_path, existing="overwrite")
    assert message.startswith(f"{var}=overwrite (allowed: refuse (the default), adopt, replace)")


def test_a_further_build_beside_packages_refuses_a_foreign_tree_at_its_path(tmp_path):
    # cudnn_source nvidia_repo: the CUDA 12 build is a redist tree, checked like one
    fakeroot.tarball(tmp_path, "/opt/nvidia/cudnn/9.14.0.64-cuda12", "9.14.0")
    extra = [{"version": "9.14.0", "cuda_major": "12"}]
    message = refused(cudnn_plan, tmp_path, source="nvidia_repo", extra_variants=extra)
    assert "/opt/nvidia/cudnn/9.14.0.64-cuda12 is already there" in message
    plan = cudnn_plan(tmp_path, source="nvidia_repo", extra_variants=extra, existing="replace")
    assert plan["redist_install"][0]["replace"] is True
