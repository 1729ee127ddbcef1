"""NVIDIA repository plans and package lists for every supported OS; fingerprint grammar; distro refusals.

The source file rendered from a plan's repo, the key's check, apt's index and the pins are the target's
(install/repo.py): tests/unit/plugins/module_utils/install/test_repo.py."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts

from tests.data.facts import fakeroot

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
    assert "content" not in cfg  # structured fields: the target renders the file (install/repo.render_source)
    if manager == "apt":
        assert cfg["path"] == "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources"
        assert cfg["keyring"] == "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"
    else:
        assert cfg["path"] == "/etc/yum.repos.d/gpufleet-nvidia-cuda.repo"
        assert cfg["keyring"] == "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda"
    given = "" if rdir.startswith("ubuntu") else TEST_FPR
    assert cfg["key_fingerprint"] == (given or repo_plan.KEYS[rdir][1])  # the user's override, else pinned


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
    assert cfg["key_url"] == "http://mirror.example.org/cuda/repos/ubuntu2404/sbsa/3bf863cc.pub"


@pytest.mark.parametrize(
    ("dist", "ver"),
    [("Ubuntu", "20.04"), ("Debian", "11"), ("Fedora", "42"), ("RedHat", "7.9"), ("SLES", "15")],
)
def test_unsupported_os_names_what_is_supported(dist, ver):
    with pytest.raises(
        repo_plan.RepoPlanError, match=f"{dist} {ver} has no NVIDIA CUDA repository.*supported: Ubuntu"
    ):
        repo_plan.repo_config(dist, ver)


def test_bad_fingerprint_override():
    with pytest.raises(repo_plan.RepoPlanError, match="not 40 hex digits"):
        repo_plan.repo_config("RedHat", "9.4", fingerprint="D42D0685")


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"fingerprint": "D42D0685"}, "cudnn_repo_key_fingerprint='D42D0685' (allowed: 40 hex digits"),
        (
            {"base_url": "ftp://mirror/cuda/repos"},
            "cudnn_repo_base_url='ftp://mirror/cuda/repos' (allowed: an",
        ),
        ({"base_url": "mirror.example/repos"}, "cudnn_repo_base_url="),
        ({"base_url": "http://m/cuda/repos\nTypes: deb-src"}, "cudnn_repo_base_url="),
    ],
)
def test_bad_repository_input_names_the_variable(kwargs, needle):
    """(moved from the module's tests: the user's variables are checked on the controller, in the plan)"""
    with pytest.raises(repo_plan.RepoPlanError) as err:
        repo_plan.repo_config("Debian", "12", **kwargs, prefix="cudnn")
    assert needle in str(err.value)


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


@pytest.mark.parametrize("url", ["", "http://m/cuda/repos", "https://m:8443/x", "file:///srv/repos"])
def test_base_urls_allowed(url):
    assert repo_plan.check_base_url(url) == url


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
        "hold_missing": CUDNN9,  # none held yet
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
    # cuda_toolkit_hold: the toolkits' packages are held like cuDNN's (issue 36); dnf locks them by pattern
    assert plan["missing"] == plan["specs"] and plan["hold"] == plan["names"] == plan["hold_missing"]
    assert plan["installed"] == {"cuda-toolkit-13-0": "13.0.1-1"}
    assert repo_plan.toolkit_lock_patterns(["12.9.1", "13.0", "13.0.2"]) == [
        "cuda-*-12-9", "lib*-12-9", "cuda-*-13-0", "lib*-13-0"
    ]  # fmt: skip


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
