"""Every knowledge-base row carries a confidence and a source URL, and every source is NVIDIA's own page.

Allowed sources: *.nvidia.com and NVIDIA's GitHub organisations (github.com/NVIDIA, github.com/NVIDIA-*).
Anything else is listed in NON_NVIDIA_SOURCES with the reason it is used; a new foreign source fails here
until it is listed (and a listed source that is no longer cited fails too, so the list stays true).
"""

import ast
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[5]
KB = ROOT / "plugins/module_utils/kb"
CONFIDENCE_AND_URL = re.compile(r"#.*\b(high|medium|low)\b.*https?://")
URL = re.compile(r"https?://[^\s\"'<>),]+")

# Tables of names rather than facts: their sources are the module docstring (checked for hosts below).
NAMING_TABLES = {
    "hosts.py": "the OS key and machine mapping: gpufleet's own naming; NVIDIA sources in the docstring",
    "distributions.py": "os-release IDs <-> Ansible names: not NVIDIA facts (os-release(5), ansible-core)",
    "gpu_ids.py": "GENERATED from NVIDIA's supported-gpus.json (SOURCE names it; test_kb checks it)",
}

NON_NVIDIA_SOURCES = {
    "https://www.cnblogs.com/litifeng/p/18236236": "copy of NVIDIA's architecture matrix with the Fermi rows "
    "NVIDIA's current page no longer shows (rows are medium)",
    "https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def": (
        "LLVM's table of sm_XX per PTX/CUDA release, checked against nvcc --list-gpu-code of NVIDIA's wheels"
    ),
    "https://github.com/pciutils/pciids/blob/c1c12547d626ebf05fd0223144ad87fab5e95d06/pci.ids": (
        "community PCI id database: device-id ranges per chip for ids missing from NVIDIA's list (medium)"
    ),
    "https://github.com/megvadulthangya/nvidia-driver-assistant/": (
        "public copy of NVIDIA's own supported-gpus.json (the file is NVIDIA's, byte for byte)"
    ),
    "https://pypi.org/project/nvidia-cudnn-cu13/": "NVIDIA's own cuDNN wheels, published by NVIDIA on PyPI",
    "https://pypi.org/project/nvidia-cudnn-cu12/": (
        "NVIDIA's own cuDNN wheels for CUDA 12, published by NVIDIA: the device code they carry (cuobjdump)"
    ),
    "https://www.freedesktop.org/software/systemd/man/latest/os-release.html": (
        "os-release(5): distribution IDs (distributions.py, not an NVIDIA fact)"
    ),
    "https://packages.ubuntu.com/": (
        "Ubuntu's own package index: the driver branches Ubuntu's archive builds (driver_packages.py, not an "
        "NVIDIA fact)"
    ),
    "http://deb.debian.org/debian": (
        "Debian's own mirror and index: the one driver branch and the components of each Debian release "
        "(driver_packages.py), and the mirror the non-free source defaults to"
    ),
    "https://www.debian.org/releases/": "Debian's release codenames (driver_packages.py, not an NVIDIA fact)",
    "https://manpages.debian.org/": (
        "the manual pages of update-initramfs and dracut: the initramfs commands (driver_packages.py)"
    ),
}


def _nvidia(url):
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "nvidia.com" or host.endswith(".nvidia.com"):
        return True
    if host == "github.com":
        org = parts.path.strip("/").split("/")[0]
        return org == "NVIDIA" or org.startswith("NVIDIA-")
    return host.endswith(".github.io") and host.split(".")[0].lower() == "nvidia"


def _kb_files():
    return sorted(p for p in KB.glob("*.py") if p.name != "__init__.py")


def _cited_urls():
    found = {}
    for path in _kb_files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for url in URL.findall(line):
                found.setdefault(url.rstrip("."), []).append(f"{path.name}:{n}")
    return found


def test_every_source_is_nvidias_or_listed_with_a_reason():
    foreign = {
        url: where
        for url, where in _cited_urls().items()
        if not _nvidia(url) and not any(url.startswith(allowed) for allowed in NON_NVIDIA_SOURCES)
    }
    assert foreign == {}, (
        "not NVIDIA's: cite NVIDIA's page or add the source to NON_NVIDIA_SOURCES with a reason"
    )


def test_every_listed_foreign_source_is_still_cited():
    cited = _cited_urls()
    unused = [a for a in NON_NVIDIA_SOURCES if not any(url.startswith(a) for url in cited)]
    assert unused == []


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://docs.nvidia.com/cuda/cuda-features-archive/index.html", True),
        ("https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_8.8.0.json", True),
        ("https://github.com/NVIDIA/cutlass/discussions/3555", True),
        ("https://github.com/NVIDIA-AI-IOT/x", True),
        ("https://github.com/nvidiafan/cuda", False),
        ("https://nvidia.com.example.org/x", False),
        ("https://www.cnblogs.com/litifeng/p/18236236", False),
    ],
)
def test_nvidia_host_rule(url, ok):
    assert _nvidia(url) is ok


def _tables(path):
    """(name, first line, [(row first line, row last line)]) of the top-level tables of a file: dicts (one row
    per entry), tuples of tuples (one row per tuple) and multi-line tuples of scalars (one row: the fact)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, (ast.Tuple, ast.Dict)):
            continue
        if not isinstance(node.targets[0], ast.Name):
            continue  # HIGH, MEDIUM, LOW = ...: constants, not a table
        name = node.targets[0].id
        value = node.value
        if isinstance(value, ast.Dict):
            rows = [(k.lineno, v.end_lineno) for k, v in zip(value.keys, value.values) if k is not None]
        elif value.elts and all(isinstance(r, (ast.Tuple, ast.Dict)) for r in value.elts):
            rows = [(r.lineno, r.end_lineno) for r in value.elts]
        else:
            rows = [(value.lineno, value.end_lineno)]
        if rows:
            yield name, node.lineno, rows


def _header(lines, lineno):
    """The comment block right above line ``lineno`` (1-based)."""
    out, i = [], lineno - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        out.append(lines[i])
        i -= 1
    return " ".join(reversed(out))


# Tables whose rows share one source, named in the comment above the table (confidence + URL).
TABLE_SOURCED = {
    ("arch.py", "DEVICE_RANGES"): "54 id ranges from one pci.ids commit (medium), one comment for all",
    ("arch.py", "CC_ARCH"): "every row from NVIDIA's compute-capabilities appendix (high)",
    ("arch.py", "CC_MAJOR_ARCH"): "the rule of CC_ARCH's page applied per major (medium)",
    (
        "arch.py",
        "LEGACY_BRANCH_ARCH",
    ): "NVIDIA's legacy-branch list (forum 'Current graphics driver releases')",
    ("driver_packages.py", "NVIDIA_REPO_FIRST_BRANCH"): "one rule (lifecycle x repository lifetime), medium",
    ("driver_packages.py", "UBUNTU_ARCHIVE_BRANCHES"): "one reading of Ubuntu's package listings (medium)",
    (
        "driver_packages.py",
        "APT_FLAVOR_SWITCH",
    ): "the install guides' 'Switching between Driver Module Flavors'",
    ("driver_packages.py", "INITRAMFS_COMMANDS"): "the manual pages of update-initramfs and dracut (high)",
    ("driver_packages.py", "INITRAMFS_KERNEL_COMMANDS"): "the same manual pages (high)",
}
# Tables of words, not facts.
NAMING_ROWS = {
    ("cuda_redist.py", "GROUPS"): "gpufleet's words for the groups of a toolkit's components",
    ("driver.py", "BRANCH_TYPE_NAMES"): "the wording of NVIDIA's branch types (LTSB/PB/NFB)",
    ("facts.py", "SUBSETS"): "the names of nvidia_facts' gather subsets (gpufleet's own)",
    ("facts.py", "NAMED_ONLY"): "the subsets `all` leaves out (gpufleet's own)",
    ("gpus.py", "FACT_ITEM_KEYS"): "the keys of a gpus item that a GPU of the facts fills (gpufleet's names)",
    ("gpufleet.py", "PIN_FILES"): "where gpufleet keeps its pin files (its own file names)",
    ("gpufleet.py", "DRIVER_FILES"): "the files the nvidia_driver role writes (its own file names)",
    ("gpufleet.py", "DRIVER_INITRAMFS_FILES"): "the driver role's initramfs hook per OS family (own names)",
    ("gpufleet.py", "DRIVER_DIRS"): "the directories of the driver role's files (their own names)",
}


def _unsourced_rows(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    bad = []
    for name, lineno, rows in _tables(path):
        if (path.name, name) in NAMING_ROWS:
            continue
        if (path.name, name) in TABLE_SOURCED:
            assert CONFIDENCE_AND_URL.search("# " + _header(lines, lineno).replace("#", " ")), name
            continue
        for first, last in rows:
            text = " ".join(lines[first - 1 : last]) + " " + _header(lines, first)
            if first == lineno:  # a one-line table or one fact: the comment above the assignment counts
                text += " " + _header(lines, lineno)
            if not CONFIDENCE_AND_URL.search(text.replace("#", " # ")):
                bad.append(f"{path.name}:{first} {name}")
    return bad


@pytest.mark.parametrize("path", _kb_files(), ids=lambda p: p.name)
def test_every_table_row_has_confidence_and_source(path):
    """A row is sourced by its own comment or the comment right above it (TABLE_SOURCED: by the table's);
    naming tables are exempt (NAMING_TABLES says why)."""
    if path.name in NAMING_TABLES:
        pytest.skip(NAMING_TABLES[path.name])
    assert _unsourced_rows(path) == []
