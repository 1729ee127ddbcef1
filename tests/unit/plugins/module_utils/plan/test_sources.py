"""plan/sources.py: the repository a plan wants against the host's package sources (the facts' `sources`):
adopt NVIDIA's source a host already has (and remove gpufleet's superseded own one), or refuse before any
change; without such a source the plan is today's."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import sources as plan_sources

NVIDIA = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
PINNED = "EB693B3035CD5710E231E123A4B469963BF863CC"  # 3bf863cc, plan/repo.KEYS
RETIRED = "AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80"  # 7fa2af80
CUDA_LIST = "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list"
CUDA_KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"
OWN = "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources"
OWN_KEYRING = "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"


def entry(file, uri, suite="/", keyrings=(), fmt="one-line", **kw):
    """An entry as probe/sources.py reports it."""
    out = {"file": file, "format": fmt, "line": 1, "id": None, "enabled": True, "types": ["deb"],
           "uris": [uri], "suites": [suite], "components": [], "options": {}, "gpgcheck": None,
           "repo_gpgcheck": None, "gpgkey": [], "keyrings": list(keyrings), "fingerprints": [],
           "inline_key": False, "owner": None}  # fmt: skip
    out.update(kw)
    return out


def ring(*fingerprints, exists=True):
    return {
        "exists": exists,
        "fingerprints": list(fingerprints),
        "subkeys": [],
        "owner": None,
        "reason": None,
    }


def facts(entries, keyrings=None, trusted=()):
    return {"entries": entries, "keyrings": keyrings or {}, "trusted": list(trusted), "reasons": []}


def guide(uri=NVIDIA, key=PINNED, **kw):
    """cuda-keyring's source and keyring, as NVIDIA's installation guide leaves them."""
    return facts(
        [entry(CUDA_LIST, uri, keyrings=[CUDA_KEYRING], owner="cuda-keyring", **kw)],
        {CUDA_KEYRING: dict(ring(key), owner="cuda-keyring")},
    )


def ubuntu(base_url=""):
    return repo_plan.repo_config("Ubuntu", "24.04", "x86_64", base_url, prefix="cudnn")


def test_no_foreign_source_is_todays_plan():
    repo = ubuntu()
    debian = entry("/etc/apt/sources.list.d/ubuntu.sources", "http://archive.ubuntu.com/ubuntu", "noble")
    for found in (None, {}, facts([]), facts([debian])):
        assert plan_sources.adoption(repo, found, "cudnn") == {"adopt": None, "remove_own": [], "words": ""}
    own = facts([entry(OWN, NVIDIA, keyrings=[OWN_KEYRING], fmt="deb822")], {OWN_KEYRING: ring(PINNED)})
    assert plan_sources.adoption(repo, own, "cudnn")["adopt"] is None  # gpufleet's own source: kept as it is


def test_the_nvidia_guides_source_is_adopted():
    decided = plan_sources.adoption(ubuntu(), guide(), "cudnn")
    assert decided["adopt"] == {
        "path": CUDA_LIST, "keyring": CUDA_KEYRING, "uri": NVIDIA, "owner": "cuda-keyring", "line": 1,
        "id": None,
    }  # fmt: skip
    assert decided["remove_own"] == []
    assert decided["words"] == f"adopting {CUDA_LIST} (cuda-keyring)"


def test_adopting_removes_gpufleets_own_source_and_keyring_of_an_earlier_run():
    found = guide()
    found["entries"].append(entry(OWN, NVIDIA, keyrings=[OWN_KEYRING], fmt="deb822"))
    found["keyrings"][OWN_KEYRING] = ring(PINNED)
    decided = plan_sources.adoption(ubuntu(), found, "cudnn")
    assert decided["adopt"]["path"] == CUDA_LIST
    assert decided["remove_own"] == [OWN, OWN_KEYRING]
    assert decided["words"] == (
        f"adopting {CUDA_LIST} (cuda-keyring); removing gpufleet's own {OWN} and {OWN_KEYRING}"
    )


@pytest.mark.parametrize(
    "uri",
    [
        NVIDIA.rstrip("/"),  # no trailing slash
        "HTTPS://Developer.Download.NVIDIA.com:443/compute/cuda/repos//ubuntu2404/x86_64",
    ],
)
def test_the_url_is_compared_normalized(uri):
    assert plan_sources.adoption(ubuntu(), guide(uri), "cudnn")["adopt"]["path"] == CUDA_LIST


def test_a_flat_suite_that_is_a_path_and_deb822_suites_slash_are_the_same_repository():
    base = "https://developer.download.nvidia.com/compute/cuda/repos/"
    adopted = plan_sources.adoption(ubuntu(), guide(base, suite="ubuntu2404/x86_64/"), "cudnn")["adopt"]
    assert adopted["uri"] == base  # what apt's index names (REPO_URI)
    deb822 = guide(fmt="deb822")
    assert plan_sources.adoption(ubuntu(), deb822, "cudnn")["adopt"]["path"] == CUDA_LIST


@pytest.mark.parametrize(
    "found",
    [
        guide("http://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"),  # another scheme
        guide(suite="noble"),  # a dists/ suite: another repository
        guide(enabled=False),  # a commented-out line: apt does not read it
        guide(types=["deb-src"]),
        guide("https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"),
    ],
)
def test_what_is_not_the_same_enabled_repository_is_left_alone(found):
    assert plan_sources.adoption(ubuntu(), found, "cudnn")["adopt"] is None


def test_the_users_mirror_is_the_url_matched():
    mirror = "http://gpufleet-mirror/cuda/repos"
    repo = ubuntu(mirror)
    assert plan_sources.adoption(repo, guide(), "cudnn")["adopt"] is None  # NVIDIA's URL is not the mirror's
    found = guide(f"{mirror}/ubuntu2404/x86_64/")
    assert plan_sources.adoption(repo, found, "cudnn")["adopt"]["path"] == CUDA_LIST


def test_a_keyring_with_only_the_retired_key_is_refused():
    with pytest.raises(repo_plan.RepoPlanError) as err:
        plan_sources.adoption(ubuntu(), guide(key=RETIRED), "cudnn")
    text = str(err.value)
    assert text.startswith(
        f"cudnn_source='nvidia_repo': {CUDA_LIST} (line 1) already serves the repository {NVIDIA}"
    )
    assert f"its keys ({CUDA_KEYRING}) are {RETIRED} (NVIDIA's CUDA repository key 7fa2af80, retired" in text
    assert f"not the pinned {PINNED} (cudnn_repo_key_fingerprint)" in text
    assert "install NVIDIA's cuda-keyring package (cuda-keyring_1.1-1_all.deb" in text
    assert "apt-key del 7fa2af80" in text and f"or remove {CUDA_LIST}" in text
    assert "or set cudnn_repo_use_existing: true" in text and text.endswith("nothing was changed")
    assert "\n" not in text


def test_a_missing_keyring_is_refused():
    found = guide()
    found["keyrings"][CUDA_KEYRING] = ring(exists=False)
    with pytest.raises(repo_plan.RepoPlanError, match=f"its Signed-By keyring {CUDA_KEYRING} does not exist"):
        plan_sources.adoption(ubuntu(), found, "cuda_toolkit")


def test_two_foreign_sources_with_different_signed_by_are_refused_naming_both():
    found = guide()
    found["entries"].append(entry("/etc/apt/sources.list", NVIDIA.rstrip("/"), line=7))
    with pytest.raises(repo_plan.RepoPlanError) as err:
        plan_sources.adoption(ubuntu(), found, "nvidia_driver")
    text = str(err.value)
    assert f"{CUDA_LIST} (line 1) (Signed-By {CUDA_KEYRING}) and /etc/apt/sources.list (line 7)" in text
    assert "(Signed-By none (apt's global keyrings)) serve the same repository" in text
    assert "Conflicting values set for option Signed-By" in text
    assert "or set nvidia_driver_repo_use_existing: true" in text


def test_two_foreign_sources_with_the_same_signed_by_adopt_the_first():
    found = guide()
    found["entries"].append(entry("/etc/apt/sources.list.d/zz.list", NVIDIA, keyrings=[CUDA_KEYRING]))
    assert plan_sources.adoption(ubuntu(), found, "cudnn")["adopt"]["path"] == CUDA_LIST


def test_a_source_without_signed_by_is_judged_by_apts_global_keyrings():
    trusted = "/etc/apt/trusted.gpg.d/cuda.gpg"
    old_style = [entry("/etc/apt/sources.list.d/cuda.list", NVIDIA)]
    adopted = plan_sources.adoption(ubuntu(), facts(old_style, {trusted: ring(PINNED)}, [trusted]), "cudnn")
    assert adopted["adopt"] == {"path": "/etc/apt/sources.list.d/cuda.list", "keyring": "", "uri": NVIDIA,
                                "owner": None, "line": 1, "id": None}  # fmt: skip
    with pytest.raises(
        repo_plan.RepoPlanError, match=r"its keys \(none \(apt's global keyrings\)\) are AE09"
    ):
        plan_sources.adoption(ubuntu(), facts(old_style, {trusted: ring(RETIRED)}, [trusted]), "cudnn")


def test_an_inline_key_is_judged_by_its_own_fingerprint():
    inline = [entry("/etc/apt/sources.list.d/cuda.sources", NVIDIA, fmt="deb822", inline_key=True,
                    fingerprints=[PINNED])]  # fmt: skip
    assert plan_sources.adoption(ubuntu(), facts(inline), "cudnn")["adopt"]["keyring"] == ""


# ---------------------------------------------------------------- dnf
RHEL = "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"


def rhel_repo(**kw):
    fields = {"id": "cuda-rhel9-x86_64", "types": ["rpm"], "suites": [], "gpgcheck": True,
              "gpgkey": [f"{RHEL}/D42D0685.pub"]}  # fmt: skip
    fields.update(kw)
    return entry("/etc/yum.repos.d/cuda-rhel9.repo", RHEL, fmt="repo", **fields)


def rocky():
    return repo_plan.repo_config("Rocky", "9.5", "x86_64", "", PINNED, prefix="cuda_toolkit")


def test_nvidias_rhel_repo_file_is_adopted():
    decided = plan_sources.adoption(rocky(), facts([rhel_repo()]), "cuda_toolkit")
    assert decided["adopt"] == {"path": "/etc/yum.repos.d/cuda-rhel9.repo", "keyring": "", "uri": RHEL,
                                "owner": None, "line": 1, "id": "cuda-rhel9-x86_64"}  # fmt: skip


@pytest.mark.parametrize(
    "section", [rhel_repo(gpgcheck=False), rhel_repo(gpgcheck=None), rhel_repo(gpgkey=[])]
)
def test_a_rhel_repo_without_signature_checks_is_refused(section):
    with pytest.raises(repo_plan.RepoPlanError) as err:
        plan_sources.adoption(rocky(), facts([section]), "cuda_toolkit")
    text = str(err.value)
    assert text.startswith(
        "cuda_toolkit_source='nvidia_repo': /etc/yum.repos.d/cuda-rhel9.repo [cuda-rhel9-x86_64]"
    )
    assert f"set gpgcheck=1 and gpgkey={RHEL}/D42D0685.pub in it" in text


def test_a_rhel_repo_whose_key_file_is_gone_is_refused():
    section = rhel_repo(gpgkey=["file:///etc/pki/rpm-gpg/K"], keyrings=["/etc/pki/rpm-gpg/K"])
    with pytest.raises(repo_plan.RepoPlanError, match="gpgkey=file:///etc/pki/rpm-gpg/K"):
        plan_sources.adoption(rocky(), facts([section], {"/etc/pki/rpm-gpg/K": ring(exists=False)}), "x")
