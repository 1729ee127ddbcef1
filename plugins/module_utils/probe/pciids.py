# Copyright: gpufleet contributors
# Apache-2.0
"""pci.ids: the names the host's PCI id database gives NVIDIA devices (the one reader of pci.ids).

Stdlib only, Python >= 3.9. The GPU probe asks for the devices the knowledge base cannot place by their id
alone; identification (kb/gpus.py) then takes the chip code from the name ("GH100 [H200 SXM 141GB]").
"""

from __future__ import annotations

import re

PCI_IDS_PATHS = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids", "/usr/share/pci.ids")
NVIDIA_VENDOR_LINE = "10de "
_DEVICE_LINE = re.compile(r"^\t([0-9A-Fa-f]{4})(?:\s|$)")


def nvidia_devices(text):
    """{device id (int): name} of the NVIDIA section of a pci.ids text (subsystem lines skipped)."""
    found = {}
    in_nvidia = False
    for line in text.splitlines():
        if not line.startswith("\t"):
            in_nvidia = line.lower().startswith(NVIDIA_VENDOR_LINE)
            continue
        match = _DEVICE_LINE.match(line) if in_nvidia else None
        if match:
            found.setdefault(int(match.group(1), 16), line[5:].strip())
    return found


def names(root, devids, paths=PCI_IDS_PATHS):
    """({devid: name}, reason) for NVIDIA device ids (ints), each from the first pci.ids under ``root`` that
    lists it; ``reason`` (None when every id has a name) says why the others have none."""
    wanted = set(devids)
    result, problems, read = {}, [], []
    for path in paths:
        if not wanted - set(result):
            break
        if not root.exists(path):
            continue
        text, reason = root.read_text(path)
        if text is None:
            problems.append(reason)
            continue
        read.append(path)
        listed = nvidia_devices(text)
        result.update({d: listed[d] for d in wanted - set(result) if d in listed})
    if not wanted - set(result):
        return result, None
    if read:
        problems.append("not listed in {}".format(", ".join(read)))
    return result, "; ".join(problems) or "no pci.ids under root ({})".format(", ".join(paths))
