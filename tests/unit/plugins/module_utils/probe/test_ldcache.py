"""probe_ldcache: the binary loader cache and `ldconfig -p` (real H200 output)."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import (
    locate,
    parse_ld_cache,
    parse_ldconfig_p,
    resolve,
    sonames,
    trusted_dirs,
)

from tests.data.builders import build_ld_cache
from tests.data.facts import fakeroot

H200 = Path(__file__).resolve().parents[4] / "data" / "h200-ubuntu2404"


def test_ldconfig_p_of_the_h200():
    entries = parse_ldconfig_p((H200 / "ldconfig-p.txt").read_text())
    assert len(entries) == 520
    assert resolve(entries, "libcudnn.so.9", "x86_64") == "/lib/x86_64-linux-gnu/libcudnn.so.9"
    # two copies of libnvidia-ml.so.1 in the cache: the loader takes the first
    assert resolve(entries, "libnvidia-ml.so.1", "x86_64") == "/usr/local/nvidia/lib64/libnvidia-ml.so.1"
    assert sonames(entries, r"^libcudnn\.so\.\d+$", "x86_64") == {
        "libcudnn.so.9": "/lib/x86_64-linux-gnu/libcudnn.so.9"
    }


def test_binary_cache_round_trip_and_abi_filter():
    data = build_ld_cache(
        [
            ("libcudnn.so.8", "/usr/lib/i386-linux-gnu/libcudnn.so.8", 0x0003),
            ("libcudnn.so.8", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", 0x0303),
        ]
    )
    entries = parse_ld_cache(data)
    assert [e[0] for e in entries] == ["libcudnn.so.8", "libcudnn.so.8"]
    assert resolve(entries, "libcudnn.so.8", "x86_64") == "/usr/lib/x86_64-linux-gnu/libcudnn.so.8"


def test_real_cache_of_this_machine_parses():
    data = Path("/etc/ld.so.cache").read_bytes() if Path("/etc/ld.so.cache").exists() else None
    if data is None:
        pytest.skip("this machine has no /etc/ld.so.cache")
    assert any(name.startswith("libc.so") for name, _, _ in parse_ld_cache(data))


@pytest.mark.parametrize("data", [b"", b"garbage" * 10, build_ld_cache([("a", "/b", 0x303)])[:60]])
def test_garbage_cache_raises_value_error(data):
    with pytest.raises(ValueError):
        parse_ld_cache(data)


def test_glibcs_trusted_directories_after_the_cache(tmp_path):
    """Debian's multiarch glibc (its ld.so --help: /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib,
    /usr/lib) and the RHEL family's (/lib64, /usr/lib64), searched for what the cache does not list."""
    root = Root(str(tmp_path))
    assert trusted_dirs(root, "x86_64") == ("/lib64", "/usr/lib64")
    fakeroot.write(tmp_path, "/usr/lib64/libcuda.so.1")
    assert locate(root, [], "libcuda.so.1", "x86_64") == ("/usr/lib64/libcuda.so.1", "default_dirs")
    assert locate(root, [], "libnvidia-ml.so.1", "x86_64") == (None, None)
    fakeroot.write(tmp_path, "/usr/lib/aarch64-linux-gnu/libcuda.so.1")
    assert trusted_dirs(root, "aarch64") == (
        "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib",
    )  # fmt: skip
    assert locate(root, [], "libcuda.so.1", "aarch64") == (
        "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
        "default_dirs",
    )
    cached = [("libcuda.so.1", "/opt/driver/libcuda.so.1", 0x0A03)]
    assert locate(root, cached, "libcuda.so.1", "aarch64") == ("/opt/driver/libcuda.so.1", "ld_cache")
