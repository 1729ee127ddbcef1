"""probe/packages: which installed packages the facts keep (the CUDA/cuDNN/driver ones, all of them)."""

from pathlib import Path

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages

H200 = Path(__file__).resolve().parents[4] / "data" / "h200-ubuntu2404" / "dpkg-query-nvidia-cuda.tsv"


def _status(names):
    return "\n\n".join(
        f"Package: {name}\nStatus: install ok installed\nVersion: 1.0-1\nArchitecture: amd64"
        for name in names
    )


def test_every_nvidia_package_of_the_h200_is_kept():
    # the H200's dpkg-query lines are NVIDIA's packages of CUDA 13.0, cuDNN 9.14 and NCCL: none may be missed
    # (libnvvm-13-0 once was: the toolkit's set then always looked incomplete)
    names = [line.split("\t")[0] for line in H200.read_text().splitlines() if line.strip()]
    assert "libnvvm-13-0" in names
    kept = packages.parse_dpkg_status(_status(names))
    assert sorted(kept) == sorted(names)


def test_unrelated_packages_are_not_kept():
    kept = packages.parse_dpkg_status(_status(["libc6", "libnvme1", "zlib1g", "python3-nvidia-ml-py"]))
    assert sorted(kept) == []
