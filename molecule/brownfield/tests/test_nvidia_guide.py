"""brownfield, host group nvidia_guide: a host set up by NVIDIA's installation guide (cuda-keyring's source
and keyring for the lab's NVIDIA-layout repository), where an earlier gpufleet run had added its own source of
the same URL (apt refused every update). After converge: cuda-keyring's source adopted as it is, gpufleet's
own source and keyring gone, apt-get update works, cuDNN installed from the repository, pinned and held
(issue 36).
"""

from testinfra_helpers import cudnn_loaded, dpkg_status, nvidia_facts

testinfra_hosts = ["ansible://nvidia_guide"]

LIST = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"  # nvidia_guide_list
KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"
CUDNN_SET = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]


def test_apt_get_update_works_again(host):
    update = host.run("LC_ALL=C apt-get update")
    assert update.rc == 0, update.stderr
    assert "Conflicting values" not in update.stdout + update.stderr
    assert "E:" not in update.stderr, update.stderr


def test_gpufleet_wrote_no_source_or_keyring_of_its_own(host):
    assert not host.file("/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources").exists
    assert not host.file("/etc/apt/keyrings/gpufleet-nvidia-cuda.asc").exists


def test_cuda_keyrings_source_and_keyring_are_as_the_package_installed_them(host):
    assert host.check_output(f"dpkg -S {LIST}").startswith("cuda-keyring:")
    assert host.check_output(f"dpkg -S {KEYRING}").startswith("cuda-keyring:")
    assert host.run("dpkg -V cuda-keyring").stdout == ""
    assert host.file(LIST).content_string.startswith(f"deb [signed-by={KEYRING}] ")


def test_the_cudnn_packages_are_installed_pinned_and_held(host):
    got = dpkg_status(host, CUDNN_SET)
    for name in CUDNN_SET:
        assert got[name] == ["9.14.0.64-1", "hold ok installed"], name
    pins = host.file("/etc/apt/preferences.d/gpufleet-cudnn.pref").content_string
    assert pins.count("Pin: version 9.14.0.64-1\nPin-Priority: 1001\n") == 3
    assert cudnn_loaded(host, "libcudnn.so.9")["version"] == 91400


def test_the_facts_name_cuda_keyrings_source_and_its_key(host):
    sources = nvidia_facts(host, "sources")["sources"]
    (entry,) = [e for e in sources["entries"] if e["file"] == LIST]
    assert entry["owner"] == "cuda-keyring" and entry["keyrings"] == [KEYRING] and entry["enabled"]
    keyring = sources["keyrings"][KEYRING]
    assert keyring["exists"] and keyring["owner"] == "cuda-keyring" and len(keyring["fingerprints"]) == 1
