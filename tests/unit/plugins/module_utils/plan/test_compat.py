"""Compatibility rules, table-driven: every CUDA release, every architecture cut-off, every rule."""

import datetime

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda as kb_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cudnn as kb_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as compat_rules
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.compat import CompatInputError, check
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import parse_version
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.plugins.module_utils.plan.compat_cases import B200, H200, K80, RTX5090, T4, V100, run


def lower(version, step=1):
    """A driver version just below ``version`` ("580.65.06" -> "580.65.5")."""
    v = parse_version(version)
    parts = list(v.parts)
    if parts[-1] >= step:
        parts[-1] -= step
    else:
        parts[-2] -= 1
        parts[-1] = 99
    return ".".join(str(p) for p in parts) if len(parts) > 1 else f"{parts[0] - 1}.99"


def minor_warnings(result):
    return [w for w in result["warnings"] if "minor-version compatibility" in w]


# ---------------------------------------------------------------------------------------------------
# CUDA -> driver: every row of the table
# ---------------------------------------------------------------------------------------------------
KNOWN_ROWS = [(v, m) for v, _label, m, _conf in kb_cuda.CUDA_RELEASES if m]
UNKNOWN_ROWS = [v for v, _label, m, _conf in kb_cuda.CUDA_RELEASES if not m]


def floor_of(version):
    v = parse_version(version)
    if v.parts[:2] == (11, 0):
        return kb_cuda.CUDA_11_0_FLOOR
    return kb_cuda.CUDA_MAJOR_FLOORS[v.major][0]


@pytest.mark.parametrize(("cuda", "min_driver"), KNOWN_ROWS)
def test_cuda_release_on_its_minimum_driver(cuda, min_driver):
    result = run(gpus=[], cuda_version=cuda, driver_version=min_driver)
    assert result["errors"] == []
    assert minor_warnings(result) == []


@pytest.mark.parametrize(("cuda", "min_driver"), KNOWN_ROWS)
def test_cuda_release_between_floor_and_minimum(cuda, min_driver):
    floor = floor_of(cuda)
    result = run(gpus=[], cuda_version=cuda, driver_version=floor)
    assert result["errors"] == []
    if parse_version(min_driver) > parse_version(floor):
        (warning,) = minor_warnings(result)
        assert f"CUDA {cuda} runs on driver {floor} only through minor-version compatibility" in warning
        assert f"its own minimum is {min_driver}" in warning
    else:
        assert minor_warnings(result) == []


@pytest.mark.parametrize(("cuda", "min_driver"), KNOWN_ROWS)
def test_cuda_release_below_floor_is_refused(cuda, min_driver):
    below = lower(floor_of(cuda))
    result = run(gpus=[], cuda_version=cuda, driver_version=below)
    assert result["compatible"] is False
    (error,) = result["errors"]
    assert f"CUDA {cuda} needs driver >= {floor_of(cuda)}" in error
    assert parse_version(min_driver) >= parse_version(floor_of(cuda))


@pytest.mark.parametrize(("cuda", "min_driver"), KNOWN_ROWS)
def test_cuda_release_family_uses_its_ga(cuda, min_driver):
    family = str(parse_version(cuda).truncate(2))
    ga = compat_rules.cuda_min_driver(family)
    assert parse_version(ga) <= parse_version(compat_rules.cuda_min_driver(cuda)) or cuda.startswith("11.0.1")
    assert compat_rules.cuda_min_driver(cuda) == min_driver


@pytest.mark.parametrize("cuda", UNKNOWN_ROWS)
def test_cuda_release_with_unknown_minimum(cuda):
    assert compat_rules.cuda_min_driver(cuda) is None
    hint = kb_cuda.UNKNOWN_MIN_BRANCH_HINT[str(parse_version(cuda).truncate(2))]
    ok = run(gpus=[], cuda_version=cuda, driver_branch=str(hint[0]))
    assert ok["errors"] == []
    assert not [w for w in ok["warnings"] if "minimum driver is not known" in w]
    floor = run(gpus=[], cuda_version=cuda, driver_branch="580")
    assert floor["errors"] == []
    assert any("its minimum driver is not known to the knowledge base" in w for w in floor["warnings"])
    refused = run(gpus=[], cuda_version=cuda, driver_branch="575")
    assert refused["compatible"] is False


@pytest.mark.parametrize(
    ("cuda", "branch", "expect"),
    [
        ("13.0", "580", "ok"),
        ("13.2", "580", "minor"),
        ("13.2", "595", "ok"),
        ("12.8", "570", "ok"),
        ("12.8", "535", "minor"),
        ("12.8", "525", "minor"),
        ("12.8", "520", "error"),
        ("12.2", "580", "ok"),
        ("11.8", "470", "minor"),
        ("11.4", "450", "minor"),
        ("11.4", "440", "error"),
        ("13.0", "575", "error"),
    ],
)
def test_cuda_driver_by_branch(cuda, branch, expect):
    result = run(gpus=[], cuda_version=cuda, driver_branch=branch)
    assert (result["errors"] != []) is (expect == "error")
    assert (minor_warnings(result) != []) is (expect == "minor")


def test_cross_major_refused_with_advice():
    result = run(gpus=[H200], cuda_version="13.0", driver_branch="535")
    (error,) = result["errors"]
    assert error == (
        "CUDA 13.0 needs driver >= 580.65.06 (the CUDA 13 floor, branch R580 or newer); driver branch R535 "
        "supports CUDA up to 12.2: set driver_branch >= 580, or cuda_version <= 12.2, or (data-center GPUs "
        "only) cuda_forward_compat: true"
    )


def test_forward_compat_data_center_only():
    ok = run(gpus=[H200, H200], cuda_version="13.0", driver_version="535.104.05", cuda_forward_compat=True)
    assert ok["errors"] == []
    assert any("install cuda-compat-13-0" in w for w in ok["warnings"])
    geforce = run(gpus=[H200, RTX5090], cuda_version="13.0", driver_branch="575", cuda_forward_compat=True)
    assert any("only for data-center GPUs; NVIDIA GeForce RTX 5090" in e for e in geforce["errors"])
    cc_only = run(
        gpus=[{"compute_capability": "9.0"}],
        cuda_version="13.0",
        driver_branch="575",
        cuda_forward_compat=True,
    )
    assert any("is not (or not known to be)" in e for e in cc_only["errors"])
    nogpu = run(gpus=[], cuda_version="13.0", driver_branch="575", cuda_forward_compat=True)
    assert any("no GPU was found or given" in e for e in nogpu["errors"])


# ---------------------------------------------------------------------------------------------------
# CUDA -> GPU: every architecture cut-off
# ---------------------------------------------------------------------------------------------------
def _families():
    return compat_rules.cuda_families()


def _next_family(version):
    fams = [f for f in _families() if parse_version(f) > parse_version(version)]
    return fams[0] if fams else None


def _prev_family(version):
    fams = [f for f in _families() if parse_version(f) < parse_version(version)]
    return fams[-1] if fams else None


LAST_CUTS = [(cc, last, conf) for cc, (_f, last, conf) in kb_cuda.CC_CUDA_RANGE.items() if last]
FIRST_CUTS = [
    (cc, first, conf)
    for cc, (first, _l, conf) in kb_cuda.CC_CUDA_RANGE.items()
    if parse_version(first) > parse_version(compat_rules.OLDEST_CUDA)
]


@pytest.mark.parametrize(("cc", "last", "conf"), LAST_CUTS)
def test_last_cuda_per_compute_capability(cc, last, conf):
    gpu = {"compute_capability": cc}
    if parse_version(last) >= parse_version(compat_rules.OLDEST_CUDA):
        assert run(gpus=[gpu], cuda_version=last)["errors"] == []
    after = (
        _next_family(last)
        if parse_version(last) >= compat_rules.OLDEST_CUDA
        else str(compat_rules.OLDEST_CUDA)
    )
    result = run(gpus=[gpu], cuda_version=after)
    findings = result["errors"] if conf == "high" else result["warnings"]
    arch = kb_arch.CC_ARCH[cc]
    assert any(
        f"is not supported by CUDA {after}; the last CUDA for {arch}" in m
        and f"set cuda_version <= {last}" in m
        for m in findings
    ), findings
    assert (result["compatible"] is False) is (conf == "high")


@pytest.mark.parametrize(("cc", "first", "conf"), FIRST_CUTS)
def test_first_cuda_per_compute_capability(cc, first, conf):
    gpu = {"compute_capability": cc}
    assert run(gpus=[gpu], cuda_version=first)["errors"] == []
    before = _prev_family(first)
    result = run(gpus=[gpu], cuda_version=before)
    assert result["compatible"] is False
    assert any(f"set cuda_version >= {first}" in e for e in result["errors"])


def test_issue_example_message():
    result = run(gpus=[V100], cuda_version="13.0", driver_branch="580")
    assert result["errors"] == [
        "Tesla V100-SXM2-32GB (Volta, sm_70) is not supported by CUDA 13.0; the last CUDA for Volta is 12.9: "
        "set cuda_version <= 12.9"
    ]


def test_kepler_message_names_the_sm():
    result = run(gpus=[K80], cuda_version="12.0")
    assert "the last CUDA for Kepler sm_37 is 11.8" in result["errors"][0]


# ---------------------------------------------------------------------------------------------------
# Driver branch -> GPU
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gpu", "legacy"),
    [(K80, 470), (V100, 580), ({"compute_capability": "6.1"}, 580), ({"compute_capability": "5.2"}, 580)],
)
def test_legacy_branches(gpu, legacy):
    assert not [e for e in run(gpus=[gpu], driver_branch=str(legacy))["errors"] if "legacy" in e]
    result = run(gpus=[gpu], driver_branch=str(legacy + 10))
    assert any(
        f"only up to the legacy driver branch R{legacy}" in e and f"driver_branch {legacy}" in e
        for e in result["errors"]
    )


def test_kepler_branch_unmaintained_warning():
    result = run(gpus=[K80], driver_branch="470")
    assert any("no longer maintained" in w for w in result["warnings"])


@pytest.mark.parametrize(
    ("gpu", "branch", "level"),
    [(B200, "565", "error"), (B200, "570", None), (H200, "515", "warning"), (H200, "520", None)],
)
def test_minimum_branch_per_architecture(gpu, branch, level):
    result = run(gpus=[gpu], driver_branch=branch, kernel_module="open" if gpu is B200 else "auto")
    hits = {
        "error": [e for e in result["errors"] if "or newer; driver branch" in e],
        "warning": [w for w in result["warnings"] if "or newer; driver branch" in w],
    }
    for key, found in hits.items():
        assert bool(found) is (key == level), (key, found)


# ---------------------------------------------------------------------------------------------------
# Kernel module flavor
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gpus", "kernel_module", "branch", "error", "recommended"),
    [
        ([H200], "auto", "580", None, "open"),
        ([H200], "proprietary", "580", None, "open"),
        ([H200], "open", "580", None, "open"),
        ([H200], "auto", "550", None, "open"),
        ([V100], "open", "580", "needs the proprietary kernel module", "proprietary"),
        ([V100], "auto", "580", None, "proprietary"),
        ([B200], "proprietary", "580", "needs the open kernel module", "open"),
        ([{"pci_device_id": "0x2342"}], "proprietary", "580", "needs the open kernel module", "open"),
        ([V100, B200], "auto", "580", "no kernel module flavor drives both", None),
        ([T4], "open", "510", "open kernel modules exist from driver branch R515", "open"),
    ],
)
def test_kernel_module(gpus, kernel_module, branch, error, recommended):
    result = run(gpus=gpus, kernel_module=kernel_module, driver_branch=branch)
    flavor_errors = [e for e in result["errors"] if "kernel module" in e]
    if error:
        assert any(error in e for e in flavor_errors), flavor_errors
    else:
        assert flavor_errors == []
    assert result["recommended"]["kernel_module"] == recommended


def test_resolve_kernel_module_default_flavor_by_branch():
    assert (
        compat_rules.resolve_kernel_module("auto", 550, [compat_rules.resolve_gpus([T4])[0][0]])
        == "proprietary"
    )
    assert compat_rules.resolve_kernel_module("auto", 560, []) == "open"


def test_open_alpha_warning_for_geforce():
    result = run(gpus=[{"pci_device_id": "0x1E04"}], kernel_module="open", driver_branch="535")
    assert any("alpha quality" in w for w in result["warnings"])


@pytest.mark.parametrize(
    ("branch", "refused"), [("580", False), ("615", False), ("620", True), ("700", True)]
)
def test_proprietary_removed_from_r620(branch, refused):
    """R620 guide 4.1 "Proprietary Kernel Modules Removed"; the R615 guide still documents both flavors:
    https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf"""
    result = run(gpus=[H200], kernel_module="proprietary", driver_branch=branch)
    hits = [e for e in result["errors"] if "ships only the open kernel modules" in e]
    assert bool(hits) is refused
    if refused:
        assert hits == [
            f"driver branch R{branch} ships only the open kernel modules (NVIDIA removed the proprietary "
            "ones from R620): set kernel_module: open, or driver_branch < 620"
        ]
    assert not [w for w in result["warnings"] if "ships only the open kernel modules" in w]


# ---------------------------------------------------------------------------------------------------
# cuDNN
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cudnn", "major", "error"),
    [
        ("9.10.2", 11, None),
        ("9.10.2.21", 11, None),
        ("9.11.0", 11, "has no build for CUDA 11 (the last is 9.10.2)"),
        ("9.14.0", 12, None),
        ("8.9.7", 12, None),
        ("9.12.0", 13, None),
        ("9.14.0.64", 13, None),
        ("9.11.0", 13, "has no build for CUDA 13 (the first is 9.12.0)"),
        ("8.9.7", 13, "has no build for CUDA 13"),
    ],
)
def test_cudnn_variants(cudnn, major, error):
    result = run(gpus=[], cudnn_version=cudnn, cudnn_cuda_major=major)
    if error:
        assert any(error in e for e in result["errors"]), result["errors"]
    else:
        assert result["errors"] == []


@pytest.mark.parametrize(
    ("major", "driver", "ok"),
    [
        (13, "580.65.06", True),
        (13, "575.57.08", False),
        (12, "525.60.13", True),
        (12, "525.60.12", False),
        (11, "450.80.02", True),
        (11, "450.51.06", False),
    ],
)
def test_cudnn_minimum_driver(major, driver, ok):
    cudnn = "9.10.2" if major == 11 else "9.14.0"
    result = run(gpus=[], cudnn_version=cudnn, cudnn_cuda_major=major, driver_version=driver)
    assert [e for e in result["errors"] if "for CUDA" in e and "needs driver" in e] != ok


@pytest.mark.parametrize(
    ("gpu", "cudnn", "major", "level"),
    [
        (V100, "9.14.0", 13, "error"),
        (V100, "9.17.0", 12, "error"),
        (V100, "9.14.0", 12, "error"),  # nvidia-cudnn-cu12 9.14.0.64: sm_75+ only
        (V100, "9.10.2", 12, None),
        (K80, "9.0.0", 12, "error"),
        (K80, "8.5.0", 11, None),
        (H200, "9.14.0", 13, None),
        (T4, "9.28.1", 13, None),
    ],
)
def test_cudnn_compute_capability(gpu, cudnn, major, level):
    result = run(gpus=[gpu], cudnn_version=cudnn, cudnn_cuda_major=major)
    errors = [e for e in result["errors"] if "needs compute capability" in e]
    warnings = [w for w in result["warnings"] if "needs compute capability" in w]
    assert bool(errors) is (level == "error")
    assert bool(warnings) is (level == "warning")


def test_cudnn_cuda_major_defaults_to_cuda_major():
    result = run(gpus=[], cuda_version="13.0", cudnn_version="9.10.2")
    assert any("has no build for CUDA 13" in e for e in result["errors"])


# ---------------------------------------------------------------------------------------------------
# OS
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("os_info", "cuda", "branch", "error", "warning"),
    [
        (
            {"distribution": "ubuntu", "version": "20.04"},
            "13.0",
            None,
            "does not support ubuntu 20.04",
            "not in NVIDIA's",
        ),
        ({"distribution": "ubuntu", "version": "20.04"}, "12.9", None, None, "not in NVIDIA's driver"),
        (
            {"distribution": "ubuntu", "version": "20.04"},
            "12.9",
            "575",
            None,
            "not in NVIDIA's driver installation",
        ),
        (
            {"distribution": "Ubuntu", "version": "22.04"},
            "11.6",
            None,
            None,
            "repository starts at CUDA 11.7",
        ),
        ({"distribution": "debian", "version": "12"}, "12.2", None, None, "repository starts at CUDA 12.3"),
        ({"distribution": "debian", "version": "12"}, "13.0", "580", None, None),
        ({"distribution": "rhel", "version": "9.4"}, "13.0", "580", None, None),
        (
            {"distribution": "centos", "version": "7"},
            "12.2",
            "535",
            None,
            "not in NVIDIA's driver installation",
        ),
        ({"distribution": "plan9", "version": "4"}, None, "580", None, "not in NVIDIA's driver installation"),
        ({"distribution": "", "version": ""}, "13.0", "580", None, None),
    ],
)
def test_os(os_info, cuda, branch, error, warning):
    result = run(gpus=[H200], os_info=os_info, cuda_version=cuda, driver_branch=branch)
    os_errors = [e for e in result["errors"] if "support" in e and os_info["distribution"].lower() in e]
    assert bool(os_errors) is bool(error)
    if error:
        assert error in os_errors[0]
    os_warnings = [w for w in result["warnings"] if "repository" in w or "installation guide" in w]
    assert bool(os_warnings) is bool(warning)
    if warning:
        assert warning in os_warnings[0]


# ---------------------------------------------------------------------------------------------------
# Driver lifecycle and future versions
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("branch", "expect"),
    [
        ("580", None),
        ("595", None),
        ("570", "has reached its end of life"),
        ("535", "has reached its end of life"),
        ("590", "short-lived new feature branch"),
        ("585", "not a branch the knowledge base knows"),
        ("700", "the knowledge base does not know it yet"),
    ],
)
def test_lifecycle(branch, expect):
    result = run(gpus=[H200], driver_branch=branch)
    hits = [
        w for w in result["warnings"] if "branch" in w and ("life" in w or "know" in w or "short-lived" in w)
    ]
    if expect:
        assert any(expect in w for w in hits), hits
    else:
        assert hits == []


def test_lifecycle_depends_on_today():
    assert not any(
        "end of life" in w
        for w in check(gpus=[H200], driver_branch="570", today=datetime.date(2025, 1, 1))["warnings"]
    )


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        (
            {"cuda_version": "14.0", "driver_branch": "580"},
            "CUDA 14.0: the knowledge base does not know it yet",
        ),
        (
            {"cuda_version": "13.6", "driver_branch": "620"},
            "CUDA 13.6: the knowledge base does not know it yet",
        ),
        (
            {"cudnn_version": "10.0", "cudnn_cuda_major": "13"},
            "cuDNN 10.0: the knowledge base does not know it yet",
        ),
        (
            {"cudnn_version": "9.30.0", "cudnn_cuda_major": "13"},
            "cuDNN 9.30.0: the knowledge base does not know",
        ),
        ({"cudnn_version": "9.28.1.4", "cudnn_cuda_major": "13"}, None),
        (
            {"cudnn_version": "10.0", "cudnn_cuda_major": "14"},
            "cuDNN builds for CUDA 14 are not in the knowledge base",
        ),
        ({"cuda_version": "12.8.7"}, "CUDA 12.8.7 is not a release the knowledge base knows"),
        (
            {"cudnn_version": "8.6.0", "cudnn_cuda_major": "11"},
            "older than the releases the knowledge base details",
        ),
    ],
)
def test_future_versions_warn(kwargs, text):
    result = run(gpus=[H200], **kwargs)
    assert result["compatible"] is True
    if text:
        assert any(text in w for w in result["warnings"]), result["warnings"]
    else:
        assert not any("does not know" in w for w in result["warnings"])


# ---------------------------------------------------------------------------------------------------
# Bad input: one clear sentence naming the parameter
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"cuda_version": "12.99"},
            r"^cuda_version: CUDA 12\.99 does not exist; known CUDA 12 releases: 12\.0, ",
        ),
        ({"cuda_version": "12.7"}, r"^cuda_version: CUDA 12\.7 does not exist"),
        (
            {"cuda_version": "twelve"},
            r"^cuda_version: 'twelve' is not a valid version.*accepted forms: 12\.8",
        ),
        ({"cuda_version": "12.x"}, r"^cuda_version: '12\.x' is not a valid version"),
        ({"cuda_version": "12"}, r"^cuda_version: '12' is not a valid version with 2 to 4"),
        (
            {"cuda_version": "10.2"},
            r"^cuda_version: CUDA 10\.2 is older than the oldest CUDA gpufleet knows \(11\.0\)",
        ),
        ({"driver_version": "580"}, r"^driver_version: '580' is not a valid version with 2 to 3"),
        (
            {"driver_branch": "580.95.05"},
            r"^driver_branch: '580\.95\.05' is not a valid version with 1 numeric",
        ),
        ({"driver_branch": "R12"}, r"^driver_branch: R12 is not an NVIDIA driver branch"),
        (
            {"driver_version": "575.57.08", "driver_branch": "580"},
            r"^driver_branch: '580' contradicts driver_version 575\.57\.08",
        ),
        (
            {"cuda_version": "13.0", "cudnn_version": "9.14", "cudnn_cuda_major": "11"},
            r"^cudnn_cuda_major: '11' contradicts cuda_version 13\.0",
        ),
        ({"cudnn_version": "9.14.0"}, r"^cudnn_cuda_major: needed with cudnn_version"),
        (
            {"cudnn_version": "7.6.5", "cudnn_cuda_major": "11"},
            r"^cudnn_version: cuDNN 7\.6\.5 is older than gpufleet supports",
        ),
        ({"cudnn_version": "9.14.0", "cudnn_cuda_major": "10"}, r"^cudnn_cuda_major: 10 is older"),
        ({"cudnn_version": "nine"}, r"^cudnn_version: 'nine' is not a valid version"),
        (
            {"kernel_module": "nouveau"},
            r"^kernel_module: 'nouveau' is not allowed; accepted: auto, open, proprietary",
        ),
        ({"os_info": "ubuntu"}, r"^os: 'ubuntu' is not a mapping"),
        ({"gpus": "0x2335"}, r"^gpus: '0x2335' is not a list"),
        ({"gpus": [{"pci_device_id": "zz"}]}, r"^gpus\[0\]\.pci_device_id: 'zz' is not a PCI id"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(CompatInputError, match=message):
        run(**kwargs)


@settings(max_examples=200, deadline=None)
@given(
    cuda=st.one_of(st.none(), st.text(max_size=12), st.from_regex(r"\A1[0-5]\.[0-9]{1,2}(\.[0-9])?\Z")),
    cudnn=st.one_of(st.none(), st.text(max_size=12), st.from_regex(r"\A[7-9]\.[0-9]{1,2}\.[0-9]\Z")),
    major=st.one_of(st.none(), st.sampled_from(["11", "12", "13", "14", "x"])),
    branch=st.one_of(st.none(), st.text(max_size=6), st.integers(min_value=0, max_value=1200).map(str)),
)
def test_fuzz_only_clear_errors(cuda, cudnn, major, branch):
    try:
        result = run(
            gpus=[H200], cuda_version=cuda, cudnn_version=cudnn, cudnn_cuda_major=major, driver_branch=branch
        )
    except CompatInputError as err:
        assert str(err).split(":")[0] in (
            "cuda_version",
            "cudnn_version",
            "cudnn_cuda_major",
            "driver_branch",
        )
    else:
        assert isinstance(result["compatible"], bool)


# ---------------------------------------------------------------------------------------------------
# The real H200 (fixture values) and recommendations
# ---------------------------------------------------------------------------------------------------
H200_PLAN = {
    "gpus": [H200],
    "driver_version": "580.159.04",
    "kernel_module": "open",
    "os_info": {"distribution": "ubuntu", "version": "24.04"},
}


def test_h200_cuda_13_0_and_cudnn_9_14():
    result = run(**H200_PLAN, cuda_version="13.0", cudnn_version="9.14.0.64")
    assert result["compatible"] is True
    assert result["errors"] == result["warnings"] == []
    (gpu,) = result["gpus"]
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"]) == ("NVIDIA H200", "Hopper", "9.0")
    assert gpu["kernel_module_support"] == "either"
    assert compat_rules.branch_native_cuda(580) == parse_version("13.0")
    assert result["recommended"] == {
        "driver_branch": "580",
        "kernel_module": "open",
        "cuda_max": "13.5",
        "cudnn_max": kb_cudnn.NEWEST_KNOWN,
    }


@pytest.mark.parametrize("flavor", ["open", "proprietary", "auto"])
def test_h200_either_flavor(flavor):
    assert run(**dict(H200_PLAN, kernel_module=flavor), cuda_version="13.0")["errors"] == []


def test_h200_cuda_13_2_minor_version_warning():
    result = run(**H200_PLAN, cuda_version="13.2")
    assert result["compatible"] is True
    (warning,) = result["warnings"]
    assert "its own minimum is 595.45.04" in warning
    assert result["recommended"]["driver_branch"] == "595"


def test_h200_cuda_12_8():
    assert run(**H200_PLAN, cuda_version="12.8")["errors"] == []


def test_volta_only_plan_refused():
    result = run(gpus=[V100, V100], driver_branch="580", cuda_version="13.0", cudnn_version="9.14.0")
    assert result["compatible"] is False
    assert len(result["errors"]) == 2  # CUDA 13 and cuDNN for CUDA 13 (identical GPUs: no duplicates)
    assert result["recommended"] == {
        "driver_branch": "580",
        "kernel_module": "proprietary",
        "cuda_max": "12.9",
        "cudnn_max": "9.10.2",
    }


@pytest.mark.parametrize(
    ("gpus", "cuda", "expected"),
    [
        (
            [K80],
            None,
            {
                "driver_branch": "470",
                "kernel_module": "proprietary",
                "cuda_max": "11.8",
                "cudnn_max": "8.5.0",
            },
        ),
        (
            [B200],
            "13.3",
            {
                "driver_branch": "620",
                "kernel_module": "open",
                "cuda_max": "13.5",
                "cudnn_max": kb_cudnn.NEWEST_KNOWN,
            },
        ),
        (
            [],
            None,
            {
                "driver_branch": "580",
                "kernel_module": "open",
                "cuda_max": "13.5",
                "cudnn_max": kb_cudnn.NEWEST_KNOWN,
            },
        ),
        (
            [{"compute_capability": "10.1"}],
            None,
            {
                "driver_branch": "580",
                "kernel_module": "open",
                "cuda_max": "12.9",
                "cudnn_max": kb_cudnn.NEWEST_KNOWN,
            },
        ),
        (
            [{"compute_capability": "7.7"}],
            "14.0",
            {
                "driver_branch": None,
                "kernel_module": "open",
                "cuda_max": "13.5",
                "cudnn_max": kb_cudnn.NEWEST_KNOWN,
            },
        ),
    ],
)
def test_recommendations(gpus, cuda, expected):
    assert run(gpus=gpus, cuda_version=cuda)["recommended"] == expected


def test_no_gpu_with_driver_warns():
    result = run(gpus=[], driver_branch="580")
    assert any("no NVIDIA GPU found or given" in w for w in result["warnings"])


def test_resolved_gpus_accepted_again():
    first = run(gpus=[H200])["gpus"]
    again = run(
        gpus=[{"pci_device_id": g["pci_device_id"], "pci_subsystem_id": g["pci_subsystem_id"]} for g in first]
    )
    assert again["gpus"] == first


def test_minor_version_advice_within_the_branch():
    result = run(gpus=[H200], cuda_version="13.0.2", driver_version="580.82.07")
    (warning,) = minor_warnings(result)
    assert warning.endswith("set driver_version >= 580.95.05 for full support")
    result = run(gpus=[H200], cuda_version="13.2", driver_version="580.82.07")
    assert minor_warnings(result)[0].endswith("set driver_branch >= 595 for full support")
