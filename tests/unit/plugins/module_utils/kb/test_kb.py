"""Knowledge-base tables: well formed, ordered, sourced, and consistent with NVIDIA's device list."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda as kb_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cudnn as kb_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpu_ids as kb_gpu_ids
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpus
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import parse_version

ROOT = Path(__file__).resolve().parents[5]
MU = ROOT / "plugins/module_utils"
DATA = ROOT / "tests/data/compat"
CONFIDENCES = ("high", "medium", "low")


def _table_rows(path, start, end):
    """Source lines of a table (between the line starting with ``start`` and the next ``end``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(start))
    rows = []
    for line in lines[i + 1 :]:
        if line.startswith(end):
            break
        rows.append(line)
    return rows


@pytest.mark.parametrize(
    ("filename", "start"),
    [
        ("kb/cuda.py", "CUDA_RELEASES = ("),
        ("kb/cuda.py", "UNKNOWN_MIN_BRANCH_HINT = {"),
        ("kb/cuda.py", "CUDA_MAJOR_FLOORS = {"),
        ("kb/cuda.py", "CC_CUDA_RANGE = {"),
        ("kb/cuda.py", "CUDA_OS_FACTS = ("),
        ("kb/cuda.py", "FORWARD_COMPAT = {"),
        ("kb/driver.py", "DRIVER_BRANCHES = {"),
        ("kb/cudnn.py", "VARIANTS = ("),
        ("kb/cudnn.py", "MIN_DRIVER = ("),
        ("kb/cudnn.py", "MIN_CC = ("),
        ("kb/cudnn.py", "NEWEST_FOR_CC = ("),
        ("kb/cudnn.py", "CUDA_MINORS = ("),
        ("kb/cudnn.py", "ARCH_CUDA_MINORS = ("),
        ("kb/arch.py", "CHIPS = ("),
    ],
)
def test_every_row_has_a_source_url_and_confidence(filename, start):
    end = "}" if start.endswith("{") else ")"
    rows = [r for r in _table_rows(MU / filename, start, end) if r.strip() and not r.strip().startswith("#")]
    assert rows
    for row in rows:
        assert re.search(r"#\s*(high|medium|low)\b.*https://", row), row


def test_architecture_rows_are_sourced():
    rows = _table_rows(MU / "kb/arch.py", "_ARCH_ROWS = (", ")")
    code = [i for i, r in enumerate(rows) if r.strip().startswith("(")]
    for i in code:
        assert re.search(r"#\s*(high|medium|low)\b.*https://", rows[i - 1]), rows[i]


def test_cuda_releases_sorted_and_parse():
    versions = [parse_version(v) for v, _label, _min, _conf in kb_cuda.CUDA_RELEASES]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)
    mins = [parse_version(m) for _v, _l, m, _c in kb_cuda.CUDA_RELEASES if m]
    assert mins == sorted(mins), "a newer CUDA release never needs an older driver"
    for _v, _l, _m, conf in kb_cuda.CUDA_RELEASES:
        assert conf in CONFIDENCES


def test_cuda_releases_cover_11_0_to_13_5():
    families = {str(parse_version(v).truncate(2)) for v, *_ in kb_cuda.CUDA_RELEASES}
    expected = {f"11.{m}" for m in range(9)} | {f"12.{m}" for m in (0, 1, 2, 3, 4, 5, 6, 8, 9)}
    expected |= {f"13.{m}" for m in range(6)}
    assert families == expected


def test_major_floors_are_their_ga_minimums():
    for major, (floor, conf) in kb_cuda.CUDA_MAJOR_FLOORS.items():
        assert conf == "high"
        ga = next(m for v, label, m, _c in kb_cuda.CUDA_RELEASES if label == f"{major}.0 GA")
        if major != 11:  # 11.x floor is 450.80.02 (11.1+), 11.0 GA shipped with 450.51.05
            assert ga == floor


def test_cc_ranges_ordered():
    for cc, (first, last, conf) in kb_cuda.CC_CUDA_RANGE.items():
        assert cc in kb_arch.CC_ARCH
        assert conf in CONFIDENCES
        if last:
            assert parse_version(first) <= parse_version(last)


def test_every_cc_has_a_cuda_range():
    assert set(kb_arch.CC_ARCH) == set(kb_cuda.CC_CUDA_RANGE)


def test_driver_branches():
    for branch, (kind, eol, native, conf) in kb_driver.DRIVER_BRANCHES.items():
        assert 300 < branch < 1000
        assert kind in kb_driver.BRANCH_TYPE_NAMES
        assert eol is None or (2019 < eol[0] < 2040 and 1 <= eol[1] <= 12)
        assert native is None or parse_version(native)
        assert conf in CONFIDENCES
    natives = [parse_version(r[2]) for _b, r in sorted(kb_driver.DRIVER_BRANCHES.items()) if r[2]]
    assert natives == sorted(natives)
    assert kb_driver.DRIVER_BRANCHES[580][2] == "13.0"
    assert kb_driver.DRIVER_BRANCHES[580][0] == kb_driver.LTSB


def test_cudnn_tables():
    assert {row[0] for row in kb_cudnn.VARIANTS} == {11, 12, 13}
    for _major, first, last, _conf in kb_cudnn.VARIANTS:
        assert last is None or parse_version(first) < parse_version(last)
    assert {m: d for m, d, _c in kb_cudnn.MIN_DRIVER}[13] == "580.65.06"


def test_architectures():
    orders = [info["order"] for info in kb_arch.ARCHITECTURES.values()]
    assert orders == sorted(orders)
    for name, info in kb_arch.ARCHITECTURES.items():
        assert info["kernel_module"] in ("open", "proprietary", "either"), name
        assert info["confidence"] in CONFIDENCES
    assert kb_arch.ARCHITECTURES["Kepler"]["legacy_branch"] == 470
    for arch in ("Maxwell", "Pascal", "Volta"):
        assert kb_arch.ARCHITECTURES[arch]["legacy_branch"] == 580
        assert kb_arch.ARCHITECTURES[arch]["kernel_module"] == "proprietary"
    assert kb_arch.ARCHITECTURES["Blackwell"]["kernel_module"] == "open"
    assert kb_arch.arch_order("nope") > kb_arch.arch_order("Rubin")


@pytest.mark.parametrize(
    ("chip", "arch", "cc"),
    [
        ("GK104", "Kepler", "3.0"), ("GK110B", "Kepler", "3.5"), ("GK210", "Kepler", "3.7"),
        ("GM107", "Maxwell", "5.0"), ("GM204", "Maxwell", "5.2"), ("GP100", "Pascal", "6.0"),
        ("GP102", "Pascal", "6.1"), ("GV100", "Volta", "7.0"), ("TU104", "Turing", "7.5"),
        ("GA100", "Ampere", "8.0"), ("GA102", "Ampere", "8.6"), ("AD102", "Ada Lovelace", "8.9"),
        ("GH100", "Hopper", "9.0"), ("GB100", "Blackwell", "10.0"), ("GB110", "Blackwell", "10.3"),
        ("GB202", "Blackwell", "12.0"), ("GB10", "Blackwell", "12.1"), ("GR100", "Rubin", "10.7"),
        ("gh100", "Hopper", "9.0"), ("GF100", "Fermi", "2.0"), ("GF108", "Fermi", "2.1"),
    ],
)  # fmt: skip
def test_chip_info(chip, arch, cc):
    assert kb_arch.chip_info(chip)[:2] == (arch, cc)


def test_chip_info_unknown():
    assert kb_arch.chip_info("ZZ100") is None
    assert kb_arch.chip_info(None) is None
    assert kb_arch.chip_for_device(0xFFFF) is None


def test_generated_gpu_ids_are_up_to_date():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gen_gpu_ids.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_generated_gpu_ids_cover_every_source_entry():
    chips = json.loads((DATA / "supported-gpus-r580.json").read_text(encoding="utf-8"))["chips"]
    assert kb_gpu_ids.ENTRIES_IN_SOURCE == len(chips) == 2319
    for chip in chips:
        devid = int(chip["devid"], 16)
        sub = int(chip["subdevid"], 16) if "subdevid" in chip else None
        subv = int(chip.get("subvendorid", "0x10DE"), 16) if sub is not None else None
        entry = gpus.lookup_device(devid, subv, sub)
        assert entry is not None, chip
        assert entry["name"] == chip["name"].replace("|", "/").strip()
        assert entry["legacybranch"] == chip.get("legacybranch")


def test_every_device_resolves_to_the_architecture_of_its_legacy_branch():
    chips = json.loads((DATA / "supported-gpus-r580.json").read_text(encoding="utf-8"))["chips"]
    current = {"Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Rubin"}
    for chip in chips:
        gpu, warnings = gpus.resolve_gpu({"pci_device_id": chip["devid"]})
        assert not warnings
        legacy = chip.get("legacybranch")
        if legacy == "580.xx":
            assert gpu["architecture"] in ("Maxwell", "Pascal", "Volta"), chip
            assert gpu["kernel_module_support"] == "proprietary"
        elif legacy == "470.xx":
            assert gpu["architecture"] == "Kepler", chip
        elif legacy is None:
            assert gpu["architecture"] in current, chip
            assert gpu["compute_capability"] is not None
            assert gpu["kernel_module_support"] in ("open", "either")


def test_open_module_list_agrees():
    """Every device id NVIDIA's open-module README lists is a Turing+ GPU that the open module can drive."""
    ids = set()
    for line in (DATA / "open-kernel-module-devids-595.45.04.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            ids.add(int(line.split()[0], 16))
    assert len(ids) > 250
    for devid in ids:
        gpu, _w = gpus.resolve_gpu({"pci_device_id": devid})
        if gpu["architecture"] == "unknown":
            continue  # newer than the R580 device list
        assert gpu["kernel_module_support"] in ("open", "either"), gpu


def test_every_device_range_names_a_known_chip():
    """kb/gpus.py relies on it: a PCI device id range whose chip is not in CHIPS has no architecture."""
    assert [chip for _low, _high, chip in kb_arch.DEVICE_RANGES if kb_arch.chip_info(chip) is None] == []
