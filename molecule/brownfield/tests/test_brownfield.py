"""brownfield: what was there before gpufleet is still there, byte for byte, or in replace's backup.

Runs twice: after converge (refusals, adopt: nothing pre-existing changed, no backup) and after side_effect
(the runfile's 13.1 replaced: its files are in /usr/local/cuda-13.1.gpufleet-backup-*, the rest unchanged).
"""

import json

import pytest
from testinfra_helpers import cudnn_loaded, nvidia_facts

# the seeded hosts (the host NVIDIA's guide set up, group nvidia_guide, is test_nvidia_guide.py's)
testinfra_hosts = ["ansible://brownfield"]

WORK = "/var/tmp/brownfield"  # brownfield_work in molecule.yml
SEEDED = {
    "cuda-cccl-13-0": "13.0.85-1",
    "cuda-crt-13-0": "13.0.88-1",
    "cuda-cudart-13-0": "13.0.96-1",
    "cuda-cudart-dev-13-0": "13.0.96-1",
    "cuda-nvcc-13-0": "13.0.88-1",
    "cuda-toolkit-13-0-config-common": "13.0.96-1",
    "cuda-toolkit-13-config-common": "13.0.96-1",
    "cuda-toolkit-config-common": "13.0.96-1",
}
HAND_COPY = "/usr/local/cuda-13.0/targets/x86_64-linux"  # /usr/local/cuda-13.0/lib64 and include lead here
VENV = "/opt/venvs/torchlike"
CONDA = "/opt/conda/envs/ml"
MARKER = "/usr/local/cuda-13.1/.gpufleet-redist.json"


@pytest.fixture(scope="module")
def replaced(host):
    """True after side_effect: gpufleet's marker is in /usr/local/cuda-13.1."""
    return host.file(MARKER).exists


@pytest.fixture(scope="module")
def facts(host):
    return nvidia_facts(host, "cuda,cudnn")


def test_every_preexisting_path_is_unchanged_or_in_the_backup(host, replaced):
    run = host.run(f"python3 {WORK}/manifest.py compare {WORK}/before.json --backups")
    result = json.loads(run.stdout)
    assert run.rc == 0 and result["ok"], result
    assert result["backup_trees"] == (["/usr/local/cuda-13.1"] if replaced else []), result
    if replaced:
        assert result["in_backup"] > 100, result  # the runfile's whole tree


def test_the_seeded_packages_verify_and_are_installed(host):
    verify = host.run("dpkg -V " + " ".join(SEEDED))
    assert verify.rc == 0 and verify.stdout == "", verify.stdout
    for name, version in SEEDED.items():
        out = host.check_output(f"dpkg-query -W -f '${{Status}} ${{Version}}' {name}")
        assert out == f"install ok installed {version}", name


def test_the_package_database_verifies_as_before(host):
    before = set(host.file(f"{WORK}/dpkg-V.before").content_string.splitlines()) - {""}
    now = set(host.run("dpkg -V").stdout.splitlines()) - {""}
    assert now == before, {"new": sorted(now - before)[:20], "gone": sorted(before - now)[:20]}


def test_the_default_is_the_packages_13_0(host):
    for name in ("cuda", "cuda-13"):
        assert host.file(f"/etc/alternatives/{name}").linked_to == "/usr/local/cuda-13.0"
        out = host.check_output(f"update-alternatives --query {name}")
        assert "Alternative: /usr/local/cuda-13.0\nPriority: 130" in out, out


def test_programs_still_load_the_hand_copys_libcudnn(host):
    out = cudnn_loaded(host, "libcudnn.so.9")  # what a program gets for the soname
    assert out == {"version": 91400, "path": f"{HAND_COPY}/lib/libcudnn.so.9.14.0"}, out
    first = next(line for line in host.check_output("ldconfig -p").splitlines() if "libcudnn.so.9 " in line)
    assert first.split("=>")[1].strip() == "/usr/local/cuda/targets/x86_64-linux/lib/libcudnn.so.9", first


def test_the_runfile_tree_or_its_backup(host, replaced):
    backups = host.run("ls -d /usr/local/cuda-13.1.gpufleet-backup-*").stdout.split()
    runfile = backups[0] if replaced else "/usr/local/cuda-13.1"
    assert len(backups) == (1 if replaced else 0), backups
    assert host.file(f"{runfile}/bin/cuda-uninstaller").is_file
    assert json.loads(host.file(f"{runfile}/version.json").content_string)["cuda"]["version"] == "13.1.0"
    assert "/usr/local/cuda-13.1" in host.file("/var/log/cuda-installer.log").content_string
    assert host.file(MARKER).exists == replaced


def test_the_facts_name_each_toolkits_owner(facts, replaced):
    toolkits = {t["path"]: t for t in facts["cuda"]["toolkits"]}
    owner = toolkits["/usr/local/cuda-13.0"]["owner"]
    assert (owner["kind"], owner["name"], owner["version"]) == ("package", "cuda-nvcc-13-0", "13.0.88-1")
    assert toolkits["/usr/local/cuda-13.1"]["owner"]["kind"] == ("gpufleet" if replaced else "runfile")
    assert facts["cuda"]["default"]["target"] == "/usr/local/cuda-13.0"


def test_the_facts_list_the_pip_conda_and_hand_copies(facts):
    copies = {c["source"]: c for c in facts["cudnn"]}
    assert set(copies) >= {"pip", "conda", "tarball"}, sorted(copies)
    assert copies["pip"]["python_env"] == VENV
    assert (copies["pip"]["owner"]["kind"], copies["pip"]["owner"]["name"]) == ("pip", "nvidia-cudnn-cu13")
    assert copies["conda"]["path"] == CONDA
    assert (copies["conda"]["owner"]["kind"], copies["conda"]["owner"]["version"]) == ("conda", "9.14.0.64")
    assert copies["tarball"]["path"] == HAND_COPY
    assert copies["tarball"]["resolved"] is True
    assert {c["version"] for c in copies.values()} == {"9.14.0"}
