"""nvidia_repo: executes the plan's repo (the key written once its fingerprint matched, the source file
rendered from the plan's fields) and resolves, checks and pins the plan's package specs from apt's index.

What the repository is and which packages a role installs is decided on the controller by plan/repo.py
(tests/unit/plugins/module_utils/plan/test_repo.py, plan/test_roles.py); the source file, the key's check,
the index and the pins are install/repo.py's (tests/unit/plugins/module_utils/install/test_repo.py). Here,
that the module executes the plan and reads the installed state through the one reader.
"""

import http.server
import os
import threading
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import repo as install_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import sources as plan_sources
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages
from ansible_collections.gpufleet.nvidia.plugins.modules import nvidia_repo

from tests.data.facts import fakeroot

KEY = (Path(__file__).resolve().parents[3] / "data" / "keys" / "test-signing-key.asc").read_bytes()
FPR = "C3B19113CF573F8BF336BC36548F7B3414DA5E58"
DEFAULTS = {
    "state": "present",
    "repo": None,
    "remove": [],
    "packages_for": None,
    "specs": None,
    "cuda_major": "",
    "versions": [],
    "remove_unlisted": False,
    "caller": "",
    "refresh": True,
    "timeout": 5,
    "validate_certs": True,
    "ca_path": None,
}


def plan_repo(dist, ver, base_url="", fingerprint="", tmp_path=None, **kw):
    """The plan's repo (plan/repo.repo_config, as nvidia_plan returns it), its files under tmp_path."""
    repo = repo_plan.repo_config(
        dist, ver, kw.get("machine", "x86_64"), base_url, fingerprint, prefix="cudnn"
    )
    if tmp_path is not None:
        repo.update(
            keyring=str(tmp_path / "etc" / "keyring.asc"), path=str(tmp_path / "etc" / "nvidia.sources")
        )
    return repo


class FakeDatabase:
    """The package database behind probe/packages.installed_state: "name<TAB>version<TAB>install|hold" lines;
    ``reads`` records the root of every read."""

    out = ""
    reads = []

    @classmethod
    def installed_state(cls, root_path="/", names=None):
        cls.reads.append(root_path)
        installed = {}
        for line in cls.out.splitlines():
            name, version, state = line.split("\t")
            installed[name] = {"version": version, "held": state == "hold"}
        return installed if names is None else {n: installed[n] for n in names if n in installed}


REAL_INSTALLED_STATE = probe_packages.installed_state


@pytest.fixture(autouse=True)
def _fake_package_database(monkeypatch):
    monkeypatch.setattr(probe_packages, "installed_state", FakeDatabase.installed_state)
    FakeDatabase.reads = []


class FakeModule:
    """AnsibleModule's surface the module uses; run_command answers by the command's first two words."""

    def __init__(self, params, installed_out="", check_mode=False, answers=None):
        self.params = dict(DEFAULTS, **params)
        self.check_mode = check_mode
        FakeDatabase.out = installed_out
        self.answers = answers or {}
        self.commands = []

    def run_command(self, cmd, environ_update=None):
        self.commands.append(list(cmd))
        return self.answers.get(" ".join(cmd[:2]), (0, "", ""))

    @staticmethod
    def atomic_move(src, dest):
        os.replace(src, dest)


@pytest.fixture
def repo_server(tmp_path):
    root = tmp_path / "repos" / "ubuntu2404" / "x86_64"
    root.mkdir(parents=True)
    (root / "3bf863cc.pub").write_bytes(KEY)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(tmp_path / "repos"), **kw)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_key_with_the_pinned_fingerprint_is_written_then_unchanged(repo_server, tmp_path):
    params = {"repo": plan_repo("Ubuntu", "24.04", repo_server, FPR, tmp_path)}
    assert nvidia_repo.run(FakeModule(params, check_mode=True))["changed"] is True
    assert not (tmp_path / "etc").exists()
    res = nvidia_repo.run(FakeModule(params))
    assert res["changed"] is True
    assert res["fingerprint"] == FPR
    assert res["repo"]["manager"] == "apt"  # the internal role's __internal_repo_result.repo.manager
    assert (tmp_path / "etc" / "keyring.asc").read_bytes() == KEY
    sources = (tmp_path / "etc" / "nvidia.sources").read_text()
    assert f"URIs: {repo_server}/ubuntu2404/x86_64/" in sources
    assert f"Signed-By: {tmp_path / 'etc' / 'keyring.asc'}\n" in sources  # rendered from the plan's fields
    assert res["content"] == sources
    assert nvidia_repo.run(FakeModule(params))["changed"] is False


def test_key_with_another_fingerprint_is_refused_and_nothing_written(repo_server, tmp_path):
    params = {"repo": plan_repo("Ubuntu", "24.04", repo_server, tmp_path=tmp_path)}
    with pytest.raises(install_repo.RepoError, match="not the pinned EB693B30"):
        nvidia_repo.run(FakeModule(params))
    assert not (tmp_path / "etc").exists()


def test_unreachable_key_is_a_clear_error(tmp_path):
    params = {"repo": plan_repo("Debian", "13", "http://127.0.0.1:9", tmp_path=tmp_path)}
    with pytest.raises(
        install_repo.RepoError, match="cannot fetch the repository key http://127.0.0.1:9/debian13"
    ):
        nvidia_repo.run(FakeModule(params))


def test_the_repository_alone_reads_no_package_database(tmp_path):
    params = {"repo": plan_repo("Ubuntu", "24.04", "http://127.0.0.1:9", tmp_path=tmp_path)}
    with pytest.raises(install_repo.RepoError, match="cannot fetch the repository key"):
        nvidia_repo.run(FakeModule(params))
    assert FakeDatabase.reads == []


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("url", "http://127.0.0.1:9/x/\nTypes: deb-src", "repo.url: "),
        ("keyring", "/etc/apt/keyrings/a b.asc", "repo.keyring: "),
    ],
)
def test_a_repo_field_that_would_add_a_line_is_refused_before_anything_is_fetched(
    tmp_path, field, value, needle
):
    repo = dict(plan_repo("Ubuntu", "24.04", tmp_path=tmp_path), **{field: value})
    module = FakeModule({"repo": repo})
    with pytest.raises(install_repo.RepoError, match=needle + ".* is not one token"):
        nvidia_repo.run(module)
    assert module.commands == [] and not (tmp_path / "etc").exists()


# ---------------------------------------------------------------- refresh and the package set (apt)

URL = "http://mirror.example/cuda/repos/debian12/x86_64/"
INDEX = """Package: libcudnn9-cuda-13
Version: 9.14.0.64-1
Depends: zlib1g

Package: libcudnn9-cuda-13
Version: 9.28.0.42-1
Depends: zlib1g

Package: libcudnn9-dev-cuda-13
Version: 9.14.0.64-1
Depends: libcudnn9-cuda-13 (= 9.14.0.64-1), libcudnn9-headers-cuda-13 (= 9.14.0.64-1)

Package: libcudnn9-dev-cuda-13
Version: 9.28.0.42-1
Depends: libcudnn9-cuda-13 (= 9.28.0.42-1), libcudnn9-headers-cuda-13 (= 9.28.0.42-1)

Package: libcudnn9-headers-cuda-13
Version: 9.14.0.64-1

Package: libcudnn9-headers-cuda-13
Version: 9.28.0.42-1

Package: cuda-toolkit-13-0
Version: 13.0.2-1
Depends: cuda-nvcc-13-0 (>= 13.0.88), cuda-toolkit-config-common (>= 13.0.96)

Package: cuda-nvcc-13-0
Version: 13.0.88-1
Depends: libnvvm-13-0 (>= 13.0.88) | libnvvm-virtual, build-essential

Package: cuda-nvcc-13-0
Version: 13.0.99-1

Package: libnvvm-13-0
Version: 13.0.88-1

Package: cuda-toolkit-config-common
Version: 13.0.96-1
"""


@pytest.fixture
def index_file(tmp_path, monkeypatch):
    path = tmp_path / "lists" / "mirror.example_cuda_repos_debian12_x86%5f64_Packages"
    path.parent.mkdir()
    path.write_text(INDEX)
    monkeypatch.setitem(install_repo.PIN_FILES, "cudnn", str(tmp_path / "prefs" / "gpufleet-cudnn.pref"))
    monkeypatch.setitem(
        install_repo.PIN_FILES, "cuda_toolkit", str(tmp_path / "prefs" / "gpufleet-cuda.pref")
    )
    return {"apt-get indextargets": (0, f"Packages\t{URL}\t{path}\nTranslations\t{URL}\t/nowhere\n", "")}


def _pinned(versions, packages_for="cudnn", dev=True, **kw):
    """The role's pinned call: the plan's repo and packages.specs (plan/repo.py's specs for ``versions``)."""
    repo = plan_repo("Debian", "12", "http://mirror.example/cuda/repos")
    cuda_major = kw.pop("cuda_major", "13" if packages_for == "cudnn" else "")
    if packages_for == "cudnn":
        specs = repo_plan.cudnn_packages(versions[0], cuda_major, repo["repo_dir"], dev=dev)
    else:
        specs = repo_plan.cuda_toolkit_packages(versions, repo["repo_dir"])
    return {
        "state": "pinned",
        "repo": repo,
        "packages_for": packages_for,
        "specs": specs,
        "versions": versions if packages_for == "cuda_toolkit" else [],
        "cuda_major": cuda_major,
        **kw,
    }


def test_present_refreshes_only_its_own_source(repo_server, tmp_path):
    params = {"repo": plan_repo("Ubuntu", "24.04", repo_server, FPR, tmp_path)}
    first = FakeModule(params)
    nvidia_repo.run(first)
    (update,) = first.commands
    assert update[:2] == ["apt-get", "update"]
    assert "APT::Get::List-Cleanup=0" in update  # the other repositories' lists are kept
    # a new source is tried from a staging copy first, then written
    assert not [a for a in update if a.startswith("Dir::Etc::SourceList=")][0].startswith(
        f"Dir::Etc::SourceList={tmp_path}"
    )
    again = FakeModule(params)
    nvidia_repo.run(again)
    assert f"Dir::Etc::SourceList={tmp_path / 'etc' / 'nvidia.sources'}" in again.commands[0]
    check = FakeModule(params, check_mode=True)
    nvidia_repo.run(check)
    assert check.commands == []  # check mode changes no list


BADSIG_12 = (
    "Err:1 http://gpufleet-mirror/cuda/repos/debian12/x86_64  InRelease\n"
    "  The following signatures were invalid: BADSIG 9E792F5C8530D456 gpufleet lab CUDA repository\n"
    "W: GPG error: http://gpufleet-mirror/cuda/repos/debian12/x86_64  InRelease: The following signatures "
    "were invalid: BADSIG 9E792F5C8530D456\n"
    "E: The repository 'http://gpufleet-mirror/cuda/repos/debian12/x86_64  InRelease' is not signed.\n"
)
MANIPULATED_13 = (
    "Err:1 http://127.0.0.1:8080/bad/sig  InRelease\n"
    "  Sub-process /usr/bin/sqv returned an error code (1), error message is: Verifying signature:"
    "            Message has been manipulated\n"
    "W: OpenPGP signature verification failed: http://127.0.0.1:8080/bad/sig  InRelease: Sub-process "
    "/usr/bin/sqv returned an error code (1)\n"
    "E: The repository 'http://127.0.0.1:8080/bad/sig  InRelease' is not signed.\n"
)
HASH_SUM = (
    "Err:2 http://127.0.0.1:8080/bad/hash  Packages\n  Hash Sum mismatch\n"
    "E: Failed to fetch http://127.0.0.1:8080/bad/hash/Packages.gz  Hash Sum mismatch\n"
    "E: Some index files failed to download. They have been ignored, or old ones used instead.\n"
)


@pytest.mark.parametrize(
    ("out", "words"),
    [
        (
            BADSIG_12,
            "its Release signature does not verify with the key pinned by cudnn_repo_key_fingerprint",
        ),
        (MANIPULATED_13, "its Release signature does not verify"),
        (HASH_SUM, "an index file does not match the hashes in its signed Release"),
    ],
)
def test_a_tampered_repository_is_refused_with_the_reason(repo_server, tmp_path, out, words):
    params = {
        "repo": plan_repo("Ubuntu", "24.04", repo_server, FPR, tmp_path),
        "caller": "gpufleet.nvidia.cudnn",
    }
    with pytest.raises(install_repo.RepoError) as err:
        nvidia_repo.run(FakeModule(params, answers={"apt-get update": (100, out, "")}))
    assert words in str(err.value)
    assert "nothing was installed or changed" in str(err.value)
    assert str(err.value).count("\n") == 0
    assert not (tmp_path / "etc").exists()  # the new key and source were never written


# dnf makecache of a staged .repo, as dnf 4.14 answered on an EL-shaped host (the lab's rhel9 repository)
DNF_BADSIG = (
    "NVIDIA CUDA                                      73 kB/s | 833  B     00:00\n"
    "Error: Failed to download metadata for repo 'gpufleet-nvidia-cuda': repomd.xml GPG signature "
    "verification error: Bad GPG signature\n"
)
DNF_NO_ASC = (
    "Errors during downloading metadata for repository 'gpufleet-nvidia-cuda':\n"
    "  - Curl error (37): Couldn't read a file:// file for file:///probe/noasc/repodata/repomd.xml.asc\n"
    "Error: Failed to download metadata for repo 'gpufleet-nvidia-cuda': GPG verification is enabled, but "
    "GPG signature is not available. This may be an error or the repository does not support GPG "
    "verification: "
    "Curl error (37): Couldn't read a file:// file for file:///probe/noasc/repodata/repomd.xml.asc\n"
)
DNF_UNREACHABLE = (
    "Error: Failed to download metadata for repo 'gpufleet-nvidia-cuda': Cannot download repomd.xml: Cannot "
    "download repodata/repomd.xml: All mirrors were tried\n"
)


@pytest.fixture
def el_repo(repo_server, tmp_path):
    """The plan's repo of a Rocky 9 host; the key served where the plan looks for it (D42D0685.pub)."""
    repo = plan_repo("Rocky", "9.6", repo_server, FPR, tmp_path)
    repo["path"] = str(tmp_path / "etc" / "yum.repos.d" / "gpufleet-cuda.repo")
    served = tmp_path / "repos" / "rhel9" / "x86_64"
    served.mkdir(parents=True)
    (served / repo["key_url"].rsplit("/", 1)[-1]).write_bytes(KEY)
    return repo


def test_dnf_reads_a_new_repo_from_a_staging_copy_before_it_is_written(el_repo, tmp_path):
    """Issue 38: an edited repomd.xml was only found at the install, after the .repo had been written; dnf
    makecache of a staged copy (its own reposdir and cachedir) reads it first, repo_gpgcheck on."""
    first = FakeModule({"repo": el_repo})
    assert nvidia_repo.run(first)["changed"] is True
    (makecache,) = first.commands
    assert makecache[0] == "dnf" and makecache[-1] == "makecache"
    options = ("--setopt=reposdir=", "--setopt=cachedir=")
    staged = [a.split("=", 1)[1] for a in makecache if a.startswith(options)]
    assert len(staged) == 2 and not any(path.startswith(str(tmp_path / "etc")) for path in staged)
    assert "repo_gpgcheck=1" in Path(el_repo["path"]).read_text()
    again = FakeModule({"repo": el_repo})
    assert nvidia_repo.run(again)["changed"] is False
    assert again.commands == []  # nothing changes: dnf reads it at its next transaction
    check = FakeModule({"repo": dict(el_repo, url=el_repo["url"] + "x/")}, check_mode=True)
    assert nvidia_repo.run(check)["changed"] is True and check.commands == []


@pytest.mark.parametrize(
    ("out", "words"),
    [
        (
            DNF_BADSIG,
            "its repomd.xml signature does not verify with the key pinned by cudnn_repo_key_fingerprint",
        ),
        (DNF_NO_ASC, "it has no repomd.xml.asc: its metadata is not signed"),
        (DNF_UNREACHABLE, "dnf could not fetch it"),
    ],
)
def test_a_repository_dnf_refuses_is_refused_with_the_reason_and_nothing_written(
    el_repo, tmp_path, out, words
):
    params = {"repo": el_repo, "caller": "gpufleet.nvidia.cudnn"}
    with pytest.raises(install_repo.RepoError) as err:
        nvidia_repo.run(FakeModule(params, answers={"dnf --assumeyes": (1, "", out)}))
    assert f"dnf refused the repository {el_repo['url']}: {words}" in str(err.value)
    assert "nothing was installed or changed" in str(err.value)
    assert str(err.value).count("\n") == 0
    assert not (tmp_path / "etc").exists()


def test_pinned_resolves_the_cudnn_set_and_pins_every_package(index_file, tmp_path):
    held = "".join(
        f"{n}\t9.14.0.64-1\thold\n"
        for n in ("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13")
    )
    res = nvidia_repo.run(FakeModule(_pinned(["9.28.0"]), installed_out=held, answers=index_file))
    pkgs = res["packages"]
    names = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
    assert pkgs["specs"] == [f"{n}=9.28.0.42-1" for n in names]
    assert pkgs["missing"] == pkgs["specs"]
    assert pkgs["unhold"] == names  # the move releases the holds, the role sets them again
    assert pkgs["hold"] == names
    assert res["changed"] is True
    pin = (tmp_path / "prefs" / "gpufleet-cudnn.pref").read_text()
    assert pin.count("Pin: version 9.28.0.42-1\nPin-Priority: 1001\n") == 3
    assert "Package: libcudnn9-headers-cuda-13\n" in pin
    again = nvidia_repo.run(FakeModule(_pinned(["9.28.0"]), installed_out=held, answers=index_file))
    assert again["changed"] is False  # the same pins


def test_pinned_cuda_toolkit_set_takes_the_release_versions_within_the_repository(index_file):
    res = nvidia_repo.run(FakeModule(_pinned(["13.0"], "cuda_toolkit"), answers=index_file))
    assert res["packages"]["specs"] == [
        "cuda-nvcc-13-0=13.0.88-1",  # the version cuda-toolkit-13-0 asks for, not the newer 13.0.99-1
        "cuda-toolkit-13-0=13.0.2-1",
        "cuda-toolkit-config-common=13.0.96-1",
        "libnvvm-13-0=13.0.88-1",  # build-essential is the distribution's: not part of the set
    ]
    # the whole set is what cuda_toolkit_hold holds (issue 36): none of it is installed, so none is held yet
    names = ["cuda-nvcc-13-0", "cuda-toolkit-13-0", "cuda-toolkit-config-common", "libnvvm-13-0"]
    assert res["packages"]["hold"] == res["packages"]["hold_missing"] == names


def test_pinned_names_the_versions_the_repository_has(index_file):
    with pytest.raises(install_repo.RepoError) as err:
        nvidia_repo.run(FakeModule(_pinned(["9.99.0"]), answers=index_file))
    assert str(err.value) == (
        f"cudnn_version: the repository {URL} has libcudnn9-cuda-13 9.14.0.64-1, 9.28.0.42-1, not 9.99.0; "
        "choose one of those versions"
    )


def test_pinned_without_an_index(tmp_path, index_file):
    none = {"apt-get indextargets": (0, "", "")}
    res = nvidia_repo.run(FakeModule(_pinned(["9.14.0"]), check_mode=True, answers=none))
    assert res["packages"]["index"] is False  # first run in check mode: the top-level plan stands
    assert res["packages"]["specs"][0] == "libcudnn9-cuda-13=9.14.0*"
    assert not (tmp_path / "prefs").exists()
    with pytest.raises(install_repo.RepoError, match="apt has no index of http://mirror.example"):
        nvidia_repo.run(FakeModule(_pinned(["9.14.0"]), answers=none))


def test_pinned_decides_on_the_installed_state_it_read_once(index_file):
    out = "libcudnn9-cuda-13\t9.14.0.64-1\tinstalled\nlibcudnn9-dev-cuda-13\t9.12.0.46-1\thold\n"
    module = FakeModule(_pinned(["9.14.0.64"]), installed_out=out, answers=index_file)
    packages = nvidia_repo.run(module)["packages"]
    assert packages["missing"] == [
        "libcudnn9-dev-cuda-13=9.14.0.64-1",
        "libcudnn9-headers-cuda-13=9.14.0.64-1",
    ]
    assert packages["unhold"] == ["libcudnn9-dev-cuda-13"]
    assert FakeDatabase.reads == ["/"]  # one read, through the one package-database reader
    assert [c[:2] for c in module.commands] == [["apt-get", "indextargets"]]


def test_a_package_of_the_set_installed_before_gpufleet_keeps_its_own_hold_state(index_file):
    """molecule removal: an admin's package of the set is pinned and recorded as theirs, never held by the
    role (its dpkg selection stays the admin's, so the removal leaves the host's selections as they were)."""
    out = "libcudnn9-cuda-13\t9.14.0.64-1\tinstalled\n"
    result = nvidia_repo.run(FakeModule(_pinned(["9.14.0.64"]), installed_out=out, answers=index_file))
    packages = result["packages"]
    assert "libcudnn9-cuda-13" in packages["names"] and "libcudnn9-cuda-13" in packages["installed"]
    assert "libcudnn9-cuda-13" not in packages["hold"] + packages["hold_missing"]
    assert packages["hold_missing"] == ["libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
    assert "libcudnn9-cuda-13 stays at 9.14.0.64-1; installed before gpufleet" in result["pin"]["content"]


def test_the_installed_state_comes_from_the_one_package_database_reader(tmp_path, index_file, monkeypatch):
    monkeypatch.setattr(probe_packages, "installed_state", REAL_INSTALLED_STATE)  # under a fake root
    fakeroot.dpkg_db(
        tmp_path / "root",
        [
            ("libcudnn9-cuda-13", "9.14.0.64-1", "hold ok installed", "amd64"),
            ("cuda-toolkit-13-0", "13.0.2-1", "deinstall ok config-files", "amd64"),
        ],
    )
    monkeypatch.setattr(nvidia_repo, "HOST_ROOT", str(tmp_path / "root"))
    module = FakeModule(_pinned(["9.14.0"], dev=False), answers=index_file)
    assert nvidia_repo.run(module)["packages"]["installed"] == {"libcudnn9-cuda-13": "9.14.0.64-1"}
    toolkit = FakeModule(_pinned(["13.0"], "cuda_toolkit"), answers=index_file)
    missing = nvidia_repo.run(toolkit)["packages"]["missing"]
    assert "cuda-toolkit-13-0=13.0.2-1" in missing  # removed: not installed


def test_pinned_needs_what_the_set_may_hold(index_file):
    for packages_for, option in (("cudnn", "cuda_major"), ("cuda_toolkit", "versions")):
        params = dict(
            _pinned(["9.14.0"] if packages_for == "cudnn" else ["13.0"], packages_for), **{option: ""}
        )
        if option == "versions":
            params["versions"] = []
        module = FakeModule(params, answers=index_file)
        with pytest.raises(install_repo.RepoError, match=f"^{option} is required with state=pinned"):
            nvidia_repo.run(module)
        assert module.commands == []


def test_pinned_with_dnf_pins_nothing(index_file):
    params = dict(_pinned(["9.14.0"]), repo=plan_repo("Rocky", "9.4", fingerprint=FPR))
    module = FakeModule(params, answers=index_file)
    res = nvidia_repo.run(module)
    assert res["packages"] == {"specs": params["specs"], "index": False} and res["changed"] is False
    assert module.commands == [] and FakeDatabase.reads == []


MIXED = (
    INDEX.replace(
        "Depends: libcudnn9-cuda-13 (= 9.28.0.42-1), libcudnn9-headers-cuda-13 (= 9.28.0.42-1)",
        "Depends: libcudnn9-cuda-13 (= 9.28.0.42-1), libcudnn9-headers-cuda-12 (= 9.28.0.42-1)",
    )
    + "\nPackage: libcudnn9-headers-cuda-12\nVersion: 9.28.0.42-1\n"
)


def test_pinned_refuses_a_set_that_mixes_cuda_majors_before_pinning(index_file, tmp_path):
    path = index_file["apt-get indextargets"][1].split("\t")[2].split("\n")[0]
    Path(path).write_text(MIXED)
    with pytest.raises(install_repo.RepoError) as err:
        nvidia_repo.run(FakeModule(_pinned(["9.28.0"]), answers=index_file))
    assert str(err.value).startswith(f"cudnn_version: the package set resolved from {URL} mixes CUDA majors")
    assert "libcudnn9-headers-cuda-12=9.28.0.42-1" in str(err.value)
    assert not (tmp_path / "prefs").exists()  # nothing pinned
    nvidia_repo.run(FakeModule(_pinned(["9.14.0"]), answers=index_file))  # 9.14's set is of one major


def test_pinned_reads_an_index_apt_keeps_compressed(index_file, tmp_path):
    # Ubuntu's container images set Acquire::GzipIndexes: apt keeps <list>.lz4 and indextargets names <list>;
    # read as it was, that index had "0 packages" on the H200's Ubuntu 24.04 container
    # (indextargets names <list>.lz4 itself: the compressed bytes were read as the index)
    path = Path(index_file["apt-get indextargets"][1].split("\t")[2].split("\n")[0])
    path.unlink()
    path.with_name(path.name + ".lz4").write_bytes(b"\x04\x22\x4d\x18" + bytes(64))  # an lz4 frame, not text
    named = index_file["apt-get indextargets"][1].replace(str(path), f"{path}.lz4")
    for listing in (named, index_file["apt-get indextargets"][1]):  # apt names the .lz4, or the plain name
        answers = {
            "apt-get indextargets": (0, listing, ""),
            "/usr/lib/apt/apt-helper cat-file": (0, INDEX, ""),
        }
        module = FakeModule(_pinned(["9.14.0"]), answers=answers)
        res = nvidia_repo.run(module)
        assert res["packages"]["specs"][0] == "libcudnn9-cuda-13=9.14.0.64-1"
        assert ["/usr/lib/apt/apt-helper", "cat-file", f"{path}.lz4"] in module.commands
    path.with_name(path.name + ".lz4").unlink()  # no list at all: apt has no index
    with pytest.raises(install_repo.RepoError, match="apt has no index of"):
        nvidia_repo.run(FakeModule(_pinned(["9.14.0"]), answers=answers))


def _held(names, version):
    return "".join(f"{n}\t{version}\thold\n" for n in names)


def test_a_cuda_major_switch_replaces_the_other_majors_cudnn_packages(index_file, tmp_path):
    # cudnn_cuda_major 13 -> 12: NVIDIA's packages conflict; the old set's holds are released so apt can
    # replace it, and its pins go
    c12 = INDEX.replace("-cuda-13", "-cuda-12")
    path = Path(index_file["apt-get indextargets"][1].split("\t")[2].split("\n")[0])
    path.write_text(INDEX + "\n" + c12)
    old = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
    nvidia_repo.run(FakeModule(_pinned(["9.14.0"]), answers=index_file))  # gpufleet's pins of the 13 set
    res = nvidia_repo.run(
        FakeModule(
            _pinned(["9.14.0"], cuda_major="12"), installed_out=_held(old, "9.14.0.64-1"), answers=index_file
        )
    )
    pkgs = res["packages"]
    assert pkgs["replaced"] == old and pkgs["unhold"] == old
    assert pkgs["remove"] == [] and pkgs["kept"] == []
    assert pkgs["hold"] == [n.replace("-13", "-12") for n in old]
    assert "-cuda-13" not in (tmp_path / "prefs" / "gpufleet-cudnn.pref").read_text()


def test_an_unlisted_toolkit_stays_pinned_unless_its_removal_is_asked(index_file, tmp_path):
    two = INDEX + "\nPackage: cuda-toolkit-12-9\nVersion: 12.9.1-1\nDepends: cuda-nvcc-12-9 (>= 12.9.86)\n"
    two += "\nPackage: cuda-nvcc-12-9\nVersion: 12.9.86-1\n"
    path = Path(index_file["apt-get indextargets"][1].split("\t")[2].split("\n")[0])
    path.write_text(two)
    nvidia_repo.run(FakeModule(_pinned(["12.9", "13.0"], "cuda_toolkit"), answers=index_file))
    installed = "cuda-toolkit-12-9\t12.9.1-1\tinstall\ncuda-nvcc-12-9\t12.9.86-1\tinstall\n"
    res = nvidia_repo.run(
        FakeModule(_pinned(["13.0"], "cuda_toolkit"), installed_out=installed, answers=index_file)
    )
    assert res["packages"]["kept"] == ["cuda-nvcc-12-9", "cuda-toolkit-12-9"]
    assert res["packages"]["remove"] == []
    pins = (tmp_path / "prefs" / "gpufleet-cuda.pref").read_text()
    assert (
        "Package: cuda-toolkit-12-9\nPin: version 12.9.1-1\n" in pins
    )  # nothing moves behind the user's back
    asked = nvidia_repo.run(
        FakeModule(
            _pinned(["13.0"], "cuda_toolkit", remove_unlisted=True),
            installed_out=installed,
            answers=index_file,
        )
    )
    assert asked["packages"]["remove"] == ["cuda-nvcc-12-9", "cuda-toolkit-12-9"]
    assert "12-9" not in (tmp_path / "prefs" / "gpufleet-cuda.pref").read_text()


def test_dropping_the_dev_packages_keeps_them_unless_removal_is_asked(index_file, tmp_path):
    # cudnn_install_dev false after true: the -dev and -headers gpufleet installed stay installed, pinned and
    # held (molecule repo once saw them taken for another CUDA major's set and released)
    names = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
    nvidia_repo.run(FakeModule(_pinned(["9.14.0"]), answers=index_file))
    held = _held(names, "9.14.0.64-1")
    res = nvidia_repo.run(FakeModule(_pinned(["9.14.0"], dev=False), installed_out=held, answers=index_file))
    pkgs = res["packages"]
    assert (pkgs["kept"], pkgs["replaced"], pkgs["remove"], pkgs["unhold"]) == (names[1:], [], [], [])
    assert pkgs["hold"] == names
    asked = nvidia_repo.run(
        FakeModule(
            _pinned(["9.14.0"], dev=False, remove_unlisted=True), installed_out=held, answers=index_file
        )
    )
    assert asked["packages"]["remove"] == names[1:] and asked["packages"]["unhold"] == names[1:]
    assert asked["packages"]["hold"] == names[:1]


@pytest.mark.parametrize(("dist", "ver"), [("Ubuntu", "24.04"), ("Rocky", "9.4")])
def test_the_plans_repo_is_what_the_module_takes(dist, ver):
    """The roles pass the plan's repo as it is: every key of plan/repo.repo_config and of what the host's
    sources decide (plan/sources.adoption, through plan/roles.role_repo) is an option of repo."""
    repo = plan_repo(dist, ver, fingerprint=FPR)
    repo.update(plan_sources.adoption(repo, {"entries": []}))
    assert set(repo) == set(nvidia_repo.REPO_OPTIONS)
    required = {name for name, spec in nvidia_repo.REPO_OPTIONS.items() if spec.get("required")}
    assert all(repo[name] for name in required)


# ---------------------------------------------------------------- the host's own source, adopted
ADOPTED = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"


def _adopting(tmp_path, remove_own=True, **kw):
    """The plan's repo adopting the host's cuda-keyring source; gpufleet's own files under tmp_path/etc from
    an earlier run; the key URL unreachable (an adopted repository's key is never fetched)."""
    repo = plan_repo("Debian", "12", "http://127.0.0.1:9/cuda/repos", FPR, tmp_path)
    repo["adopt"] = {"path": ADOPTED, "keyring": "/usr/share/keyrings/cuda-archive-keyring.gpg",
                     "uri": repo["url"], "owner": "cuda-keyring", "line": 1, "id": None}  # fmt: skip
    repo["remove_own"] = [repo["path"], repo["keyring"]] if remove_own else []
    repo.update(kw)
    return repo


def _earlier_run(repo):
    own = Path(repo["path"])
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text(install_repo.render_source(repo))
    Path(repo["keyring"]).write_bytes(KEY)
    return own


def test_an_adopted_source_writes_no_key_and_no_source_and_refreshes_from_the_adopted_file(tmp_path):
    repo = _adopting(tmp_path, remove_own=False)
    module = FakeModule({"repo": repo})
    res = nvidia_repo.run(module)
    assert (res["changed"], res["adopted"], res["removed"], res["diff"]) == (False, ADOPTED, [], [])
    assert "fingerprint" not in res and "content" not in res  # nothing fetched (the key URL is unreachable)
    (update,) = module.commands
    assert update[:2] == ["apt-get", "update"] and f"Dir::Etc::SourceList={ADOPTED}" in update
    assert not (tmp_path / "etc").exists()


def test_adopting_removes_gpufleets_own_source_and_keyring_check_mode_and_diff_first(tmp_path):
    repo = _adopting(tmp_path)
    own = _earlier_run(repo)
    check = FakeModule({"repo": repo}, check_mode=True)
    res = nvidia_repo.run(check)
    assert res["changed"] is True and res["removed"] == [repo["path"], repo["keyring"]]
    assert [d["before_header"] for d in res["diff"]] == [repo["path"], repo["keyring"]]
    assert res["diff"][0]["before"].startswith(install_repo.MANAGED) and res["diff"][0]["after"] == ""
    assert check.commands == [] and own.exists()  # check mode: reported, nothing removed or refreshed
    real = FakeModule({"repo": repo})
    assert nvidia_repo.run(real)["changed"] is True
    assert not own.exists() and not Path(repo["keyring"]).exists()
    assert f"Dir::Etc::SourceList={ADOPTED}" in real.commands[0]
    again = nvidia_repo.run(FakeModule({"repo": repo}))
    assert (again["changed"], again["removed"]) == (False, [])


def test_a_refused_adopted_repository_removes_nothing(tmp_path):
    repo = _adopting(tmp_path)
    own = _earlier_run(repo)
    with pytest.raises(install_repo.RepoError, match="its Release signature does not verify"):
        nvidia_repo.run(FakeModule({"repo": repo}, answers={"apt-get update": (100, BADSIG_12, "")}))
    assert own.exists() and Path(repo["keyring"]).exists()


def test_only_gpufleets_own_files_are_removed(tmp_path):
    repo = _adopting(tmp_path)
    Path(repo["path"]).parent.mkdir(parents=True)
    Path(repo["path"]).write_text("Types: deb\nURIs: http://admin.example/ /\n")  # no gpufleet header
    with pytest.raises(install_repo.RepoError, match="does not start with gpufleet's header"):
        nvidia_repo.run(FakeModule({"repo": repo}))
    assert Path(repo["path"]).exists()
    other = _adopting(tmp_path, remove_own=False)
    other["remove_own"] = [ADOPTED]
    with pytest.raises(install_repo.RepoError, match=f"repo.remove_own: {ADOPTED} is not gpufleet's"):
        nvidia_repo.run(FakeModule({"repo": other}))


def test_pinned_reads_the_index_apt_lists_under_the_adopted_sources_uri(index_file):
    # a source that names the repository as a flat suite under the repos/ URI (deb <repos>/ debian12/x86_64/):
    # apt lists its index under that URI
    params = _pinned(["9.14.0"])
    base = "http://mirror.example/cuda/repos/"
    params["repo"] = dict(params["repo"], adopt={"path": ADOPTED, "keyring": "", "uri": base})
    listing = index_file["apt-get indextargets"][1].replace(URL, base)
    res = nvidia_repo.run(FakeModule(params, answers={"apt-get indextargets": (0, listing, "")}))
    assert res["packages"]["index"] is True
    assert res["packages"]["specs"][0] == "libcudnn9-cuda-13=9.14.0.64-1"
    without = dict(params, repo=dict(params["repo"], adopt=None))
    with pytest.raises(install_repo.RepoError, match="apt has no index of"):
        nvidia_repo.run(FakeModule(without, answers={"apt-get indextargets": (0, listing, "")}))


@pytest.mark.parametrize(
    ("given", "used"), [("", None), (None, None), ("/etc/ssl/site-ca.pem", "/etc/ssl/site-ca.pem")]
)
def test_the_roles_ca_path_verifies_the_keys_server_empty_is_the_systems(
    repo_server, tmp_path, monkeypatch, given, used
):
    """Issue 36: the roles pass <role>_ca_path as it is ("" when unset): the key's fetch gets it, or None."""
    seen = []
    real = install_repo.fetch_key

    def fetch_key(url, timeout, validate_certs=True, ca_path=None):
        seen.append((validate_certs, ca_path))
        return real(url, timeout, validate_certs)

    monkeypatch.setattr(install_repo, "fetch_key", fetch_key)
    params = {"repo": plan_repo("Ubuntu", "24.04", repo_server, FPR, tmp_path), "ca_path": given}
    nvidia_repo.run(FakeModule(params, check_mode=True))
    assert seen == [(True, used)]


# ---------------------------------------------------------------- removal (issue 36: <role>_state: absent)
PURGE_SIM = (
    "Reading package lists...\n"
    "Purg libcudnn9-dev-cuda-13 [9.14.0.64-1]\nPurg libcudnn9-cuda-13 [9.14.0.64-1]\n"
    "Purg libcudnn9-headers-cuda-13 [9.14.0.64-1]\nRemv zlib-old [1-1]\nPurg libfoo-dep:amd64 [2-1]\n"
)


class RemovalModule(FakeModule):
    """apt's answers by the whole command: the simulations and the purge."""

    def __init__(self, params, installed_out, answers=None, check_mode=False):
        super().__init__(params, installed_out, check_mode=check_mode)
        self.by_command = answers or {}

    def run_command(self, cmd, environ_update=None):
        self.commands.append(list(cmd))
        key = (
            "purge" if "purge" in cmd and "--simulate" in cmd else cmd[-1] if "--simulate" in cmd else "real"
        )
        return self.by_command.get(key, (0, "", ""))


@pytest.fixture
def cudnn_record(tmp_path, monkeypatch):
    """gpufleet's pin file of the cuDNN set under a fake root: libcudnn9-cuda-13 and -dev, -headers its own,
    zlib-ish there before it."""
    monkeypatch.setattr(nvidia_repo, "HOST_ROOT", str(tmp_path))
    text = install_repo.pin_file(
        "cudnn",
        [
            (n, "9.14.0.64-1")
            for n in ("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13")
        ]
        + [("zlib-ish", "1-1")],
        ["zlib-ish"],
    )["content"]
    fakeroot.write(tmp_path, "/etc/apt/preferences.d/gpufleet-cudnn.pref", text)
    fakeroot.dpkg_db(tmp_path, [])
    fakeroot.write(
        tmp_path,
        "/var/lib/apt/extended_states",
        "Package: libfoo-dep\nArchitecture: amd64\nAuto-Installed: 1\n\n"
        "Package: zlib-old\nArchitecture: amd64\nAuto-Installed: 1\n",
    )
    return tmp_path / "etc/apt/preferences.d/gpufleet-cudnn.pref"


CUDNN_SET = "\n".join(
    f"{n}\t9.14.0.64-1\thold"
    for n in ("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13")
)
OWN = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]


def _absent(**kw):
    return dict({"state": "absent", "packages_for": "cudnn", "remove": OWN, "repo": None}, **kw)


def test_absent_purges_the_recorded_set_and_what_only_it_pulled_in(cudnn_record):
    answers = {"autoremove": (0, "Remv zlib-old [1-1]\n", ""), "purge": (0, PURGE_SIM, "")}
    check = RemovalModule(_absent(), CUDNN_SET, answers, check_mode=True)
    res = nvidia_repo.run(check)
    # zlib-old was unneeded before (someone else's to autoremove): not taken; libfoo-dep only ours needed
    assert res["packages"] == {"remove": OWN, "also": ["libfoo-dep"]}
    assert res["changed"] is True and res["removed"] == [str(cudnn_record)]
    assert all("--simulate" in c for c in check.commands) and cudnn_record.exists()
    real = RemovalModule(_absent(), CUDNN_SET, answers)
    nvidia_repo.run(real)
    assert real.commands[-1] == [
        "apt-get", "--yes", "--allow-change-held-packages", "purge", *OWN, "libfoo-dep"
    ]  # fmt: skip
    assert not cudnn_record.exists()  # the record goes with what it listed
    # the plan of the removed host asks for nothing: nothing changes
    again = nvidia_repo.run(RemovalModule(_absent(remove=[]), ""))
    assert (again["changed"], again["packages"]["remove"], again["removed"]) == (False, [], [])


def test_absent_refuses_a_name_gpufleet_did_not_install(cudnn_record):
    """zlib-ish is in the pin file, but it was there before gpufleet: never removed by it."""
    with pytest.raises(install_repo.RepoError, match=r"^remove: zlib-ish not in gpufleet's record of cudnn"):
        nvidia_repo.run(RemovalModule(_absent(remove=[*OWN, "zlib-ish"]), CUDNN_SET))
    assert cudnn_record.exists()


def test_absent_refuses_what_would_take_a_package_someone_installed(cudnn_record):
    sim = PURGE_SIM + "Remv torch-cudnn-user [1.0]\n"
    module = RemovalModule(_absent(), CUDNN_SET, {"purge": (0, sim, "")})
    with pytest.raises(install_repo.RepoError) as refused:
        nvidia_repo.run(module)
    assert str(refused.value).startswith(
        "cudnn_state=absent: removing gpufleet's libcudnn9-cuda-13 libcudnn9-dev-cuda-13 "
        "libcudnn9-headers-cuda-13 would also remove torch-cudnn-user, which gpufleet did not install"
    )
    assert not any("--yes" in c for c in module.commands) and cudnn_record.exists()


def test_absent_removes_gpufleets_own_source_only_when_asked(cudnn_record, tmp_path):
    repo = plan_repo("Debian", "12", "http://127.0.0.1:9/cuda/repos", FPR, tmp_path)
    own = _earlier_run(repo)
    keep = nvidia_repo.run(RemovalModule(_absent(remove=[]), "", check_mode=True))
    assert keep["removed"] == [str(cudnn_record)]  # no repo given: the source stays
    repo["remove_own"] = [repo["path"], repo["keyring"]]
    res = nvidia_repo.run(RemovalModule(_absent(remove=[], repo=repo), ""))
    assert res["removed"] == [str(cudnn_record), repo["path"], repo["keyring"]]
    assert not own.exists() and not Path(repo["keyring"]).exists()


def test_absent_on_dnf_asks_rpm_what_needs_the_packages(tmp_path, monkeypatch):
    monkeypatch.setattr(nvidia_repo, "HOST_ROOT", str(tmp_path))
    fakeroot.write(
        tmp_path,
        "/var/lib/gpufleet/nvidia_driver.record",
        "# Managed by gpufleet (nvidia_driver): the driver packages\npackage: kmod-nvidia-open-dkms\n",
    )
    fakeroot.rpm_db(tmp_path)
    monkeypatch.setattr(probe_packages, "rpm_removal_blockers", lambda root, names: ["cuda-12-8-1.x86_64"])
    params = {"state": "absent", "packages_for": "nvidia_driver", "remove": ["kmod-nvidia-open-dkms"]}
    with pytest.raises(install_repo.RepoError, match="would also remove cuda-12-8-1.x86_64"):
        nvidia_repo.run(RemovalModule(params, "kmod-nvidia-open-dkms\t580.95.05-1\tinstall"))
    monkeypatch.setattr(probe_packages, "rpm_removal_blockers", lambda root, names: [])
    module = RemovalModule(params, "kmod-nvidia-open-dkms\t580.95.05-1\tinstall")
    res = nvidia_repo.run(module)
    assert module.commands == [["dnf", "--assumeyes", "remove", "kmod-nvidia-open-dkms"]]
    assert res["removed"] == [str(tmp_path / "var/lib/gpufleet/nvidia_driver.record")]


def test_the_simulations_parse_apts_words():
    assert install_repo.simulated_removals(PURGE_SIM) == sorted(
        ["libcudnn9-dev-cuda-13", "libcudnn9-cuda-13", "libcudnn9-headers-cuda-13", "zlib-old", "libfoo-dep"]
    )
    assert install_repo.removal_set(["a"], ["a", "b", "c", "d"], {"c"}, {"b", "c"}) == {
        "also": ["b"],
        "others": ["d"],
    }
