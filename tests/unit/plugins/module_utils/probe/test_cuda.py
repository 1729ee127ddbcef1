"""probe/cuda.py: gpufleet's marker per toolkit (the one reader the cuda_toolkit plan asks)."""

import json

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import MARKER
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import cuda as probe_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages


def _toolkit(root, name, marker):
    tree = root / "usr/local" / name
    (tree / "bin").mkdir(parents=True)
    (tree / "bin/nvcc").write_text("")
    version = name.split("-")[1]
    (tree / "version.json").write_text(json.dumps({"cuda": {"version": f"{version}.0"}}))
    if marker:
        (tree / MARKER).write_text("{}")


def test_marker_is_reported_per_toolkit(tmp_path):
    _toolkit(tmp_path, "cuda-13.0", marker=True)
    _toolkit(tmp_path, "cuda-12.9", marker=False)
    root = Root(str(tmp_path))
    cuda = probe_cuda.probe(root, False, Packages(root))
    marks = {t["path"]: t["gpufleet_marker"] for t in cuda["toolkits"]}
    assert marks == {"/usr/local/cuda-12.9": False, "/usr/local/cuda-13.0": True}
