"""NVIDIA repository plans and package lists for every supported OS; key fingerprints; distro refusals."""

import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts

from tests.data.facts import fakeroot

KEYS = Path(__file__).resolve().parents[4] / "data" / "keys"
TEST_KEY = (KEYS / "test-signing-key.asc").read_bytes()
TEST_FPR = "C3B19113CF573F8BF336BC36548F7B3414DA5E58"  # as gpg reports it (see tests/data/keys/README.md)
NVIDIA = "https://developer.download.nvidia.com/compute/cuda/repos"

OSES = [
    # distribution, version, repo dir, manager
    ("Ubuntu", "22.04", "ubuntu2204", "apt"),
    ("Ubuntu", "24.04", "ubuntu2404", "apt"),
    ("Debian", "12", "debian12", "apt"),
    ("Debian", "13", "debian13", "apt"),
    ("RedHat", "8.10", "rhel8", "dnf"),
    ("RedHat", "9.6", "rhel9", "dnf"),
    ("RedHat", "10.0", "rhel10", "dnf"),
    ("Rocky", "9.5", "rhel9", "dnf"),
    ("Rocky", "8.9", "rhel8", "dnf"),
    ("AlmaLinux", "10.0", "rhel10", "dnf"),
    ("AlmaLinux", "9.4", "rhel9", "dnf"),
    ("OracleLinux", "9.4", "rhel9", "dnf"),
]


@pytest.mark.parametrize(("dist", "ver", "rdir", "manager"), OSES)
def test_repo_dir_and_files_for_every_os(dist, ver, rdir, manager):
    cfg = repo_plan.repo_config(
        dist, ver, "x86_64", fingerprint="" if rdir.startswith("ubuntu") else TEST_FPR
    )
    assert cfg["repo_dir"] == rdir
    assert cfg["manager"] == manager
    assert cfg["url"] == f"{NVIDIA}/{rdir}/x86_64/"
    assert cfg["key_url"].startswith(cfg["url"])
    if manager == "apt":
        assert cfg["path"] == "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources"
        assert cfg["content"].splitlines()[1:] == [
            "Types: deb",
            f"URIs: {NVIDIA}/{rdir}/x86_64/",
            "Suites: /",
            "Signed-By: /etc/apt/keyrings/gpufleet-nvidia-cuda.asc",
        ]
    else:
        assert cfg["path"] == "/etc/yum.repos.d/gpufleet-nvidia-cuda.repo"
        lines = cfg["content"].splitlines()
        assert "[gpufleet-nvidia-cuda]" in lines
        assert f"baseurl={NVIDIA}/{rdir}/x86_64/" in lines
        assert "gpgcheck=1" in lines
        assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda" in lines


@pytest.mark.parametrize(
    ("rdir", "key", "fpr"),
    [
        ("ubuntu2204", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
        ("ubuntu2404", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
        ("debian12", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
        ("debian13", "8793F200.pub", "02182E60104FCDC26EAE1B8597A5D4CB8793F200"),
        ("rhel9", "D42D0685.pub", ""),
        ("rhel10", "CDF6BA43.pub", ""),
    ],
)
def test_pinned_keys(rdir, key, fpr):
    assert repo_plan.KEYS[rdir] == (key, fpr)
    assert fpr == "" or fpr.endswith(key.split(".")[0].upper())  # the key file is named after the short id


def test_base_url_override_and_sbsa():
    cfg = repo_plan.repo_config(
        "Ubuntu", "24.04", "aarch64", base_url="http://mirror.example.org/cuda/repos/"
    )
    assert cfg["url"] == "http://mirror.example.org/cuda/repos/ubuntu2404/sbsa/"
    assert "URIs: http://mirror.example.org/cuda/repos/ubuntu2404/sbsa/" in cfg["content"]


@pytest.mark.parametrize(
    ("dist", "ver"),
    [("Ubuntu", "20.04"), ("Debian", "11"), ("Fedora", "42"), ("RedHat", "7.9"), ("SLES", "15")],
)
def test_unsupported_os_names_what_is_supported(dist, ver):
    with pytest.raises(
        repo_plan.RepoPlanError, match=f"{dist} {ver} has no NVIDIA CUDA repository.*supported: Ubuntu"
    ):
        repo_plan.repo_config(dist, ver)


def test_key_fingerprint_matches_gpg():
    assert repo_plan.key_fingerprints(TEST_KEY)[0] == TEST_FPR
    assert repo_plan.check_key(TEST_KEY, TEST_FPR.lower(), "v") == TEST_FPR
    assert (
        repo_plan.check_key(TEST_KEY, " ".join(TEST_FPR[i : i + 4] for i in range(0, 40, 4)), "v") == TEST_FPR
    )


def test_key_fingerprint_mismatch_is_refused():
    with pytest.raises(repo_plan.RepoPlanError, match=f"fingerprint is {TEST_FPR}, not the pinned EB69"):
        repo_plan.check_key(
            TEST_KEY, "EB693B3035CD5710E231E123A4B469963BF863CC", "cudnn_repo_key_fingerprint"
        )


def test_unpinned_key_is_refused():
    with pytest.raises(
        repo_plan.RepoPlanError, match="no pinned fingerprint.*set cudnn_repo_key_fingerprint"
    ):
        repo_plan.check_key(TEST_KEY, "", "cudnn_repo_key_fingerprint")


@pytest.mark.parametrize(
    "data", [b"", b"<html>404</html>", b"\x00\x01garbage", TEST_KEY[: len(TEST_KEY) // 3]]
)
def test_garbage_key_is_a_clear_error(data):
    with pytest.raises(repo_plan.RepoPlanError):
        repo_plan.check_key(data, TEST_FPR, "v")


def test_bad_fingerprint_override():
    with pytest.raises(repo_plan.RepoPlanError, match="not 40 hex digits"):
        repo_plan.repo_config("RedHat", "9.4", fingerprint="D42D0685")


@pytest.mark.parametrize(("dist", "ver", "rdir", "manager"), OSES)
def test_cuda_toolkit_packages_every_os(dist, ver, rdir, manager):
    specs = repo_plan.cuda_toolkit_packages(["12.9", "13.0.2"], rdir)
    if manager == "apt":
        assert specs == ["cuda-toolkit-12-9", "cuda-toolkit-13-0=13.0.2-1"]
    else:
        assert specs == ["cuda-toolkit-12-9", "cuda-toolkit-13-0-13.0.2"]
    assert repo_plan.package_names(specs, rdir) == ["cuda-toolkit-12-9", "cuda-toolkit-13-0"]


@pytest.mark.parametrize(("dist", "ver", "rdir", "manager"), OSES)
def test_cudnn9_packages_every_os(dist, ver, rdir, manager):
    specs = repo_plan.cudnn_packages("9.14.0.64", 13, rdir)
    if manager == "apt":
        assert specs == [
            "libcudnn9-cuda-13=9.14.0.64-1",
            "libcudnn9-dev-cuda-13=9.14.0.64-1",
            "libcudnn9-headers-cuda-13=9.14.0.64-1",
        ]
    else:
        assert specs == ["libcudnn9-cuda-13-9.14.0.64-1", "libcudnn9-devel-cuda-13-9.14.0.64-1"]
    assert repo_plan.package_names(specs, rdir)[0] == "libcudnn9-cuda-13"
    short = repo_plan.cudnn_packages("9.28.0", "12", rdir, dev=False)
    assert short == (["libcudnn9-cuda-12=9.28.0*"] if manager == "apt" else ["libcudnn9-cuda-12-9.28.0*"])


def test_cudnn8_packages_carry_the_cuda_build():
    assert repo_plan.cudnn_packages("8.9.7.29", 12, "ubuntu2204") == [
        "libcudnn8=8.9.7.29-1+cuda12.2",
        "libcudnn8-dev=8.9.7.29-1+cuda12.2",
    ]
    assert repo_plan.cudnn_packages("8.9.7.29", 11, "rhel8", dev=False) == ["libcudnn8-8.9.7.29-1.cuda11.8"]
    assert repo_plan.cudnn_packages("8.9.5", 12, "ubuntu2204", dev=False) == ["libcudnn8=8.9.5.*-1+cuda12.*"]
    assert repo_plan.package_names(["libcudnn8=8.9.7.29-1+cuda12.2"], "ubuntu2204") == ["libcudnn8"]
    assert repo_plan.package_names(["libcudnn8-devel-8.9.7.29-1.cuda11.8"], "rhel8") == ["libcudnn8-devel"]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("9.x", "cudnn_version"),
        ("9.14", "needs at least 3"),
        ("7.6.5", "not packaged"),
        ("", "cudnn_version"),
    ],
)
def test_cudnn_bad_versions(value, match):
    with pytest.raises(repo_plan.RepoPlanError, match=match):
        repo_plan.cudnn_packages(value, 13, "ubuntu2404")


def test_cudnn_bad_cuda_major():
    with pytest.raises(repo_plan.RepoPlanError, match="cudnn_cuda_major: 'thirteen'"):
        repo_plan.cudnn_packages("9.14.0", "thirteen", "ubuntu2404")


@pytest.mark.parametrize(
    ("dist", "ver", "cuda", "component"),
    [
        ("Debian", "12", "11.8", "non-free"),
        ("Debian", "13", "12.4", "non-free"),
        ("Ubuntu", "22.04", "11.5", "multiverse"),
        ("Ubuntu", "24.04", "12.0", "multiverse"),
    ],
)
def test_distro_cuda(dist, ver, cuda, component):
    plan = repo_plan.distro_cuda_plan(dist, ver, [cuda])
    assert plan["packages"] == ["nvidia-cuda-toolkit"]
    assert plan["component"] == component
    with pytest.raises(
        repo_plan.RepoPlanError, match=f"cuda_toolkit_versions: {dist} {ver} packages CUDA {cuda} only"
    ):
        repo_plan.distro_cuda_plan(dist, ver, ["13.0"])


def test_distro_cuda_refused_on_rhel():
    with pytest.raises(
        repo_plan.RepoPlanError, match="cuda_toolkit_source: distro has no CUDA toolkit package"
    ):
        repo_plan.distro_cuda_plan("Rocky", "9.4", ["12.4"])


@pytest.mark.parametrize(("dist", "ver"), [("Debian", "12"), ("Debian", "13"), ("Ubuntu", "24.04")])
def test_distro_cudnn_refused_with_the_reason(dist, ver):
    with pytest.raises(
        repo_plan.RepoPlanError,
        match="cudnn_source: distro is not possible.*only the 'nvidia-cudnn' downloader",
    ):
        repo_plan.distro_cudnn_plan(dist, ver)


def test_the_repository_directory_is_the_one_os_key():
    """kb/hosts.os_key decides: Ubuntu 22.10 is not 22.04 (the second normalizer said it was)."""
    assert repo_plan.repo_dir("Ubuntu", "22.04") == "ubuntu2204"
    with pytest.raises(repo_plan.RepoPlanError, match="Ubuntu 22.10 has no NVIDIA CUDA repository"):
        repo_plan.repo_dir("Ubuntu", "22.10")
    assert repo_plan.repo_arch("aarch64") == "sbsa"


# ---------------------------------------------------------------- the repository's index, pins, apt's verdict

VERSION_PAIRS = [
    ("1.0-1", "1.0-1"),
    ("1.0~rc1-1", "1.0-1"),
    ("13.0.88-1", "13.0.9-1"),
    ("13.0.88-1", "13.0.88-2"),
    ("1:0.1", "2.0"),
    ("9.28.0.42-1", "9.14.0.64-1"),
    ("1.0a", "1.0"),
    ("1.0", "1.0+b1"),
    ("2.28.3-1+cuda13.0", "2.28.3-1+cuda12.9"),
    ("580.95.05-0ubuntu1", "580.95.05-1"),
    ("1.0~~a", "1.0~"),
    ("0001.2", "1.02"),
]


def _sign(c):
    return (c > 0) - (c < 0)


@pytest.mark.parametrize(("a", "b"), VERSION_PAIRS)
def test_debian_version_order_is_dpkgs(a, b):
    got = repo_plan.compare_versions(a, b)
    assert _sign(got) == -_sign(repo_plan.compare_versions(b, a))
    if shutil.which("dpkg"):  # the reference: dpkg itself
        for op, want in (("lt", got < 0), ("eq", got == 0), ("gt", got > 0)):
            assert (
                subprocess.run(["dpkg", "--compare-versions", a, op, b], check=False).returncode == 0
            ) == want


def test_depends_with_alternatives_and_relations():
    assert repo_plan.parse_depends("a (>= 1.0), b | c (= 2-1), d:any, e (<< 3)") == [
        [("a", ">=", "1.0")],
        [("b", "", ""), ("c", "=", "2-1")],
        [("d", "", "")],
        [("e", "<<", "3")],
    ]


def test_a_shared_dependency_satisfies_every_toolkit_of_the_set():
    index = repo_plan.parse_index(
        "Package: cuda-toolkit-12-9\nVersion: 12.9.1-1\nDepends: cuda-toolkit-config-common (>= 12.9.79)\n\n"
        "Package: cuda-toolkit-13-0\nVersion: 13.0.2-1\nDepends: cuda-toolkit-config-common (>= 13.0.96)\n\n"
        "Package: cuda-toolkit-config-common\nVersion: 12.9.79-1\n\n"
        "Package: cuda-toolkit-config-common\nVersion: 13.0.96-1\n\n"
        "Package: cuda-toolkit-config-common\nVersion: 13.1.80-1\n"
    )
    got = repo_plan.resolve_set(index, ["cuda-toolkit-12-9", "cuda-toolkit-13-0"], "U", "v")
    assert dict(got)["cuda-toolkit-config-common"] == "13.0.96-1"  # the lowest both allow
    with pytest.raises(repo_plan.RepoPlanError, match="has no package cuda-toolkit-13-1"):
        repo_plan.resolve_set(index, ["cuda-toolkit-13-1"], "U", "cuda_toolkit_versions")
    bad = repo_plan.parse_index("Package: a\nVersion: 1\nDepends: b (>= 2)\n\nPackage: b\nVersion: 1\n")
    with pytest.raises(repo_plan.RepoPlanError, match="has no b that satisfies >= 2 \\(it has 1\\)"):
        repo_plan.resolve_set(bad, ["a"], "U", "v")


def test_a_version_prefix_matches_whole_components_only():
    index = repo_plan.parse_index("Package: x\nVersion: 9.14.0.64-1\n\nPackage: x\nVersion: 9.1.0.70-1\n")
    assert repo_plan.top_version(index, "x=9.1*", "U", "v") == ("x", "9.1.0.70-1")
    assert repo_plan.top_version(index, "x=9.14.0*", "U", "v") == ("x", "9.14.0.64-1")
    assert repo_plan.top_version(index, "x", "U", "v") == ("x", "9.14.0.64-1")


def test_pin_file_pins_each_package_above_1000():
    pin = repo_plan.pin_file("cuda_toolkit", [("a", "1-1"), ("b", "2-1")])
    assert pin["path"] == "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref"
    assert pin["content"].count("Pin-Priority: 1001\n") == 2
    assert "Package: b\nPin: version 2-1\n" in pin["content"]


def test_apt_update_accepted():
    out = "Hit:1 http://gpufleet-mirror/cuda/repos/debian12/x86_64  InRelease\nReading package lists...\n"
    assert repo_plan.apt_update_refusal(out, 0, "U", "v") is None


def test_apt_update_unreachable():
    out = "Err:1 http://x/ InRelease\n  Could not connect to x:80\nW: Failed to fetch http://x/InRelease\n"
    msg = repo_plan.apt_update_refusal(out, 0, "http://x/", "cudnn_repo_key_fingerprint")
    assert msg.startswith("apt refused the repository http://x/: apt could not fetch it (apt: W: Failed")


@pytest.mark.parametrize("url", ["", "http://m/cuda/repos", "https://m:8443/x", "file:///srv/repos"])
def test_base_urls_allowed(url):
    assert repo_plan.check_base_url(url) == url


H200_CUDA_SET = [
    ("cuda-cccl-13-0", "13.0.85-1"),
    ("cuda-nvcc-13-0", "13.0.88-1"),
    ("cuda-toolkit-13-0", "13.0.2-1"),
    ("cuda-toolkit-13-0-config-common", "13.0.96-1"),
    ("cuda-toolkit-13-config-common", "13.0.96-1"),
    ("cuda-toolkit-config-common", "13.0.96-1"),
    ("libnvvm-13-0", "13.0.88-1"),
]


def test_a_set_of_one_cuda_release_passes():
    repo_plan.check_one_major(H200_CUDA_SET, "cuda_toolkit", ["13.0"], "cuda_toolkit_versions", "U")
    both = [*H200_CUDA_SET, ("cuda-nvcc-12-9", "12.9.86-1"), ("cuda-toolkit-12-config-common", "12.9.79-1")]
    repo_plan.check_one_major(both, "cuda_toolkit", ["12.9", "13.0.2"], "cuda_toolkit_versions", "U")
    cudnn = [("libcudnn9-cuda-13", "9.14.0.64-1"), ("libcudnn9-dev-cuda-13", "9.14.0.64-1"), ("zlib", "1")]
    repo_plan.check_one_major(cudnn, "cudnn", "13", "cudnn_version", "U")


@pytest.mark.parametrize(
    ("members", "what", "wanted", "stray"),
    [
        ([("libcudnn9-cuda-13", "9.14.0.64-1"), ("libcudnn9-dev-cuda-12", "9.14.0.64-1")], "cudnn", "13",
         "libcudnn9-dev-cuda-12=9.14.0.64-1"),
        ([*H200_CUDA_SET, ("cuda-cudart-12-9", "12.9.79-1")], "cuda_toolkit", ["13.0"], "cuda-cudart-12-9"),
        ([*H200_CUDA_SET, ("cuda-toolkit-12-config-common", "12.9.79-1")], "cuda_toolkit", ["13.0"],
         "cuda-toolkit-12-config-common"),
        ([*H200_CUDA_SET, ("libnvvm-13-1", "13.1.80-1")], "cuda_toolkit", ["13.0"], "libnvvm-13-1"),
    ],
)  # fmt: skip
def test_a_set_that_mixes_cuda_majors_is_refused_naming_the_variable(members, what, wanted, stray):
    var = "cudnn_version" if what == "cudnn" else "cuda_toolkit_versions"
    with pytest.raises(repo_plan.RepoPlanError) as err:
        repo_plan.check_one_major(members, what, wanted, var, "http://m/cuda/repos/debian12/x86_64/")
    assert str(err.value).startswith(f"{var}: the package set resolved from http://m/cuda/repos/debian12")
    assert "mixes CUDA majors or releases: " + stray in str(err.value)
    assert "nothing was pinned or installed" in str(err.value)


# -------------------------------------------------------------- the package plan against the installed state
# (moved from tests/unit/plugins/modules/test_nvidia_repo.py: the decisions are plan/repo.py's, taken from
# the facts' packages.installed, {name: {version, held}})
CUDNN9 = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]


def installed(*rows):
    """{name: {version, held}} as the facts' packages.installed holds it, from (name, version, held) rows."""
    return {name: {"version": version, "held": held} for name, version, held in rows}


OS_OF = {"ubuntu2404": ("Ubuntu", "24.04"), "rhel9": ("Rocky", "9.4"), "debian12": ("Debian", "12")}


def plan_packages(packages_for, versions, have, *, source="nvidia_repo", rdir="ubuntu2404", **kw):
    dist, ver = OS_OF[rdir]
    return repo_plan.package_plan(
        packages_for,
        source,
        versions,
        cuda_major=kw.get("cuda_major", "13" if packages_for == "cudnn" else ""),
        dev=kw.get("dev", True),
        repo_dir=rdir,
        distribution=dist,
        distribution_version=ver,
        installed=have,
    )


def test_cudnn_plan_reports_missing_and_holds_the_set():
    have = installed(
        ("libcudnn9-cuda-13", "9.14.0.64-1", False),
        ("libcudnn9-dev-cuda-13", "9.12.0.46-1", False),
        ("cuda-nvcc-13-0", "13.0.88-1", False),  # the facts list every NVIDIA package: others are ignored
    )
    plan = plan_packages("cudnn", ["9.14.0.64"], have)
    assert plan == {
        "specs": [f"{n}=9.14.0.64-1" for n in CUDNN9],
        "names": CUDNN9,
        # every package of the set is held (NVIDIA's images hold each one they install)
        "hold": CUDNN9,
        "installed": {"libcudnn9-cuda-13": "9.14.0.64-1", "libcudnn9-dev-cuda-13": "9.12.0.46-1"},
        "missing": ["libcudnn9-dev-cuda-13=9.14.0.64-1", "libcudnn9-headers-cuda-13=9.14.0.64-1"],
        "unhold": [],
    }


def test_cudnn_plan_all_installed_h200_shape():
    have = installed(*((n, "9.14.0.64-1", True) for n in CUDNN9))
    plan = plan_packages("cudnn", ["9.14.0"], have)
    assert plan["specs"][0] == "libcudnn9-cuda-13=9.14.0*"  # X.Y.Z: any build of that release
    assert (plan["missing"], plan["unhold"]) == ([], [])


def test_a_move_releases_the_holds_of_the_packages_it_changes():
    have = installed(
        ("libcudnn9-cuda-13", "9.14.0.64-1", True), ("libcudnn9-dev-cuda-13", "9.28.0.42-1", True)
    )
    plan = plan_packages("cudnn", ["9.28.0"], have)
    assert plan["missing"] == ["libcudnn9-cuda-13=9.28.0*", "libcudnn9-headers-cuda-13=9.28.0*"]
    assert plan["unhold"] == ["libcudnn9-cuda-13"]  # the -dev package is already at 9.28: it stays held


def test_rpm_toolkit_plan_and_versions_without_epoch():
    have = installed(("cuda-toolkit-13-0", "13.0.2-1", False))
    assert plan_packages("cuda_toolkit", ["13.0"], have, rdir="rhel9")["missing"] == []
    plan = plan_packages(
        "cuda_toolkit",
        ["12.9.1", "13.0.2"],
        installed(("cuda-toolkit-13-0", "13.0.1-1", False)),
        rdir="rhel9",
    )
    assert plan["specs"] == ["cuda-toolkit-12-9-12.9.1", "cuda-toolkit-13-0-13.0.2"]
    assert plan["names"] == ["cuda-toolkit-12-9", "cuda-toolkit-13-0"]
    assert plan["missing"] == plan["specs"] and plan["hold"] == []
    assert plan["installed"] == {"cuda-toolkit-13-0": "13.0.1-1"}


def test_distro_toolkit_plan_and_the_distro_cudnn_refusal():
    plan = plan_packages("cuda_toolkit", ["11.8"], {}, source="distro", rdir="debian12")
    assert (plan["specs"], plan["names"], plan["hold"]) == (["nvidia-cuda-toolkit"],) * 3
    assert plan["missing"] == ["nvidia-cuda-toolkit"]
    have = installed(("nvidia-cuda-toolkit", "11.8.89~11.8.0-5~deb12u1", True))
    assert plan_packages("cuda_toolkit", ["11.8"], have, source="distro", rdir="debian12")["missing"] == []
    with pytest.raises(repo_plan.RepoPlanError, match="cudnn_source: distro is not possible on Debian 12"):
        plan_packages("cudnn", ["9.14.0"], {}, source="distro", rdir="debian12", cuda_major="12")
    with pytest.raises(repo_plan.RepoPlanError, match="cudnn_version: exactly one version per package plan"):
        plan_packages("cudnn", ["9.14.0", "9.28.0"], {})


def test_the_plan_from_the_facts_of_the_h200(tmp_path):
    """The installed state as nvidia_facts returns it (the packages subset of the H200 tree) is the input."""
    fakeroot.h200(tmp_path)
    facts = probe_facts.gather(str(tmp_path), ["packages"])
    plan = plan_packages("cudnn", ["9.14.0"], facts["packages"]["installed"])
    assert (plan["missing"], plan["unhold"]) == ([], [])
    moved = plan_packages("cudnn", ["9.28.0"], facts["packages"]["installed"])
    assert moved["unhold"] == ["libcudnn9-cuda-13"]  # the H200 holds the library only (apt-mark showhold)
    toolkit = plan_packages("cuda_toolkit", ["13.0"], facts["packages"]["installed"])
    assert toolkit["missing"] == [
        "cuda-toolkit-13-0"
    ]  # the H200 has the toolkit's parts, not the metapackage


PYTHON_APT = {"importable": False, "candidate": "none", "interpreter": "/usr/bin/python3"}


@pytest.mark.parametrize(
    ("manager", "missing", "python_apt"),
    [
        ("dnf", ["cuda-toolkit-13-0"], PYTHON_APT),  # dnf installs it
        ("apt", [], PYTHON_APT),  # nothing to install
        ("apt", ["libcudnn9-cuda-13=9.14.0*"], None),  # not gathered, or not a live root: nothing known
        ("apt", ["libcudnn9-cuda-13=9.14.0*"], {**PYTHON_APT, "importable": True}),
        (
            "apt",
            ["libcudnn9-cuda-13=9.14.0*"],
            {**PYTHON_APT, "candidate": "2.7.7ubuntu5"},
        ),  # apt installs it
    ],
)
def test_no_python_apt_refusal(manager, missing, python_apt):
    assert repo_plan.python_apt_refusal(manager, "cudnn", missing, python_apt) is None


@pytest.mark.parametrize("candidate", ["none", None])  # apt has none / apt-cache could not tell
def test_python_apt_refusal_names_the_interpreter_and_the_way_out(candidate):
    missing = ["libcudnn9-cuda-13=9.14.0*", "libcudnn9-dev-cuda-13=9.14.0*"]
    refusal = repo_plan.python_apt_refusal("apt", "cudnn", missing, {**PYTHON_APT, "candidate": candidate})
    assert refusal == (
        "cudnn_source='nvidia_repo' installs libcudnn9-cuda-13=9.14.0* libcudnn9-dev-cuda-13=9.14.0* with "
        "ansible.builtin.apt, which needs python3-apt for /usr/bin/python3: it cannot import apt_pkg and apt "
        "has no candidate for python3-apt; install python3-apt from the distribution's archive (or a site "
        "mirror of it), or choose cudnn_source: redist. Nothing was changed"
    )


# ---------------------------------------------------------------- the pinned set against the installed state
def test_pinned_set_releases_the_holds_a_move_changes():
    members = [(n, "9.28.0.42-1") for n in CUDNN9]
    have = installed(*((n, "9.14.0.64-1", True) for n in CUDNN9))
    packages, pins = repo_plan.pinned_packages("cudnn", members, [], have, False)
    assert packages["specs"] == [f"{n}=9.28.0.42-1" for n in CUDNN9]
    assert packages["missing"] == packages["specs"]
    assert packages["unhold"] == CUDNN9  # the move releases the holds, the role sets them again
    assert packages["hold"] == CUDNN9
    assert packages["installed"] == dict.fromkeys(CUDNN9, "9.14.0.64-1")
    assert pins == members
    same, _pins = repo_plan.pinned_packages("cudnn", [(n, "9.14.0.64-1") for n in CUDNN9], [], have, False)
    assert (same["missing"], same["unhold"]) == ([], [])


def test_pinned_cuda_major_switch_replaces_the_other_majors_cudnn_packages():
    old = [(n, "9.14.0.64-1") for n in CUDNN9]
    members = [(n.replace("-13", "-12"), "9.14.0.64-1") for n in CUDNN9]
    have = installed(*((n, "9.14.0.64-1", True) for n in CUDNN9))
    packages, pins = repo_plan.pinned_packages("cudnn", members, old, have, False)
    assert packages["replaced"] == CUDNN9 and packages["unhold"] == CUDNN9
    assert (packages["remove"], packages["kept"]) == ([], [])
    assert packages["hold"] == [n for n, _v in members]
    assert pins == members  # the other major's pins go


def test_pinned_unlisted_toolkit_stays_pinned_unless_its_removal_is_asked():
    previous = [("cuda-nvcc-12-9", "12.9.86-1"), ("cuda-toolkit-12-9", "12.9.1-1")]
    members = [("cuda-toolkit-13-0", "13.0.2-1")]
    have = installed(("cuda-toolkit-12-9", "12.9.1-1", False), ("cuda-nvcc-12-9", "12.9.86-1", False))
    packages, pins = repo_plan.pinned_packages("cuda_toolkit", members, previous, have, False)
    assert packages["kept"] == ["cuda-nvcc-12-9", "cuda-toolkit-12-9"]
    assert (packages["remove"], packages["hold"]) == ([], [])
    assert pins == members + previous  # nothing moves behind the user's back
    asked, pins = repo_plan.pinned_packages("cuda_toolkit", members, previous, have, True)
    assert (asked["remove"], asked["kept"], asked["unhold"]) == (
        ["cuda-nvcc-12-9", "cuda-toolkit-12-9"],
        [],
        [],
    )
    assert pins == members


def test_pinned_dropping_the_dev_packages_keeps_them_held_unless_removal_is_asked():
    previous = [(n, "9.14.0.64-1") for n in CUDNN9]
    have = installed(*((n, "9.14.0.64-1", True) for n in CUDNN9))
    packages, pins = repo_plan.pinned_packages("cudnn", previous[:1], previous, have, False)
    assert packages["kept"] == CUDNN9[1:]
    assert (packages["replaced"], packages["remove"], packages["unhold"]) == ([], [], [])
    assert packages["hold"] == CUDNN9 and pins == previous
    asked, pins = repo_plan.pinned_packages("cudnn", previous[:1], previous, have, True)
    assert asked["remove"] == CUDNN9[1:] and asked["unhold"] == CUDNN9[1:]
    assert asked["hold"] == CUDNN9[:1] and pins == previous[:1]
