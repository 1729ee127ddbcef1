"""What each program loads, in every report format: the real H200's facts (tests/gpu/evidence/
h200-2026-12-01-consumers, a copy of /opt/torch/.venv with the system's 9.14 libcudnn_graph.so.9 put in)
through build_report and every renderer."""

import csv
import io
import json
import re
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build as rp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.html import render_html

FACTS = Path(__file__).resolve().parents[4] / "data" / "audit" / "h200-broken-venv.json"


@pytest.fixture(scope="module")
def report():
    facts = json.loads(FACTS.read_text())
    baseline = {"consumers_cudnn": {"/opt/torch/.venv": "9.19"}}
    records = [{"name": "h200", "status": "ok", "facts": facts, "baseline": baseline}]
    return rp.build_report(records, generated_at="2026-12-01T15:00:00Z", use_compat=False)


def test_the_host_entry_says_what_torch_loads_and_the_mixed_copy(report):
    (h,) = report["hosts"]
    venv = [e for e in h["consumers"]["environments"] if e["path"] == "/opt/torch/.venv"][0]
    torch = [f for f in venv["frameworks"] if f["name"] == "torch"][0]
    assert torch["loads"]["version"] == "9.19.0" and torch["loads"]["via"] == "rpath"
    codes = {f["code"] for f in h["findings"]}
    assert {"cudnn_mixed_sub_libraries", "consumer_loads"} <= codes
    assert h["drift_status"] == "none"  # the baseline's "what torch loads" holds for the venv itself


def test_every_format_carries_the_environments(report):
    rows = list(csv.DictReader(io.StringIO(rp.render_csv(report))))
    consumers = [r for r in rows if r["component"] == "consumer"]
    assert any(r["version"].startswith("9.19") and "/opt/torch/.venv" in r["name"] for r in consumers)
    assert "/opt/torch/.venv" in rp.render_markdown(report)
    page = render_html(report)
    assert '<table id="environments">' in page and "/opt/torch/.venv" in page
    metrics = rp.render_prometheus(report)
    assert "# TYPE gpufleet_consumer_cudnn_info gauge" in metrics
    assert 'gpufleet_cudnn_mixed_dirs{host="h200"} 1' in metrics
    assert "gpufleet_gpu_stack_info{" in metrics and 'modelName="NVIDIA H200"' in metrics
    assert json.loads(rp.render_json(report))["hosts"][0]["consumers"]["environments"]


def test_gpu_info_and_gpu_stack_info_carry_the_same_pci_bus_id_as_dcgm(report):
    """dcgm-exporter writes NVML's bus id (00000000:00:06.0); both GPU series must, or a join is empty."""
    metrics = rp.render_prometheus(report)
    ids = {
        name: set(
            re.findall(
                r'pci_bus_id="([^"]*)"', "\n".join(x for x in metrics.splitlines() if x.startswith(name))
            )
        )
        for name in ("gpufleet_gpu_info{", "gpufleet_gpu_stack_info{")
    }
    assert ids["gpufleet_gpu_info{"] == ids["gpufleet_gpu_stack_info{"] != set()
    assert all(
        re.match(r"^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$", i) for i in ids["gpufleet_gpu_info{"]
    )
