"""kb/cuda_redist.py: every component of NVIDIA's CUDA 13.0.2 redist manifest is either a toolkit's or named
as something else (the driver and datacenter pieces the same manifest carries), never both."""

from pathlib import Path

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda_redist

DATA = Path(__file__).resolve().parents[4] / "data" / "kb" / "cuda-redist"


def manifest_13_0_2():
    """{component: [platforms]} of redistrib_13.0.2.json (tests/data/kb/README.md)."""
    lines = (DATA / "redistrib_13.0.2-components.txt").read_text(encoding="utf-8").splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines if line.strip()}


def test_every_component_of_the_13_0_2_manifest_is_classified_once():
    toolkit = {row[0] for row in cuda_redist.TOOLKIT if 13 in row[2]}
    listed = set(manifest_13_0_2())
    assert toolkit | set(cuda_redist.NOT_TOOLKIT) >= listed
    assert not toolkit & set(cuda_redist.NOT_TOOLKIT)
    assert toolkit <= listed, "a CUDA 13 toolkit component the 13.0.2 manifest does not have"


def test_the_driver_pieces_of_the_issue_are_not_a_toolkits():
    for name in ("nvidia_driver", "nvidia_fs", "fabricmanager", "libnvidia_nscq", "imex"):
        assert name in cuda_redist.NOT_TOOLKIT


def test_the_compiler_set_and_the_verified_libraries_are_toolkit_components_of_every_linux_platform():
    platforms = manifest_13_0_2()
    for name in (*cuda_redist.COMPILER[13], *cuda_redist.VERIFY.values()):
        assert {"linux-x86_64", "linux-sbsa"} <= set(platforms[name]), name
    toolkit = {row[0]: row for row in cuda_redist.TOOLKIT}
    for major, names in cuda_redist.COMPILER.items():
        assert all(toolkit[n][1] == "compiler" and major in toolkit[n][2] for n in names)
    assert {row[1] for row in cuda_redist.TOOLKIT} <= set(cuda_redist.GROUPS)
