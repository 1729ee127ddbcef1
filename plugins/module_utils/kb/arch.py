# Copyright: gpufleet contributors
# Apache-2.0
"""Knowledge base: GPU architectures, chips, compute capabilities, PCI device-id ranges.

Pure data (stdlib only). Every row carries its confidence (``high`` = NVIDIA's own text or artifact,
``medium`` = a faithful copy or several indirect signals, ``low`` = verify before enforcing) and a
source comment. Facts gathered 2026-11-30 (see docs/compat.md, "Sources").
"""

from __future__ import annotations

HIGH, MEDIUM, LOW = "high", "medium", "low"

# NVIDIA "CUDA Toolkit, Driver, and Architecture Matrix":
ARCH_MATRIX_URL = (
    "https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html"
)
OPEN_MODULES_URL = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html"

# Architectures, oldest first. Fields:
#   legacy_branch: the last driver branch supporting the architecture (None = current branches)
#   kernel_module: "proprietary" (open modules cannot drive it), "either", or "open" (proprietary unsupported)
#   min_branch: (branch, confidence) first driver branch known to support the architecture, or None
# fmt: off
# (name, order, legacy_branch, kernel_module, min_branch, confidence)
_ARCH_ROWS = (
    # medium: Fermi row of the arch matrix (copy) + legacybranch 390.xx, https://www.cnblogs.com/litifeng/p/18236236
    ("Fermi", 20, 390, "proprietary", None, MEDIUM),
    # arch matrix + supported-gpus.json legacybranch 470.xx
    # high: https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("Kepler", 30, 470, "proprietary", None, HIGH),
    # arch matrix + R580 legacy branch (aaronp24/nvidia-versions 39abb05)
    # high: https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("Maxwell", 50, 580, "proprietary", None, HIGH),
    # high: as Maxwell, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("Pascal", 60, 580, "proprietary", None, HIGH),
    # high: as Maxwell, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("Volta", 70, 580, "proprietary", None, HIGH),
    # high: open modules "any Turing or later GPU", https://github.com/NVIDIA/open-gpu-kernel-modules/blob/595.45.04/README.md
    ("Turing", 75, None, "either", None, HIGH),
    # high: arch matrix + open-gpu README, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("Ampere", 80, None, "either", None, HIGH),
    # first driver not researched; CUDA 11.8 (first for sm_89) bundles 520.61.05
    # low: https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("Ada Lovelace", 89, None, "either", (520, LOW), HIGH),
    # low: as Ada (GH200 needs open modules: per-device data), https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("Hopper", 90, None, "either", (520, LOW), HIGH),
    # open required + R570 minimum (CUDA 12.8 GA >= 570.26)
    # high: https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/
    ("Blackwell", 100, None, "open", (570, HIGH), HIGH),
    # medium (row): sm_107 from nvcc 13.4. R615 minimum: CUTLASS 4.8.0dev notes "Executing Rubin kernels
    # (SM107) requires the R615 driver ... R610 ... is not sufficient" (NVIDIA's own release notes),
    # high: https://github.com/NVIDIA/cutlass/discussions/3555
    ("Rubin", 107, None, "open", (615, HIGH), MEDIUM),
)
ARCHITECTURES = {
    row[0]: {"order": row[1], "legacy_branch": row[2], "kernel_module": row[3], "min_branch": row[4],
             "confidence": row[5]}
    for row in _ARCH_ROWS
}

# Architectures of the legacy branches older than Fermi: only the branch matters (no CUDA for them here).
# high: NVIDIA forum "Current graphics driver releases", https://forums.developer.nvidia.com/t/current-graphics-driver-releases/28500
LEGACY_BRANCH_ARCH = {
    "390.xx": "Fermi",
    "367.xx": "Kepler",  # GRID K1/K340 (GK107); high: supported-gpus.json entries 0x0FEF/0x0FF2
    "340.xx": "Tesla",
    "304.xx": "Curie",
    "173.14.xx": "Rankine",
    "96.43.xx": "Kelvin",
    "71.86.xx": "Celsius",
}

# Chip code prefix (as in pci.ids, "GH100") -> (architecture, compute capability, confidence).
# Longest prefix wins. CC per chip: https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html
CHIPS = (
    ("GF100", "Fermi", "2.0", MEDIUM),  # medium: arch matrix copy, https://www.cnblogs.com/litifeng/p/18236236
    ("GF110", "Fermi", "2.0", MEDIUM),  # medium: same, https://www.cnblogs.com/litifeng/p/18236236
    ("GF1", "Fermi", "2.1", MEDIUM),  # medium: same, https://www.cnblogs.com/litifeng/p/18236236
    ("GK104", "Kepler", "3.0", HIGH),  # high: arch matrix, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GK106", "Kepler", "3.0", HIGH),  # high: same, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GK107", "Kepler", "3.0", HIGH),  # high: same, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    # same (Tegra K1)
    ("GK20A", "Kepler", "3.2", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GK210", "Kepler", "3.7", HIGH),  # high: Tesla K80, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GK1", "Kepler", "3.5", HIGH),  # high: GK110/GK180, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GK2", "Kepler", "3.5", HIGH),  # high: GK208, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GM10", "Maxwell", "5.0", HIGH),  # high: GM107/GM108, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GM20B", "Maxwell", "5.3", HIGH),  # high: Jetson TX1, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GM20", "Maxwell", "5.2", HIGH),  # high: GM200/204/206, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GP100", "Pascal", "6.0", HIGH),  # high: Tesla P100, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GP10B", "Pascal", "6.2", HIGH),  # high: Jetson TX2, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GP10", "Pascal", "6.1", HIGH),  # high: GP102..GP108, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GV10B", "Volta", "7.2", HIGH),  # high: Xavier, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GV1", "Volta", "7.0", HIGH),  # high: GV100, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("TU1", "Turing", "7.5", HIGH),  # high: arch matrix, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GA100", "Ampere", "8.0", HIGH),  # high: A100/A30, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GA10B", "Ampere", "8.7", HIGH),  # high: Orin, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GA1", "Ampere", "8.6", HIGH),  # high: GA102..GA107, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    # arch matrix
    ("AD1", "Ada Lovelace", "8.9", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    # arch matrix + H200 host
    ("GH1", "Hopper", "9.0", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GB100", "Blackwell", "10.0", HIGH),  # high: B200, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GB102", "Blackwell", "10.0", HIGH),  # high: GB200, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    ("GB110", "Blackwell", "10.3", HIGH),  # high: "10.3 NVIDIA GB300 NVIDIA B300" (B300 0x3182 is GB110), https://developer.nvidia.com/cuda-gpus
    ("GB10", "Blackwell", "12.1", HIGH),  # high: "12.1 NVIDIA GB10 (DGX Spark)", https://developer.nvidia.com/cuda-gpus
    # RTX 50xx / RTX PRO
    ("GB20", "Blackwell", "12.0", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    # sm_107 in nvcc 13.4 + CUTLASS notes
    ("GR1", "Rubin", "10.7", MEDIUM),  # medium: https://docs.nvidia.com/cuda/archive/13.4.1/cuda-toolkit-release-notes/index.html
)

# PCI device id ranges (vendor 0x10DE) -> chip, for ids missing from the supported-gpus table.
# medium (community database, approximate first/last ids per chip): pciutils/pciids pci.ids commit c1c12547,
# https://github.com/pciutils/pciids/blob/c1c12547d626ebf05fd0223144ad87fab5e95d06/pci.ids
DEVICE_RANGES = (
    (0x06C0, 0x06DF, "GF100"),
    (0x0DC0, 0x0E3B, "GF106"),
    (0x1040, 0x109B, "GF119"),
    (0x1200, 0x1251, "GF114"),
    (0x0FC0, 0x0FFF, "GK107"),
    (0x102D, 0x102D, "GK210"),  # Tesla K80 inside the GK110 range
    (0x1001, 0x103F, "GK110"),
    (0x1180, 0x11BF, "GK104"),
    (0x11C0, 0x11FF, "GK106"),
    (0x1280, 0x12BA, "GK208"),
    (0x1340, 0x137D, "GM108"),
    (0x1380, 0x13BF, "GM107"),
    (0x13C0, 0x13FB, "GM204"),
    (0x1401, 0x1436, "GM206"),
    (0x1617, 0x1667, "GM204"),
    (0x1740, 0x174F, "GM108"),
    (0x1789, 0x1789, "GM107"),
    (0x179C, 0x179C, "GM107"),
    (0x17C2, 0x17FD, "GM200"),
    (0x15F0, 0x15FF, "GP100"),
    (0x1B00, 0x1B78, "GP102"),
    (0x1B80, 0x1BE1, "GP104"),
    (0x1C00, 0x1C70, "GP106"),
    (0x1C81, 0x1CFB, "GP107"),
    (0x1D01, 0x1D56, "GP108"),
    (0x1D81, 0x1DF6, "GV100"),
    (0x1E02, 0x1E78, "TU102"),
    (0x1E81, 0x1EF5, "TU104"),
    (0x1F02, 0x1F76, "TU106"),
    (0x1F81, 0x1FF9, "TU117"),
    (0x2080, 0x20FF, "GA100"),
    (0x2182, 0x21D1, "TU116"),
    (0x2200, 0x223F, "GA102"),
    (0x2302, 0x23F0, "GH100"),
    (0x2414, 0x2460, "GA103"),
    (0x2480, 0x24FA, "GA104"),
    (0x2501, 0x2571, "GA106"),
    (0x2582, 0x25FB, "GA107"),
    (0x2681, 0x26F5, "AD102"),
    (0x2702, 0x2770, "AD103"),
    (0x2782, 0x27FB, "AD104"),
    (0x2803, 0x2878, "AD106"),
    (0x2882, 0x28F8, "AD107"),
    (0x2900, 0x297E, "GB100"),
    (0x2980, 0x29F1, "GB102"),
    (0x2B85, 0x2BBC, "GB202"),
    (0x2C02, 0x2C79, "GB203"),
    (0x2D04, 0x2D79, "GB206"),
    (0x2D83, 0x2DF9, "GB207"),
    (0x2E12, 0x2E12, "GB10"),
    (0x2F04, 0x2F58, "GB205"),
    (0x3000, 0x3040, "GR100"),
    (0x30C0, 0x30C0, "GR102"),
    (0x3180, 0x31FE, "GB110"),
)

# Compute capability -> architecture (for gpus given as {compute_capability}).
# high: https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html
CC_ARCH = {
    "2.0": "Fermi",
    "2.1": "Fermi",
    "3.0": "Kepler",
    "3.2": "Kepler",
    "3.5": "Kepler",
    "3.7": "Kepler",
    "5.0": "Maxwell",
    "5.2": "Maxwell",
    "5.3": "Maxwell",
    "6.0": "Pascal",
    "6.1": "Pascal",
    "6.2": "Pascal",
    "7.0": "Volta",
    "7.2": "Volta",
    "7.5": "Turing",
    "8.0": "Ampere",
    "8.6": "Ampere",
    "8.7": "Ampere",
    "8.8": "Ampere",  # high for sm_88 in nvcc 13.0; product not identified (family assumed Ampere, low)
    "8.9": "Ada Lovelace",
    "9.0": "Hopper",
    "10.0": "Blackwell",
    "10.1": "Blackwell",  # Thor as named by CUDA 12.8/12.9 (renamed 11.0 in CUDA 13.0)
    "10.3": "Blackwell",
    "10.7": "Rubin",  # medium
    "11.0": "Blackwell",
    "12.0": "Blackwell",
    "12.1": "Blackwell",
}

# Compute capability major -> architecture, for compute capabilities the table above does not list yet
# (a newer minor of a known family, e.g. "12.2"); majors whose minors span several architectures (7: Volta
# and Turing, 8: Ampere and Ada) are absent. Used by the GPU probe only, after CC_ARCH and the device id.
# medium (the family of an unlisted minor is assumed from its major; rule of the table above):
# https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html
CC_MAJOR_ARCH = {
    "3": "Kepler",
    "5": "Maxwell",
    "6": "Pascal",
    "9": "Hopper",
    "10": "Blackwell",
    "11": "Blackwell",
    "12": "Blackwell",
}

# Which names are data-center parts (CUDA forward compatibility is only for those).
# high (rule): https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
# medium (the name patterns are ours, from supported-gpus.json names)
DATA_CENTER_NAME_PATTERNS = (
    r"^Tesla ",
    r"^NVIDIA (A100|A800|AX800|A10G?M?|A16|A2|A30|A40|B100|B200|B300|GB200|GB300|GH200|H100|H200|H800|H20|"
    r"L2|L20|L4|L40S?|PG50\d|PG509)\b",
    r"^NVIDIA RTX PRO \d+ Blackwell Server",
)
# fmt: on


def arch_order(arch):
    """Sort key of an architecture name (unknown architectures sort last)."""
    info = ARCHITECTURES.get(arch)
    return info["order"] if info else 10_000


def chip_info(chip):
    """(architecture, compute capability, confidence) for a chip code like "GH100", or None."""
    if not chip:
        return None
    chip = chip.upper()
    best = None
    for prefix, arch, cc, conf in CHIPS:
        if chip.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, arch, cc, conf)
    return best[1:] if best else None


def chip_for_device(devid):
    """The chip code whose device-id range holds ``devid`` (an int), or None (first match wins)."""
    for low, high, chip in DEVICE_RANGES:
        if low <= devid <= high:
            return chip
    return None


def cc_architecture(compute_capability, by_major=False):
    """The architecture of a compute capability ("9.0" -> "Hopper"), or None when the tables do not know it.

    ``by_major`` also answers for an unlisted minor of a known family (CC_MAJOR_ARCH: "12.2" -> "Blackwell").
    """
    cc = str(compute_capability or "").strip()
    arch = CC_ARCH.get(cc)
    if arch is None and by_major:
        arch = CC_MAJOR_ARCH.get(cc.split(".", maxsplit=1)[0])
    return arch
