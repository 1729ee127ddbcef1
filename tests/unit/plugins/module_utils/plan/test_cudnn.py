"""plan/cudnn.py: the main build's CUDA major (THE default CUDA), validation, trees/links, compat."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cudnn, stack

H200 = {"device_id": "0x2335", "subsystem_vendor_id": "0x10de", "subsystem_device_id": "0x18bf"}


def request(**kwargs):
    req = {
        "version": "9.14.0",
        "cuda_major": "",
        "extra_variants": [],
        "source": "redist",
        "prefix": "/opt/nvidia/cudnn",
        "keep_versions": 1,
        "ldconfig": True,
        "skip_compat": False,
        "existing": "refuse",
        "cuda_versions": ["13.0"],
        "cuda_default": "",
        "controller_cache": False,
        "controller_cache_dir": "/var/tmp/gpufleet-redist",
        "base_url": "https://developer.download.nvidia.com/compute",
        "machine": "x86_64",
        "os_family": "Debian",
    }
    req.update(kwargs)
    return req


@pytest.mark.parametrize(
    ("cuda_versions", "cuda_default", "expected"),
    [
        (
            ["12.9"],
            None,
            "12",
        ),  # the bug: the cudnn role fell back to CUDA 13 while the toolkit installs 12.9
        (["12.9", "13.0"], "", "13"),
        (["12.9", "13.0"], "12.9", "12"),
        (["13.0"], None, "13"),
    ],
)
def test_main_build_follows_the_one_default_cuda(cuda_versions, cuda_default, expected):
    plan = cudnn.plan(request(cuda_versions=cuda_versions, cuda_default=cuda_default), facts={})
    assert plan["main"]["cuda_major"] == expected


def test_explicit_cuda_major_wins():
    assert (
        cudnn.plan(request(cuda_major="12", cuda_versions=["13.0"]), facts={})["main"]["cuda_major"] == "12"
    )


def test_unknown_cuda_major_is_refused_before_any_manifest():
    """The bug: cudnn_cuda_major 14 in --check reached NVIDIA's server; the plan refuses it."""
    with pytest.raises(stack.PlanError) as err:
        cudnn.plan(request(cuda_major="14"), facts={})
    assert str(err.value) == (
        "cudnn_cuda_major=14 (allowed: a CUDA major such as 12 or 13 that gpufleet knows cuDNN builds for: "
        "11, 12, 13)"
    )


def test_an_unknown_major_from_the_default_cuda_says_where_it_came_from():
    with pytest.raises(
        stack.PlanError, match="cudnn_cuda_major is empty: the major of the default CUDA toolkit 14.0"
    ):
        cudnn.plan(request(cuda_versions=["14.0"]), facts={})


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"version": "9.x"}, "cudnn_version=9.x (allowed: X.Y.Z or X.Y.Z.B"),
        ({"cuda_major": "thirteen"}, "cudnn_cuda_major=thirteen (allowed: a CUDA major"),
        (
            {"extra_variants": [{"version": "9.x", "cuda_major": "12"}]},
            "cudnn_extra_variants[0].version=9.x (allowed: X.Y.Z",
        ),
        (
            {"extra_variants": [{"version": "9.14.0", "cuda_major": "13"}]},
            "cudnn_extra_variants[0].cuda_major=13 (allowed: a CUDA major no other build",
        ),
        ({"source": "distro"}, "cudnn_source: distro is not possible"),
    ],
)
def test_validation_names_the_one_wrong_variable(kwargs, expected):
    with pytest.raises(stack.PlanError) as err:
        cudnn.plan(request(**kwargs), facts={})
    assert expected in str(err.value)


def test_trees_links_prune_patterns_ld_conf_and_verify():
    plan = cudnn.plan(
        request(cuda_major="13", extra_variants=[{"version": "9.14.0", "cuda_major": 12}]), facts={}
    )
    main, extra = plan["variants"]
    assert main["dest"] == "/opt/nvidia/cudnn/{version}-cuda13"
    assert main["link"] == "/opt/nvidia/cudnn/current-cuda13"
    assert main["prune_pattern"] == "^[0-9.]+-cuda13$"
    assert main["verify_lib"] == "libcudnn.so.9"
    assert extra["verify_lib"] == "/opt/nvidia/cudnn/current-cuda12/lib/libcudnn.so.9"
    assert extra["label"] == "cudnn_extra_variants"
    assert plan["ld_conf"]["content"].endswith("/opt/nvidia/cudnn/current-cuda13/lib\n")
    assert plan["ld_conf"]["wanted"] is True
    assert plan["redist"]["platform"] == "linux-x86_64"


def test_each_build_carries_its_redist_release_and_components():
    """What nvidia_redist reads for a build is decided here (the module resolves no release)."""
    plan = cudnn.plan(
        request(
            version="9.14.0.64", cuda_major="13", extra_variants=[{"version": "9.12.0", "cuda_major": 12}]
        ),
        facts={},
    )
    main, extra = plan["variants"]
    assert (main["release"], main["components"], main["component_version"]) == (
        "9.14.0",
        ["cudnn"],
        "9.14.0.64",
    )
    assert (extra["release"], extra["components"], extra["component_version"]) == ("9.12.0", ["cudnn"], "")


def test_with_packages_a_further_build_is_a_redist_tree_beside_them():
    # NVIDIA's libcudnn9-cuda-12 and -cuda-13 conflict: the CUDA 12 build cannot be a second package set
    plan = cudnn.plan(
        request(
            source="nvidia_repo", cuda_major="13", extra_variants=[{"version": "9.14.0", "cuda_major": 12}]
        ),
        facts={},
    )
    main, extra = plan["variants"]
    assert (main["source"], extra["source"]) == ("nvidia_repo", "redist")
    assert plan["redist_install"] == [extra]
    assert plan["install"] == [main, extra]
    assert main["verify_lib"] == "libcudnn.so.9"  # the packages' copy, through the linker cache
    assert extra["verify_lib"] == "/opt/nvidia/cudnn/current-cuda12/lib/libcudnn.so.9"  # by path, outside it
    assert main["verify_dir"] == "/usr/lib/x86_64-linux-gnu"  # the packages' copy must resolve there
    assert extra["verify_dir"] == "/opt/nvidia/cudnn"  # the tree's below the prefix (molecule repo caught it)
    assert plan["ld_conf"]["wanted"] is False
    assert plan["redist"]["platform"] == "linux-x86_64"
    alone = cudnn.plan(request(source="nvidia_repo", cuda_major="13"), facts={})
    assert alone["redist_install"] == [] and alone["redist"]["platform"] is None


def test_without_the_ld_cache_the_main_build_is_verified_by_path():
    plan = cudnn.plan(request(ldconfig=False), facts={})
    assert plan["main"]["verify_lib"] == "/opt/nvidia/cudnn/current-cuda13/lib/libcudnn.so.9"
    assert plan["ld_conf"]["wanted"] is False


@pytest.mark.parametrize(
    ("os_family", "machine", "expected"),
    [
        ("Debian", "x86_64", "/usr/lib/x86_64-linux-gnu"),
        ("Debian", "aarch64", "/usr/lib/aarch64-linux-gnu"),
        ("RedHat", "x86_64", "/usr/lib64"),
    ],
)
def test_package_library_directory(os_family, machine, expected):
    plan = cudnn.plan(request(source="nvidia_repo", os_family=os_family, machine=machine), facts={})
    assert plan["main"]["verify_dir"] == expected


def test_the_role_and_the_preflight_refuse_the_same_cudnn_9_12_for_cuda_11_plan():
    """The bug: preflight.yml printed OK for cuda_toolkit_versions [13.0], cuDNN 9.12.0, CUDA 11."""
    req = request(version="9.12.0", cuda_major="11", cuda_versions=["13.0"])
    role = cudnn.plan(req, facts={})["compat"]
    builds = cudnn.variants(req)
    preflight = stack.run_checks(
        cudnn.checks(builds, req["cuda_versions"], req["cuda_default"]), stack.compat_inputs({}, {})
    )
    expected = "cuDNN 9.12.0 has no build for CUDA 11 (the last is 9.10.2)"
    assert role["errors"] == preflight["errors"]
    assert expected in role["errors"][0]


def test_the_default_cuda_joins_the_check_of_its_major_only():
    checks = cudnn.checks(
        cudnn.variants(
            request(
                cuda_versions=["12.9", "13.0"], extra_variants=[{"version": "9.14.0", "cuda_major": "12"}]
            )
        ),
        ["12.9", "13.0"],
        "",
    )
    assert checks[0][1] == {"cudnn_version": "9.14.0", "cudnn_cuda_major": "13", "cuda_version": "13.0"}
    assert "cuda_version" not in checks[1][1]


def test_compat_uses_the_facts_gpus_and_loaded_driver():
    facts = {"gpus": [H200], "driver": {"loaded_version": "575.57.08", "loaded_kernel_module": "open"}}
    found = cudnn.plan(request(cuda_major="13"), facts=facts)["compat"]
    assert found["gpus"][0]["name"] == "NVIDIA H200"
    assert any("needs driver >= 580.65.06" in e for e in found["errors"]), found["errors"]
