"""removal: after install and removal, the host is as it was before the install, but for what was never
gpufleet's; the install had put gpufleet's things there, and the check-mode removal changed nothing."""

import json

import pytest

testinfra_hosts = ["ansible://removal"]

WORK = "/var/tmp/removal"  # removal_work in group_vars/removal.yml
ROOTS = "/etc/apt:/etc/modprobe.d:/etc/initramfs-tools:/etc/dkms:/var/lib/gpufleet"  # removal_roots
# what gpufleet's first install made and the removal cannot tell from one that was there: the directory
# cudnn_prefix (/opt/nvidia/cudnn, removed) sits in, and /etc/modprobe.d, which the driver role makes where
# the image has none (no kmod in the lab's images; DKMS's kmod, purged with the driver, left it to
# gpufleet's files) (docs/roles.md, "Removal")
LEFT = {"/opt/nvidia", "/etc/modprobe.d"}


def manifest(host, *args):
    run = host.run(f"MANIFEST_ROOTS={ROOTS} python3 {WORK}/manifest.py " + " ".join(args))
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def repo_host(host):
    return "removal_repo" in host.backend.get_variables()["group_names"]


def test_every_path_is_as_before_the_install(host):
    result = manifest(host, "compare", f"{WORK}/before.json")
    assert result["ok"], result  # nothing that was there changed or went (the runfile's 13.1 included)
    assert set(result["added_paths"]) <= LEFT, result  # and gpufleet's things are gone


def test_the_packages_are_as_before_the_install(host):
    """Every package as before, in version and selection (a hold the install set is released). One kind of
    package may stay: a dependency the install pulled in that a package already there recommends (trixie:
    the driver's DKMS pulls libkmod2, which systemd recommends). apt's autoremove keeps it
    (APT::AutoRemove::RecommendsImportant) and so does the removal: it is apt-marked automatic, and apt's
    own autoremove would not take it."""
    query = "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'"
    now = {" ".join(line.split()) for line in host.check_output(query).splitlines()}
    recorded = host.file(f"{WORK}/before-packages.txt").content_string.splitlines()
    before = {" ".join(line.split()) for line in recorded if line.strip()}
    extra = sorted(now - before)
    assert sorted(before - now) == []
    names = {line.split()[0] for line in extra}
    auto = set(host.check_output("apt-mark showauto").split())
    autoremovable = host.check_output("apt-get -s autoremove | sed -n 's/^Remv \\([^ ]*\\).*/\\1/p'").split()
    assert names <= auto and not names & set(autoremovable), extra
    there = {line.split()[0] for line in before}
    only_recommends = "--no-pre-depends --no-depends --no-suggests --no-conflicts --no-breaks --no-replaces"
    for name in names:  # and a package that was there before recommends it
        out = host.check_output(f"apt-cache rdepends --installed {only_recommends} --no-enhances {name}")
        recommending = {line.strip().lstrip("|") for line in out.splitlines()[2:]}
        assert recommending & there, (name, out)
    # dpkg -V as before, but for the files of such a package (the images leave out /usr/share/doc)
    theirs = {f for name in names for f in host.check_output(f"dpkg -L {name}").splitlines()}
    verify = [
        line
        for line in host.run("dpkg -V | sort").stdout.strip().splitlines()
        if line.split()[-1] not in theirs
    ]
    assert verify == host.file(f"{WORK}/before-verify.txt").content_string.strip().splitlines()


def test_what_was_there_before_gpufleet_stayed(host, repo_host):
    assert host.file("/usr/local/cuda-13.1/bin/cuda-uninstaller").exists
    if repo_host:  # in gpufleet's set, marked as there before it, kept
        assert host.package("cuda-cudart-13-0").is_installed


def test_the_install_had_put_gpufleets_things_there(host, repo_host):
    installed = json.loads(host.file(f"{WORK}/installed.json").content_string)
    expected = ["/etc/modprobe.d/nvidia-gpufleet.conf", "/var/lib/gpufleet/nvidia_driver.record"]
    if repo_host:
        expected += [
            "/etc/apt/preferences.d/gpufleet-cudnn.pref",
            "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref",
            "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources",
            "/opt/nvidia/cudnn/current-cuda12",
        ]
    else:
        expected += ["/usr/local/cuda-13.0/.gpufleet-redist.json", "/opt/nvidia/cudnn/current-cuda13"]
    assert [p for p in expected if p not in installed] == []
    for path in expected:
        assert not host.file(path).exists, path


def test_the_check_mode_removal_changed_nothing(host):
    result = json.loads(host.file(f"{WORK}/check.json").content_string)
    assert result["ok"] and result["added"] == 0, result


def test_nothing_of_gpufleets_is_left(host):
    for path in (
        "/etc/apt/sources.list.d/gpufleet-debian-nonfree.sources",
        "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc",
        "/etc/ld.so.conf.d/gpufleet-cuda.conf",
        "/etc/ld.so.conf.d/gpufleet-cudnn.conf",
        "/etc/profile.d/gpufleet-cuda.sh",
        "/var/lib/gpufleet",
    ):
        assert not host.file(path).exists, path
