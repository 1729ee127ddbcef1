"""report/findings.py: the host-managed driver comes from the facts' one definition."""

import json
from pathlib import Path

from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build as rp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import findings as rf

DATA = Path(__file__).resolve().parents[4] / "data" / "audit"


def entry(name="h200", **host):
    facts = json.loads((DATA / f"{name}.json").read_text())
    facts["host"].update(host)
    return rp.normalize_host("a", "ok", facts)


def codes(findings):
    return [f["code"] for f in findings]


def test_host_managed_driver_is_the_facts_definition_with_its_reason():
    e = entry(driver_managed_externally=True, driver_managed_externally_reason="NVML on a read-only mount")
    assert e["host"]["driver_managed_externally_reason"] == "NVML on a read-only mount"
    (f,) = [f for f in rf.local_findings(e) if f["code"] == "driver_managed_externally"]
    assert f["severity"] == "info"
    assert "(NVML on a read-only mount)" in f["message"]


def test_install_method_host_alone_is_not_a_second_definition():
    # the driver's install_method says "host" in this fixture; only host.driver_managed_externally counts
    e = entry(driver_managed_externally=False)
    assert e["driver"]["install_method"] == "host"
    assert "driver_managed_externally" not in codes(rf.local_findings(e))
    e = entry(driver_managed_externally=None)
    assert "driver_managed_externally" not in codes(rf.local_findings(e))


def test_newer_driver_advice_says_where_a_host_managed_driver_is_changed():
    managed = entry("oldtrain", driver_managed_externally=True, driver_managed_externally_reason="x")
    (f,) = [f for f in rf.driver_api_findings(managed) if f["code"] == "cuda_needs_newer_driver"]
    assert f["message"].endswith(
        "install a driver for CUDA 13.x where the driver is managed (outside this host)"
    )
    own = entry("oldtrain")
    (f,) = [f for f in rf.driver_api_findings(own) if f["code"] == "cuda_needs_newer_driver"]
    assert f["message"].endswith("install a driver for CUDA 13.x")


def test_findings_module_looks_up_no_function_by_name():
    source = Path(rf.__file__).read_text()
    assert "importlib" not in source
    assert "hasattr(" not in source
    assert "getattr(" not in source
