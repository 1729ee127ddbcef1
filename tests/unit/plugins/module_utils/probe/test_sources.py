"""probe/sources.py: the host's apt and dnf package sources and their keyrings (the `sources` subset of
nvidia_facts), read from fake root trees: one-line entries with options, deb822 stanzas (disabled, multi-type,
an inline key), dnf .repo sections, the keys of armored and binary keyrings, the package that owns a file."""

import base64
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import sources
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages

from tests.data.facts import fakeroot

KEYS = Path(__file__).resolve().parents[4] / "data" / "keys"
PINNED = (KEYS / "test-signing-key.asc").read_bytes()
PINNED_FPR = "C3B19113CF573F8BF336BC36548F7B3414DA5E58"
OTHER = (KEYS / "test-second-key.asc").read_bytes()
OTHER_FPR = "CF2406E135EA14C3660B3CE6AD0E292DE5243B04"
NVIDIA = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/"
CUDA_LIST = "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list"
CUDA_KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"


def binary(armored):
    """The keyring as `gpg --dearmor` writes it (decoded here independently of openpgp.dearmor)."""
    lines = armored.decode().split("\n\n", 1)[1].split("-----END", 1)[0].splitlines()
    return base64.b64decode("".join(line for line in lines if not line.startswith("=")))


def nvidia_guide_host(root, key=PINNED):
    """A host set up by NVIDIA's installation guide: cuda-keyring's .list and binary keyring, both in the
    package's file list."""
    fakeroot.bare(root, "ubuntu", "24.04")
    fakeroot.write(root, CUDA_LIST, f"deb [signed-by={CUDA_KEYRING}] {NVIDIA} /\n")
    fakeroot.write(root, CUDA_KEYRING, binary(key))
    fakeroot.dpkg_db(
        root,
        [("cuda-keyring", "1.1-1", "install ok installed", "all")],
        files={"cuda-keyring": ["/etc", "/etc/apt/sources.list.d", CUDA_LIST, CUDA_KEYRING]},
    )
    return root


# ---------------------------------------------------------------- the parsers
def test_one_line_entries_with_options_and_disabled_lines():
    text = (
        "deb [arch=amd64 signed-by=/usr/share/keyrings/a.gpg] http://deb.example/debian bookworm "
        "main contrib\n"
        "# deb-src [ arch=amd64,arm64 trusted=yes ] http://deb.example/debian bookworm main # a comment\n"
        "# See sources.list(5): not an entry\n"
        "deb http://flat.example/repo/ /  # a flat repository\n"
        "deb [signed-by=EB693B3035CD5710E231E123A4B469963BF863CC] http://fpr.example/ /\n"
        "deb missing-a-suite\n"
    )
    first, disabled, flat, fingerprint = sources.parse_one_line(text, "/etc/apt/sources.list")
    assert (first["line"], first["enabled"], first["types"], first["uris"]) == (
        1, True, ["deb"], ["http://deb.example/debian"]
    )  # fmt: skip
    assert first["suites"] == ["bookworm"] and first["components"] == ["main", "contrib"]
    assert first["options"] == {"arch": "amd64", "signed-by": "/usr/share/keyrings/a.gpg"}
    assert first["keyrings"] == ["/usr/share/keyrings/a.gpg"] and first["format"] == "one-line"
    assert (disabled["line"], disabled["enabled"], disabled["types"]) == (2, False, ["deb-src"])
    assert disabled["options"] == {"arch": "amd64,arm64", "trusted": "yes"}
    assert disabled["components"] == ["main"]
    assert (flat["line"], flat["uris"], flat["suites"], flat["options"]) == (4, ["http://flat.example/repo/"],
                                                                          ["/"], {})  # fmt: skip
    assert fingerprint["keyrings"] == [] and fingerprint["fingerprints"] == [
        "EB693B3035CD5710E231E123A4B469963BF863CC"
    ]


def test_deb822_stanzas_disabled_multi_type_and_an_inline_key():
    inline = "\n".join(" " + (line or ".") for line in OTHER.decode().splitlines())
    text = (
        "# Debian's archive\n"
        "Types: deb deb-src\nURIs: http://deb.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Types: deb\nURIs: http://old.example/debian\nSuites: bookworm\nEnabled: no\n\n"
        f"Types: deb\nURIs: {NVIDIA}\nSuites: /\nArchitectures: amd64\nSigned-By:\n{inline}\n"
    )
    debian, old, nvidia = sources.parse_deb822(text, "/etc/apt/sources.list.d/x.sources")
    assert (debian["line"], debian["types"]) == (2, ["deb", "deb-src"])
    assert debian["suites"] == ["bookworm", "bookworm-updates"]
    assert debian["keyrings"] == ["/usr/share/keyrings/debian-archive-keyring.gpg"] and debian["enabled"]
    assert (old["line"], old["enabled"]) == (8, False)
    assert nvidia["inline_key"] is True and nvidia["fingerprints"] == [OTHER_FPR]
    assert nvidia["options"] == {"architectures": "amd64", "signed-by": sources.INLINE}
    assert nvidia["suites"] == ["/"] and nvidia["keyrings"] == [] and nvidia["format"] == "deb822"


def test_repo_sections_with_their_gpg_settings():
    text = (
        "[cuda-rhel9-x86_64]\nname=cuda-rhel9-x86_64\n"
        "baseurl=https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64\n"
        "enabled=1\ngpgcheck=1\n"
        "gpgkey=https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub\n\n"
        "; a comment\n[local]\nbaseurl=file:///srv/repo/1\n  http://mirror.example/repo/2\nenabled=0\n"
        "gpgcheck=0\nrepo_gpgcheck=yes\ngpgkey=file:///etc/pki/rpm-gpg/K1, file:///etc/pki/rpm-gpg/K2\n"
        "[bare]\nbaseurl=http://bare.example/\n"
    )
    cuda, local, bare = sources.parse_repo(text, "/etc/yum.repos.d/cuda-rhel9.repo")
    assert (cuda["id"], cuda["line"], cuda["types"], cuda["enabled"]) == (
        "cuda-rhel9-x86_64",
        1,
        ["rpm"],
        True,
    )
    assert cuda["uris"] == ["https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64"]
    assert (cuda["gpgcheck"], cuda["repo_gpgcheck"]) == (True, None)
    assert cuda["gpgkey"] == [
        "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub"
    ]
    assert cuda["keyrings"] == [] and cuda["options"] == {"name": "cuda-rhel9-x86_64"}
    assert local["uris"] == ["file:///srv/repo/1", "http://mirror.example/repo/2"]
    assert (local["enabled"], local["gpgcheck"], local["repo_gpgcheck"]) == (False, False, True)
    assert local["keyrings"] == ["/etc/pki/rpm-gpg/K1", "/etc/pki/rpm-gpg/K2"]
    assert (bare["enabled"], bare["gpgcheck"], bare["gpgkey"]) == (True, None, [])


# ---------------------------------------------------------------- the host's files, keyrings and owners
def test_an_nvidia_guide_host_its_keyring_keys_and_owner(tmp_path):
    root = nvidia_guide_host(tmp_path)
    fakeroot.write(root, "/etc/apt/sources.list.d/debian.sources",
                   "Types: deb\nURIs: http://deb.example/debian\nSuites: bookworm\n")  # fmt: skip
    fakeroot.write(root, "/etc/apt/sources.list.d/ignored.list.save", "deb http://x.example/ /\n")
    fakeroot.write(root, "/etc/apt/trusted.gpg.d/old.asc", OTHER)
    found = sources.probe(Root(str(root)), Packages(Root(str(root))).owners_of)
    cuda, debian = found["entries"]
    assert (cuda["file"], cuda["owner"], cuda["keyrings"]) == (CUDA_LIST, "cuda-keyring", [CUDA_KEYRING])
    assert debian["owner"] is None and debian["file"].endswith("debian.sources")
    assert found["keyrings"][CUDA_KEYRING] == {
        "exists": True, "fingerprints": [PINNED_FPR], "subkeys": [], "owner": "cuda-keyring", "reason": None
    }  # fmt: skip
    assert found["trusted"] == ["/etc/apt/trusted.gpg.d/old.asc"]  # what a source without Signed-By trusts
    assert found["keyrings"]["/etc/apt/trusted.gpg.d/old.asc"]["fingerprints"] == [OTHER_FPR]
    assert found["reasons"] == []


def test_a_missing_or_broken_keyring_is_said_not_raised(tmp_path):
    root = nvidia_guide_host(tmp_path)
    (root / CUDA_KEYRING.lstrip("/")).unlink()
    fakeroot.write(
        root, "/etc/apt/sources.list.d/k.list", "deb [signed-by=/etc/apt/keyrings/k.gpg] http://k/ /\n"
    )
    fakeroot.write(root, "/etc/apt/keyrings/k.gpg", b"<html>not a key</html>")
    keyrings = sources.probe(Root(str(root)))["keyrings"]
    assert keyrings[CUDA_KEYRING]["exists"] is False
    assert keyrings[CUDA_KEYRING]["reason"] == f"{CUDA_KEYRING} does not exist"
    assert keyrings["/etc/apt/keyrings/k.gpg"]["exists"] is True
    assert keyrings["/etc/apt/keyrings/k.gpg"]["fingerprints"] == []
    assert "not OpenPGP data" in keyrings["/etc/apt/keyrings/k.gpg"]["reason"]


def test_dnf_sections_and_their_file_keyring(tmp_path):
    repo = "[cuda-rhel9-x86_64]\nbaseurl=http://r/\ngpgcheck=1\ngpgkey=file:///etc/pki/rpm-gpg/K\n"
    fakeroot.write(tmp_path, "/etc/yum.repos.d/cuda-rhel9.repo", repo)
    fakeroot.write(tmp_path, "/etc/pki/rpm-gpg/K", PINNED)
    found = sources.probe(Root(str(tmp_path)))
    (entry,) = found["entries"]
    assert entry["id"] == "cuda-rhel9-x86_64" and entry["keyrings"] == ["/etc/pki/rpm-gpg/K"]
    assert found["keyrings"]["/etc/pki/rpm-gpg/K"]["fingerprints"] == [PINNED_FPR]


def test_the_reads_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_FILES", 2)
    monkeypatch.setattr(sources, "MAX_KEYRING", 64)
    for name in ("a", "b", "c"):
        fakeroot.write(tmp_path, f"/etc/apt/sources.list.d/{name}.list",
                       f"deb [signed-by=/k/{name}.gpg] http://{name}.example/ /\n")  # fmt: skip
    fakeroot.write(tmp_path, "/k/a.gpg", PINNED)
    found = sources.probe(Root(str(tmp_path)))
    assert [e["uris"] for e in found["entries"]] == [["http://a.example/"], ["http://b.example/"]]
    assert found["reasons"] == ["/etc/apt/sources.list.d has 3 source files: only the first 2 were read"]
    assert "is larger than 64 bytes" in found["keyrings"]["/k/a.gpg"]["reason"]


def test_the_sources_subset_of_the_facts(tmp_path):
    root = nvidia_guide_host(tmp_path)
    facts = gather(str(root), ["sources"])
    assert facts["gather_subset"] == ["sources"]
    assert facts["probes"]["sources"]["state"] == "ok"
    assert facts["sources"]["entries"][0]["owner"] == "cuda-keyring"
    assert facts["sources"]["keyrings"][CUDA_KEYRING]["fingerprints"] == [PINNED_FPR]
    everything = gather(str(root), ["all"])
    assert everything["sources"] == {} and "sources" not in everything["probes"]  # named only, as packages


@pytest.mark.parametrize(
    ("text", "mirror"),
    [
        (f"deb [signed-by={CUDA_KEYRING}] {NVIDIA} /\ndeb https://deb.example/debian/ bookworm main\n",
         "https://deb.example/debian"),
        ("# deb http://off.example/debian bookworm main\n", None),
    ],
)  # fmt: skip
def test_the_debian_mirror_comes_from_the_same_entries(text, mirror):
    assert sources.debian_mirror(sources.parse_one_line(text, "/etc/apt/sources.list")) == mirror
