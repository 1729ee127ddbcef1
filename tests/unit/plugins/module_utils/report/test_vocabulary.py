"""One vocabulary: a fleet rendered into every format says the same value for each field of each host.

The fleet has a GPU host with a baseline, a host without GPU (and without driver or baseline), a GPU host
without a driver, an unreachable host and a host whose nvidia_facts failed. Each format is read back the way
its consumer reads it (JSON parsed, CSV rows, the Markdown and HTML hosts tables, the HTML components table,
Prometheus samples, the summary printed at the end) into {host: {field: value}}; every format that carries a
field must say the same as the JSON.
"""

import copy
import csv
import io
import json
import re
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build as rp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import words
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.html import decode_table, render_html

from tests.unit.plugins.module_utils.report.test_build import parse_exposition

DATA = Path(__file__).resolve().parents[4] / "data" / "audit"
HOSTS = ("gpu01", "gpu99", "login01", "nodrv01", "old01")
SEVERITIES = ("error", "warning", "info")
# what the JSON's drift_status means (docs/audit.md); a count for "drift"
DRIFT_STATUS = {"none": "none", "no_baseline": "no baseline set", "unknown": "unknown"}


def facts(name):
    return json.loads((DATA / f"{name}.json").read_text())


def no_driver():
    """The H200 with its driver gone: the facts say installed false and unknown for the rest."""
    f = copy.deepcopy(facts("h200"))
    f["driver"].update(
        installed=False,
        loaded=False,
        version="unknown",
        branch="unknown",
        kernel_module="unknown",
        install_method="none",
        cuda_driver_version="unknown",
    )
    return f


def held_h200():
    """The H200 with most of its CUDA 13.0 packages held (cuda_toolkit_hold's state after an admin released
    some): the toolkit's hold words in every format (issue 36)."""
    f = facts("h200")
    f["cuda"]["toolkits"][0]["hold"] = {"packages": 44, "held": 40}
    return f


@pytest.fixture(scope="module")
def report():
    records = [
        {"name": "gpu01", "status": "ok", "facts": held_h200(), "baseline": {"driver_branch": "575"}},
        {"name": "login01", "status": "ok", "facts": facts("nogpu")},
        {"name": "nodrv01", "status": "ok", "facts": no_driver()},
        rp.record_from_result("gpu99", {"unreachable": True, "msg": "ssh: connect to host gpu99: No route"}),
        rp.record_from_result(
            "old01",
            {
                "failed": True,
                "msg": "Module result deserialization failed: No start of json char found",
                "module_stderr": "/bin/sh: 1: /usr/bin/python3: not found\n",
            },
        ),
    ]
    return rp.build_report(records, generated_at="2026-12-06T00:00:00Z", use_compat=False)


def listed(values):
    return ", ".join(sorted(values)) or "none"


def findings_words(counts):
    return ", ".join(f"{counts.get(s, 0)} {s}" for s in SEVERITIES)


# ---------------------------------------------------------------- each format read back
def from_json(report):
    out = {}
    for h in json.loads(rp.render_json(report))["hosts"]:
        d = h["driver"] or {}
        counts = {s: sum(f["severity"] == s for f in h["findings"]) for s in SEVERITIES}
        audited = h["status"] == "ok"
        out[h["name"]] = {
            "status": h["status"],
            "gpus": str(h["gpu_count"]) if audited else "unknown",
            "gpu_models": listed(g["name"] for g in h["gpus"]) if audited else "unknown",
            "driver": d.get("version", "unknown"),
            "branch": d.get("branch", "unknown"),
            "kernel_module": d.get("kernel_module", "unknown"),
            "install_method": d.get("install_method", "unknown"),
            "driver_cuda": d.get("cuda_driver_version", "unknown"),
            "cuda": listed(t["version"] for t in h["cuda"]["toolkits"]) if audited else "unknown",
            "cuda_hold": listed(t["hold"] for t in h["cuda"]["toolkits"]) if audited else "unknown",
            "cudnn": listed(c["version"] for c in h["cudnn"]) if audited else "unknown",
            "drift": DRIFT_STATUS.get(h["drift_status"], str(len(h["drift"]))),
            "findings": findings_words(counts),
        }
    return out


def _driver_cell(text):
    """'580.159.04 (open, host)' -> version, kernel_module, install_method; 'none'/'unknown' for all."""
    m = re.match(r"^(\S+) \((\S+), (\S+)\)$", text)
    return m.groups() if m else (text, text, text)


def _models(text):
    if text in ("none", "unknown"):
        return ("0" if text == "none" else text), text
    models = re.findall(r"(\d+)x ([^,]+)", text)
    return str(sum(int(n) for n, _m in models)), listed(m for n, m in models for _ in range(int(n)))


def _versions(text):
    if text in ("none", "unknown"):
        return text
    return listed(part.split()[0].rstrip("*") for part in text.split(", "))


def from_host_cells(cells):
    """The hosts table's cells (Markdown, HTML, summary): host, status, GPUs, driver, CUDA, cuDNN, drift,
    findings."""
    name, status, gpus, driver, cuda, cudnn, drift, findings = cells
    version, module, method = _driver_cell(driver)
    count, models = _models(gpus)
    return name, {
        "status": status,
        "gpus": count,
        "gpu_models": models,
        "driver": version,
        "kernel_module": module,
        "install_method": method,
        "cuda": _versions(cuda),
        "cudnn": _versions(cudnn),
        "drift": drift.replace("**", ""),
        "findings": findings,
    }


def from_markdown(report):
    md = rp.render_markdown(report)
    rows = [line for line in md.splitlines() if line.startswith("| ")][2 : 2 + len(HOSTS)]
    return dict(from_host_cells([c.strip() for c in row.strip("|").split(" | ")]) for row in rows)


def from_summary(report):
    lines = rp.summary_lines(report)[2 : 2 + len(HOSTS)]
    return dict(from_host_cells(re.split(r"\s{2,}", line)) for line in lines)


def _html_data(report):
    page = render_html(report)
    text = page.split('<script type="application/json" id="gpufleet-data">', 1)[1].split("</script>", 1)[0]
    return json.loads(text)


def from_html_hosts(report):
    return dict(from_host_cells(cells) for _cls, cells in decode_table(_html_data(report), "hosts"))


def _drift_word(cells, messages):
    if "no baseline set" in cells:
        return "no baseline set"
    return str(len(messages)) if messages else "none"


def _component_fields(rows):
    """{host: fields} from rows with the CSV's columns (the CSV and the HTML components table)."""
    by_host = {}
    for r in rows:
        by_host.setdefault(r["host"], []).append(r)
    out = {}
    for name, rs in by_host.items():
        status = {r["status"] for r in rs}
        assert len(status) == 1, (name, status)
        fields = {"status": status.pop()}
        if rs[0]["component"] == "host":
            unread = ("gpus", "gpu_models", "driver", "cuda", "cuda_hold", "cudnn")
            fields.update(dict.fromkeys(unread, "unknown"))
            fields["drift"] = rs[0]["drift"]
            out[name] = fields
            continue
        gpus = [r for r in rs if r["component"] == "gpu" and r["name"] != "none"]
        (driver,) = [r for r in rs if r["component"] == "driver"]
        m = re.match(r"^branch (\S+), (\S+) module, CUDA (\S+)$", driver["detail"])
        branch, module, cuda = m.groups() if m else ("none",) * 3
        drift = [r["drift"] for r in rs if r["drift"] and r["component"] in ("driver", "cuda", "cudnn")]
        messages = [m for text in drift if text != "no baseline set" for m in text.split("; ")]
        fields.update(
            gpus=str(len(gpus)),
            gpu_models=listed(r["name"] for r in gpus),
            driver=driver["version"],
            branch=branch,
            kernel_module=module,
            install_method=driver["source"],
            driver_cuda=cuda,
            cuda=listed(r["version"] for r in rs if r["component"] == "cuda" and r["name"] != "(expected)"),
            cuda_hold=listed(
                r["detail"].split(", packages ", 1)[1]
                for r in rs
                if r["component"] == "cuda" and r["name"] != "(expected)"
            ),
            cudnn=listed(r["version"] for r in rs if r["component"] == "cudnn" and r["name"] != "(expected)"),
            drift=_drift_word(drift, messages),
        )
        out[name] = fields
    return out


def from_csv(report):
    return _component_fields(csv.DictReader(io.StringIO(rp.render_csv(report))))


def from_html_components(report):
    rows = decode_table(_html_data(report), "components")
    return _component_fields(dict(zip(rp.CSV_COLUMNS, cells)) for _cls, cells in rows)


def _prom_host(fam, name):
    def of(metric):
        return [(labels, v) for labels, v in fam.get(metric, []) if labels.get("host") == name]

    (up,) = of("gpufleet_audit_host_up")
    fields = {"status": up[0]["status"]}
    counts = {labels["severity"]: int(v) for labels, v in of("gpufleet_findings")}
    fields["findings"] = findings_words(counts)
    if not up[1]:
        fields.update(
            dict.fromkeys(("gpus", "gpu_models", "driver", "cuda", "cuda_hold", "cudnn", "drift"), "unknown")
        )
        return fields
    ((driver, _v),) = of("gpufleet_driver_info")
    ((_l, gpus),) = of("gpufleet_gpus")
    ((_l, baseline),) = of("gpufleet_baseline")
    drift = of("gpufleet_drift")
    fields.update(
        gpus=str(int(gpus)),
        gpu_models=listed(labels["name"] for labels, _v in of("gpufleet_gpu_info")),
        driver=driver["version"],
        branch=driver["branch"],
        kernel_module=driver["kernel_module"],
        install_method=driver["install_method"],
        driver_cuda=driver["cuda_version"],
        cuda=listed(labels["version"] for labels, _v in of("gpufleet_cuda_toolkit_info")),
        cuda_hold=listed(labels["hold"] for labels, _v in of("gpufleet_cuda_toolkit_info")),
        cudnn=listed(labels["version"] for labels, _v in of("gpufleet_cudnn_info")),
        drift="no baseline set" if not baseline else (str(int(drift[0][1])) if drift[0][1] else "none"),
    )
    for labels, _v in of("gpufleet_gpu_stack_info"):  # the DCGM-joinable series say the same
        assert labels["driver_version"] == driver["version"], labels
        major, minor = labels["cuda_runtime_major"], labels["cuda_runtime_minor"]
        assert (major if major == minor else f"{major}.{minor}") == driver["cuda_version"], labels
    return fields


def from_prometheus(report):
    fam = parse_exposition(rp.render_prometheus(report, timestamp=1))
    return {name: _prom_host(fam, name) for name in HOSTS}


def from_markdown_owners(report):
    """The Markdown owners list: each toolkit's line ends with its packages' holds."""
    md = rp.render_markdown(report)
    found = {}
    for line in md.splitlines():
        m = re.match(r"^- \*\*(\S+)\*\* CUDA \S+ at .*\(owner_kind `\w+`\), packages (.+)$", line)
        if m:
            found.setdefault(m.group(1), []).append(m.group(2))
    return {name: {"cuda_hold": listed(holds)} for name, holds in found.items()}


READERS = {
    "csv": from_csv,
    "markdown": from_markdown,
    "markdown owners": from_markdown_owners,
    "html hosts": from_html_hosts,
    "html components": from_html_components,
    "prometheus": from_prometheus,
    "summary": from_summary,
}


@pytest.mark.parametrize("fmt", READERS)
def test_every_format_says_what_the_json_says(report, fmt):
    expected = from_json(report)
    got = READERS[fmt](report)
    # the owners list names the audited hosts with a toolkit only
    assert sorted(got) == (["gpu01", "login01", "nodrv01"] if fmt == "markdown owners" else sorted(HOSTS))
    wrong = [
        (name, field, value, expected[name][field])
        for name, fields in got.items()
        for field, value in fields.items()
        if value != expected[name][field]
    ]
    assert wrong == [], f"{fmt}: (host, field, {fmt} says, the JSON says)"


def test_the_fleet_covers_every_case(report):
    """The words the test is about: a GPU host, no GPU, no driver, not audited (unreachable, failed)."""
    seen = from_json(report)
    assert seen["gpu01"]["driver"] == "580.159.04" and seen["gpu01"]["drift"] == "1"
    assert seen["login01"]["gpus"] == "0" and seen["login01"]["drift"] == "no baseline set"
    assert [seen["nodrv01"][k] for k in ("driver", "branch", "kernel_module", "driver_cuda")] == ["none"] * 4
    assert (seen["gpu99"]["status"], seen["old01"]["status"]) == ("unreachable", "failed")
    assert seen["old01"]["driver"] == "unknown" and seen["old01"]["findings"] == "1 error, 0 warning, 0 info"


def test_the_toolkits_holds_are_one_word_in_every_format(report):
    """Issue 36: the audit reports the toolkit's holds as it reports cuDNN's: a package toolkit's words, none
    for a redist tree."""
    seen = from_json(report)
    assert seen["gpu01"]["cuda_hold"] == "partly held (40 of 44)"
    assert seen["login01"]["cuda_hold"] == "none"  # gpufleet's redist tree: no package to hold
    assert words.hold_words({"source": "deb"}) == "unknown"  # facts of an older probe
    assert words.hold_words({"source": "deb", "hold": {"packages": 3, "held": 3}}) == "held"
    assert words.hold_words({"source": "rpm", "hold": {"packages": 3, "held": 0}}) == "not held"
