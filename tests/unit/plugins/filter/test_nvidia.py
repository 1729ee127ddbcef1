"""The gpufleet.nvidia filters: results, and bad input failing with the parser's sentence."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.nvidia.plugins.filter import nvidia
from ansible_collections.gpufleet.nvidia.plugins.filter.nvidia import FilterModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts

from tests.data.facts import fakeroot

FILTERS = FilterModule().filters()


def test_filter_names():
    assert {"cuda_min_driver", "gpu_architecture", "nvidia_version_compare"} <= set(FILTERS)
    assert all(callable(f) for f in FILTERS.values())


@pytest.mark.parametrize(
    ("cuda", "expected"),
    [("12.8", "570.26"), ("12.8.1", "570.124.06"), ("13.0", "580.65.06"), ("13-2", "595.45.04"),
     ("11.0", "450.51.05"), ("13.4", None), (13.0, "580.65.06")],
)  # fmt: skip
def test_cuda_min_driver(cuda, expected):
    assert FILTERS["cuda_min_driver"](cuda) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("0x2335", "Hopper"), ("2335", "Hopper"), (0x1DB5, "Volta"), ("7.0", "Volta"), ("sm_120", "Blackwell"),
     ("Tesla V100-SXM2-32GB", "Volta"), ("NVIDIA H200", "Hopper"), ({"pci_device_id": "0x2901"}, "Blackwell"),
     ("10de:2335", "Hopper"), ("Voodoo", "unknown")],
)  # fmt: skip
def test_gpu_architecture(value, expected):
    assert FILTERS["gpu_architecture"](value) == expected


def test_gpu_info():
    info = FILTERS["gpu_info"]("0x2335")
    assert (info["name"], info["compute_capability"], info["kernel_module_support"]) == (
        "NVIDIA H200",
        "9.0",
        "either",
    )


@pytest.mark.parametrize(
    ("left", "right", "op", "expected"),
    [("12.8", "13.0", "<", True), ("580.95.05", "580.159.04", "lt", True), ("R580", "580", "==", True),
     ("12.8", "12.8.0", "eq", True), ("9.14.0.64", "9.14", ">", True), ("13.0", "12.9", "<=", False)],
)  # fmt: skip
def test_nvidia_version_compare(left, right, op, expected):
    assert FILTERS["nvidia_version_compare"](left, right, op) is expected


def test_other_filters():
    assert FILTERS["nvidia_version_compare"]("1.0", "1") is True
    assert FILTERS["nvidia_version"]("R580") == "580"
    assert FILTERS["nvidia_version"]("12-8") == "12.8"
    assert FILTERS["driver_branch"]("580.95.05") == "580"
    assert FILTERS["driver_native_cuda"]("580.159.04") == "13.0"
    assert FILTERS["driver_native_cuda"]("R620") == "13.5"
    assert FILTERS["driver_native_cuda"]("100") is None
    assert FILTERS["cuda_driver_floor"]("13.2") == "580.65.06"
    assert FILTERS["cuda_driver_floor"]("11.0") == "450.36.06"
    assert FILTERS["cuda_driver_floor"]("14.0") is None


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("cuda_min_driver", ("twelve",), "cuda_version: 'twelve' is not a valid version"),
        ("cuda_min_driver", ("12.99",), "cuda_version: CUDA 12.99 does not exist"),
        ("cuda_driver_floor", ("x",), "cuda_version: 'x' is not a valid version"),
        ("gpu_architecture", ("0x12345678",), "is not a PCI id"),
        ("nvidia_version_compare", ("1.0", "x", "<"), "right: 'x' is not a valid version"),
        ("nvidia_version_compare", ("1.0", "2", "~"), "operator: '~' is not a comparison operator"),
        ("nvidia_version", ("",), "version: '' is not a valid version"),
        ("driver_branch", ("abc",), "driver: 'abc' is not a valid version"),
        ("driver_native_cuda", ("abc",), "driver: 'abc' is not a valid version"),
    ],
)
def test_bad_input(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message.replace(".", r"\.").replace("(", r"\(")):
        FILTERS[name](*args)


def test_module_level_functions_are_the_filters():
    assert FILTERS["gpu_architecture"] is nvidia.gpu_architecture


def test_gpu_of_the_facts_is_accepted(tmp_path):
    """ansible_facts.nvidia.gpus[0] | gpufleet.nvidia.gpu_architecture: a GPU of the facts as it comes."""
    fakeroot.h200(tmp_path)
    (gpu,) = probe_facts.gather(str(tmp_path), ["gpu"])["gpus"]
    assert FILTERS["gpu_architecture"](gpu) == "Hopper"
    assert FILTERS["gpu_info"](gpu)["pci_subsystem_id"] == "0x18BF"
    unknown_cc = dict(gpu, compute_capability="unknown", name="unknown")
    assert FILTERS["gpu_architecture"](unknown_cc) == "Hopper"  # identified by its PCI id
