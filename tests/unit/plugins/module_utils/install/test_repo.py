"""The repository on the target (install/repo.py): the source file rendered from the plan's fields, the key's
fingerprint, apt's verdict, the index (dpkg's version order, dependencies, the resolved set), pins and the
pinned set against the installed state."""

import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import repo as install_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages

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


# ---------------------------------------------------------------- the source file, from the plan's repo
@pytest.mark.parametrize(("dist", "ver", "rdir", "manager"), OSES)
def test_the_source_file_of_the_plans_repo_for_every_os(dist, ver, rdir, manager):
    cfg = repo_plan.repo_config(
        dist, ver, "x86_64", fingerprint="" if rdir.startswith("ubuntu") else TEST_FPR
    )
    content = install_repo.render_source(cfg)
    if manager == "apt":
        assert content.splitlines()[1:] == [
            "Types: deb",
            f"URIs: {NVIDIA}/{rdir}/x86_64/",
            "Suites: /",
            "Signed-By: /etc/apt/keyrings/gpufleet-nvidia-cuda.asc",
        ]
    else:
        lines = content.splitlines()
        assert "[gpufleet-nvidia-cuda]" in lines
        assert f"baseurl={NVIDIA}/{rdir}/x86_64/" in lines
        assert "gpgcheck=1" in lines
        assert "repo_gpgcheck=1" in lines  # issue 38: repomd.xml's signature checked, not only the packages'
        assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda" in lines
    assert content.startswith("# Managed by gpufleet (nvidia_repo): NVIDIA CUDA repository\n")


def test_a_mirror_and_sbsa_in_the_source_file():
    cfg = repo_plan.repo_config(
        "Ubuntu", "24.04", "aarch64", base_url="http://mirror.example.org/cuda/repos/"
    )
    assert "URIs: http://mirror.example.org/cuda/repos/ubuntu2404/sbsa/" in install_repo.render_source(cfg)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("url", "http://m/repo/\nTypes: deb-src"),  # a newline never adds a line to a source
        ("url", "http://m/a b/"),
        ("url", ""),
        ("keyring", "/etc/apt/keyrings/x.asc\rSigned-By: /tmp/evil.asc"),
        ("keyring", None),
    ],
)
def test_a_field_that_is_not_one_token_is_refused(field, value):
    repo = {"url": "http://m/repo/", "keyring": "/etc/apt/keyrings/k.asc", "manager": "apt", field: value}
    for manager in ("apt", "dnf"):
        with pytest.raises(install_repo.RepoError, match=f"repo.{field}: .* is not one token"):
            install_repo.render_source(dict(repo, manager=manager))


def test_a_staged_keyring_replaces_the_plans_in_the_source():
    repo = {"url": "http://m/repo/", "keyring": "/etc/apt/keyrings/k.asc", "manager": "apt"}
    assert "Signed-By: /tmp/stage/k.asc\n" in install_repo.render_source(repo, keyring="/tmp/stage/k.asc")


# ---------------------------------------------------------------- the key's fingerprint
def test_key_fingerprint_matches_gpg():
    assert install_repo.key_fingerprints(TEST_KEY)[0] == TEST_FPR
    assert install_repo.check_key(TEST_KEY, TEST_FPR.lower(), "v") == TEST_FPR
    assert (
        install_repo.check_key(TEST_KEY, " ".join(TEST_FPR[i : i + 4] for i in range(0, 40, 4)), "v")
        == TEST_FPR
    )


def test_key_fingerprint_mismatch_is_refused():
    with pytest.raises(install_repo.RepoError, match=f"fingerprint is {TEST_FPR}, not the pinned EB69"):
        install_repo.check_key(
            TEST_KEY, "EB693B3035CD5710E231E123A4B469963BF863CC", "cudnn_repo_key_fingerprint"
        )


def test_unpinned_key_is_refused():
    with pytest.raises(install_repo.RepoError, match="no pinned fingerprint.*set cudnn_repo_key_fingerprint"):
        install_repo.check_key(TEST_KEY, "", "cudnn_repo_key_fingerprint")


@pytest.mark.parametrize(
    "data", [b"", b"<html>404</html>", b"\x00\x01garbage", TEST_KEY[: len(TEST_KEY) // 3]]
)
def test_garbage_key_is_a_clear_error(data):
    with pytest.raises(install_repo.RepoError):
        install_repo.check_key(data, TEST_FPR, "v")


def test_a_malformed_pinned_fingerprint_is_refused_before_any_comparison():
    with pytest.raises(install_repo.RepoError, match="repo.key_fingerprint: 'D42D0685' is not 40 hex digits"):
        install_repo.check_key(TEST_KEY, "D42D0685", "v")
    assert install_repo.canonical_fingerprint(TEST_FPR.lower()) == TEST_FPR
    assert install_repo.canonical_fingerprint("") == ""


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
    got = install_repo.compare_versions(a, b)
    assert _sign(got) == -_sign(install_repo.compare_versions(b, a))
    if shutil.which("dpkg"):  # the reference: dpkg itself
        for op, want in (("lt", got < 0), ("eq", got == 0), ("gt", got > 0)):
            assert (
                subprocess.run(["dpkg", "--compare-versions", a, op, b], check=False).returncode == 0
            ) == want


def test_depends_with_alternatives_and_relations():
    assert install_repo.parse_depends("a (>= 1.0), b | c (= 2-1), d:any, e (<< 3)") == [
        [("a", ">=", "1.0")],
        [("b", "", ""), ("c", "=", "2-1")],
        [("d", "", "")],
        [("e", "<<", "3")],
    ]


def test_a_shared_dependency_satisfies_every_toolkit_of_the_set():
    index = install_repo.parse_index(
        "Package: cuda-toolkit-12-9\nVersion: 12.9.1-1\nDepends: cuda-toolkit-config-common (>= 12.9.79)\n\n"
        "Package: cuda-toolkit-13-0\nVersion: 13.0.2-1\nDepends: cuda-toolkit-config-common (>= 13.0.96)\n\n"
        "Package: cuda-toolkit-config-common\nVersion: 12.9.79-1\n\n"
        "Package: cuda-toolkit-config-common\nVersion: 13.0.96-1\n\n"
        "Package: cuda-toolkit-config-common\nVersion: 13.1.80-1\n"
    )
    got = install_repo.resolve_set(index, ["cuda-toolkit-12-9", "cuda-toolkit-13-0"], "U", "v")
    assert dict(got)["cuda-toolkit-config-common"] == "13.0.96-1"  # the lowest both allow
    with pytest.raises(install_repo.RepoError, match="has no package cuda-toolkit-13-1"):
        install_repo.resolve_set(index, ["cuda-toolkit-13-1"], "U", "cuda_toolkit_versions")
    bad = install_repo.parse_index("Package: a\nVersion: 1\nDepends: b (>= 2)\n\nPackage: b\nVersion: 1\n")
    with pytest.raises(install_repo.RepoError, match="has no b that satisfies >= 2 \\(it has 1\\)"):
        install_repo.resolve_set(bad, ["a"], "U", "v")


def test_a_version_prefix_matches_whole_components_only():
    index = install_repo.parse_index("Package: x\nVersion: 9.14.0.64-1\n\nPackage: x\nVersion: 9.1.0.70-1\n")
    assert install_repo.top_version(index, "x=9.1*", "U", "v") == ("x", "9.1.0.70-1")
    assert install_repo.top_version(index, "x=9.14.0*", "U", "v") == ("x", "9.14.0.64-1")
    assert install_repo.top_version(index, "x", "U", "v") == ("x", "9.14.0.64-1")


def test_pin_file_pins_each_package_above_1000():
    pin = install_repo.pin_file("cuda_toolkit", [("a", "1-1"), ("b", "2-1")])
    assert pin["path"] == "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref"
    assert pin["content"].count("Pin-Priority: 1001\n") == 2
    assert "Package: b\nPin: version 2-1\n" in pin["content"]


def test_apt_update_accepted():
    out = "Hit:1 http://gpufleet-mirror/cuda/repos/debian12/x86_64  InRelease\nReading package lists...\n"
    assert install_repo.apt_update_refusal(out, 0, "U", "v") is None


def test_apt_update_unreachable():
    out = "Err:1 http://x/ InRelease\n  Could not connect to x:80\nW: Failed to fetch http://x/InRelease\n"
    msg = install_repo.apt_update_refusal(out, 0, "http://x/", "cudnn_repo_key_fingerprint")
    assert msg.startswith("apt refused the repository http://x/: apt could not fetch it (apt: W: Failed")


def test_someone_elses_pin_file_is_not_taken_for_gpufleets_record():
    assert probe_packages.parse_pin_record("Package: x\nPin: version 1\nPin-Priority: 1001\n") == []
    text = install_repo.pin_file("cudnn", [("a", "1-1"), ("b", "2-1")])["content"]
    assert probe_packages.parse_pin_record(text) == [
        {"name": "a", "version": "1-1", "owned": True},
        {"name": "b", "version": "2-1", "owned": True},
    ]


def test_the_pin_file_records_which_packages_were_there_before_gpufleet():
    """issue 36: removal takes only what gpufleet installed; a package of the set that was installed before
    gpufleet pinned it is marked in its stanza, read back as not owned, and stays so on later runs."""
    installed = {"b": {"version": "2-1", "held": False}}
    pins = [("a", "1-1"), ("b", "2-1")]
    assert install_repo.not_owned(pins, [], installed) == ["b"]
    text = install_repo.pin_file("cuda_toolkit", pins, ["b"])["content"]
    assert "b stays at 2-1; installed before gpufleet, kept by removal\n" in text
    record = probe_packages.parse_pin_record(text)
    assert [(r["name"], r["owned"]) for r in record] == [("a", True), ("b", False)]
    # the next run: both installed now, the record decides (a stays gpufleet's, b stays the admin's); a
    # package new to the set and not installed yet is gpufleet's
    both = dict(installed, a={"version": "1-1", "held": False})
    assert install_repo.not_owned([*pins, ("c", "3-1")], record, both) == ["b"]


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
    install_repo.check_one_major(H200_CUDA_SET, "cuda_toolkit", ["13.0"], "cuda_toolkit_versions", "U")
    both = [*H200_CUDA_SET, ("cuda-nvcc-12-9", "12.9.86-1"), ("cuda-toolkit-12-config-common", "12.9.79-1")]
    install_repo.check_one_major(both, "cuda_toolkit", ["12.9", "13.0.2"], "cuda_toolkit_versions", "U")
    cudnn = [("libcudnn9-cuda-13", "9.14.0.64-1"), ("libcudnn9-dev-cuda-13", "9.14.0.64-1"), ("zlib", "1")]
    install_repo.check_one_major(cudnn, "cudnn", "13", "cudnn_version", "U")


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
    with pytest.raises(install_repo.RepoError) as err:
        install_repo.check_one_major(members, what, wanted, var, "http://m/cuda/repos/debian12/x86_64/")
    assert str(err.value).startswith(f"{var}: the package set resolved from http://m/cuda/repos/debian12")
    assert "mixes CUDA majors or releases: " + stray in str(err.value)
    assert "nothing was pinned or installed" in str(err.value)


CUDNN9 = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]


def installed(*rows):
    """{name: {version, held}} as the facts' packages.installed holds it, from (name, version, held) rows."""
    return {name: {"version": version, "held": held} for name, version, held in rows}


# ---------------------------------------------------------------- the pinned set against the installed state
def test_pinned_set_releases_the_holds_a_move_changes():
    members = [(n, "9.28.0.42-1") for n in CUDNN9]
    have = installed(*((n, "9.14.0.64-1", True) for n in CUDNN9))
    packages, pins = install_repo.pinned_packages("cudnn", members, [], have, False)
    assert packages["specs"] == [f"{n}=9.28.0.42-1" for n in CUDNN9]
    assert packages["missing"] == packages["specs"]
    assert packages["unhold"] == CUDNN9  # the move releases the holds, the role sets them again
    assert packages["hold"] == CUDNN9
    assert packages["installed"] == dict.fromkeys(CUDNN9, "9.14.0.64-1")
    assert pins == members
    same, _pins = install_repo.pinned_packages("cudnn", [(n, "9.14.0.64-1") for n in CUDNN9], [], have, False)
    assert (same["missing"], same["unhold"]) == ([], [])


def test_pinned_cuda_major_switch_replaces_the_other_majors_cudnn_packages():
    old = [(n, "9.14.0.64-1") for n in CUDNN9]
    members = [(n.replace("-13", "-12"), "9.14.0.64-1") for n in CUDNN9]
    have = installed(*((n, "9.14.0.64-1", True) for n in CUDNN9))
    packages, pins = install_repo.pinned_packages("cudnn", members, old, have, False)
    assert packages["replaced"] == CUDNN9 and packages["unhold"] == CUDNN9
    assert (packages["remove"], packages["kept"]) == ([], [])
    assert packages["hold"] == [n for n, _v in members]
    assert pins == members  # the other major's pins go


def test_pinned_unlisted_toolkit_stays_pinned_unless_its_removal_is_asked():
    previous = [("cuda-nvcc-12-9", "12.9.86-1"), ("cuda-toolkit-12-9", "12.9.1-1")]
    members = [("cuda-toolkit-13-0", "13.0.2-1")]
    have = installed(("cuda-toolkit-12-9", "12.9.1-1", False), ("cuda-nvcc-12-9", "12.9.86-1", False))
    packages, pins = install_repo.pinned_packages("cuda_toolkit", members, previous, have, False)
    assert packages["kept"] == ["cuda-nvcc-12-9", "cuda-toolkit-12-9"]
    # the kept set stays pinned and, with cuda_toolkit_hold, held (issue 36): nothing moves behind one's back
    assert (packages["remove"], packages["hold"]) == ([], ["cuda-toolkit-13-0", *packages["kept"]])
    assert packages["hold_missing"] == packages["hold"]  # none of them held yet
    assert pins == members + previous
    asked, pins = install_repo.pinned_packages("cuda_toolkit", members, previous, have, True)
    assert (asked["remove"], asked["kept"], asked["unhold"]) == (
        ["cuda-nvcc-12-9", "cuda-toolkit-12-9"],
        [],
        [],
    )
    assert pins == members


def test_pinned_dropping_the_dev_packages_keeps_them_held_unless_removal_is_asked():
    previous = [(n, "9.14.0.64-1") for n in CUDNN9]
    have = installed(*((n, "9.14.0.64-1", True) for n in CUDNN9))
    packages, pins = install_repo.pinned_packages("cudnn", previous[:1], previous, have, False)
    assert packages["kept"] == CUDNN9[1:]
    assert (packages["replaced"], packages["remove"], packages["unhold"]) == ([], [], [])
    assert packages["hold"] == CUDNN9 and pins == previous
    asked, pins = install_repo.pinned_packages("cudnn", previous[:1], previous, have, True)
    assert asked["remove"] == CUDNN9[1:] and asked["unhold"] == CUDNN9[1:]
    assert asked["hold"] == CUDNN9[:1] and pins == previous[:1]


def test_only_the_holds_not_in_place_are_set_again():
    """A run that changes nothing holds nothing; a package the install moves is held again after it."""
    members = [
        ("cuda-nvcc-13-0", "13.0.88-1"),
        ("cuda-toolkit-13-0", "13.0.2-1"),
        ("libcublas-13-0", "13.1.0.3-1"),
    ]
    have = installed(
        ("cuda-nvcc-13-0", "13.0.88-1", True),
        ("cuda-toolkit-13-0", "13.0.1-1", True),
        ("libcublas-13-0", "13.1.0.3-1", False),
    )
    packages, _pins = install_repo.pinned_packages("cuda_toolkit", members, [], have, False)
    assert packages["unhold"] == ["cuda-toolkit-13-0"]  # the move releases it first
    assert packages["hold_missing"] == ["cuda-toolkit-13-0", "libcublas-13-0"]
