"""The fleet report (module_utils/report/build.py, rows.py, html.py, findings.py) from fixture facts."""

import csv
import functools
import io
import json
import os
import re
import types
from html.parser import HTMLParser
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.drift import BaselineError
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build as rp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import findings as rf
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.html import render_html, svg_bar_chart

DATA = Path(__file__).resolve().parents[4] / "data" / "audit"


# the compatibility rules are a function host entry -> findings (default: findings.kb_findings)
def no_compat(entry):
    return []


NO_COMPAT = no_compat


def facts(name):
    return json.loads((DATA / f"{name}.json").read_text())


def records():
    return [
        {
            "name": "gpu01",
            "status": "ok",
            "facts": facts("h200"),
            "baseline": {"driver_branch": "580", "cuda_versions": ["13.0"], "cudnn_versions": {13: "9.14"}},
        },
        {"name": "login01", "status": "ok", "facts": facts("nogpu")},
        {
            "name": "gpu10",
            "status": "ok",
            "facts": facts("oldtrain"),
            "baseline": {"driver_branch": "580", "cudnn_versions": {12: "9.10.2"}},
        },
        {"name": "gpu99", "status": "unreachable", "message": "ssh: connect to host gpu99 port 22: No route"},
        {"name": "old01", "status": "failed", "message": "Python 3.6 is too old"},
    ]


@pytest.fixture
def report():
    # without the knowledge base: the driver's own CUDA version decides what it can run
    return rp.build_report(records(), generated_at="2026-11-30T02:00:00Z", use_compat=False)


def host(report, name):
    (h,) = [h for h in report["hosts"] if h["name"] == name]
    return h


# -- the report dict (JSON schema) -----------------------------------------------------------------------
def test_schema_header(report):
    assert report["schema"] == "gpufleet-audit"
    assert report["schema_version"] == 1
    assert report["generated_at"] == "2026-11-30T02:00:00Z"
    assert [h["name"] for h in report["hosts"]] == ["gpu01", "gpu10", "gpu99", "login01", "old01"]


HOST_KEYS = {
    "name",
    "status",
    "message",
    "host",
    "gpu_count",
    "gpus",
    "driver",
    "cuda",
    "cudnn",
    "cudnn_resolved",
    "probes",
    "warnings",
    "facts_schema_version",
    "consumers",
    "driver_runtime",
    "cuda_compat",
    "baseline",
    "findings",
    "drift",
    "drift_status",
}


def test_every_host_has_every_key(report):
    for h in report["hosts"]:
        assert set(h) == HOST_KEYS, h["name"]
        assert h["status"] in rp.STATUSES
        assert h["drift_status"] in ("none", "drift", "no_baseline", "unknown")
        for f in h["findings"]:
            assert set(f) == {"severity", "code", "message"}
            assert f["severity"] in ("error", "warning", "info")


def test_json_round_trip(report):
    text = rp.render_json(report)
    assert json.loads(text) == json.loads(json.dumps(report))


def test_h200_lists_both_cudnn_copies_and_the_resolved_one(report):
    h = host(report, "gpu01")
    assert h["gpu_count"] == 1
    assert h["gpus"][0]["name"] == "NVIDIA H200"
    assert h["gpus"][0]["architecture"] == "Hopper"
    assert h["gpus"][0]["memory_mib"] == 143771
    assert h["driver"]["version"] == "580.159.04"
    assert h["driver"]["kernel_module"] == "open"
    assert h["driver"]["install_method"] == "host"
    assert [(t["version"], t["default"]) for t in h["cuda"]["toolkits"]] == [("13.0.2", True)]
    assert h["cuda"]["default"]["version"] == "13.0.2"
    copies = {(c["version"], c["source"], c["cuda_major"], c["resolved"]) for c in h["cudnn"]}
    assert copies == {("9.14.0", "deb", 13, True), ("9.19.0", "pip", 13, False)}
    pip = [c for c in h["cudnn"] if c["source"] == "pip"][0]
    assert pip["python_env"] == "/opt/torch/.venv"
    assert h["cudnn_resolved"][0]["real_path"] == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"
    codes = [f["code"] for f in h["findings"]]
    assert "cudnn_env_differs_from_system" in codes
    assert "cudnn_loader_resolves" in codes
    assert h["drift"] == []
    assert h["drift_status"] == "none"
    assert h["baseline"] == {
        "driver_branch": 580,
        "cuda_versions": ["13.0"],
        "cudnn_versions": {"13": "9.14"},
        "cudnn_scope": "system",
    }


def test_mismatch_finding_names_both_copies(report):
    (f,) = [f for f in host(report, "gpu01")["findings"] if f["code"] == "cudnn_env_differs_from_system"]
    # the H200's torch venv with its own cuDNN: nothing says a program loads the other copy, so info
    assert f["severity"] == "info"
    assert "cuDNN 9.19.0 (pip at /opt/torch/.venv)" in f["message"]
    assert "cuDNN 9.14.0 (deb at /usr)" in f["message"]
    assert "the facts do not say what its programs load" in f["message"]


def test_no_gpu_host(report):
    h = host(report, "login01")
    assert h["gpu_count"] == 0
    assert h["gpus"] == []
    # its CUDA 12.8 has a version.json but no package, runfile uninstaller or gpufleet marker
    assert [f["code"] for f in h["findings"]] == ["owner_unknown", "no_gpu"]
    assert h["drift_status"] == "no_baseline"
    assert (rp.status_text(h), rp.gpu_text(h)) == ("ok", "none")  # the GPUs say no GPU, not the status


def test_unreachable_and_failed_hosts_are_kept(report):
    for name, status in (("gpu99", "unreachable"), ("old01", "failed")):
        h = host(report, name)
        assert h["status"] == status
        assert h["gpu_count"] is None
        assert h["drift_status"] == "unknown"
        assert h["findings"][0]["code"] == status
        assert h["message"] in h["findings"][0]["message"]


def test_oldtrain_findings(report):
    h = host(report, "gpu10")
    codes = [f["code"] for f in h["findings"]]
    assert codes[:3] == [
        "cudnn_header_library_mismatch",
        "cuda_needs_newer_driver",
        "cudnn_needs_newer_driver",
    ]
    assert "cudnn_env_differs_from_system" in codes
    assert [f["severity"] for f in h["findings"]] == sorted(
        (f["severity"] for f in h["findings"]), key=["error", "warning", "info"].index
    )
    assert {(d["component"], d["actual"]) for d in h["drift"]} == {("driver", "575"), ("cudnn", "9.14.0")}


def test_summary(report):
    s = report["summary"]
    assert (s["hosts"], s["ok"], s["unreachable"], s["failed"], s["no_gpu"], s["gpus"]) == (5, 3, 1, 1, 1, 3)
    assert (s["hosts_with_drift"], s["drift_items"]) == (1, 2)
    assert s["findings"]["error"] == 5
    assert s["distributions"]["cudnn"]["9.14.0 (deb)"] == 1
    assert s["distributions"]["gpu_model"] == {"Tesla V100-SXM2-32GB": 2, "NVIDIA H200": 1}
    assert s["distributions"]["driver"] == {"575.57.08": 1, "580.159.04": 1}
    assert s["distributions"]["cuda"] == {"12.8": 2, "13.0": 2}


def test_malformed_baseline_raises_naming_host_and_key():
    recs = records()
    recs[0]["baseline"] = {"cudnn_version": "9.14"}
    with pytest.raises(BaselineError, match=r"gpufleet_baseline \(host gpu01\).*'cudnn_version'"):
        rp.build_report(recs, compat=NO_COMPAT)


def test_bad_status_rejected():
    with pytest.raises(ValueError, match="status"):
        rp.normalize_host("x", "gone")


def test_garbage_facts_do_not_crash():
    r = rp.build_report(
        [{"name": "odd", "status": "ok", "facts": {"gpus": "nope", "driver": None, "cudnn": [None, 3]}}],
        compat=NO_COMPAT,
    )
    h = r["hosts"][0]
    assert h["gpu_count"] == 0
    assert [c["version"] for c in h["cudnn"]] == ["unknown", "unknown"]
    for fmt in rp.FORMATS:
        assert rp.render(r, fmt)


# -- compat adapter --------------------------------------------------------------------------------------
def test_compat_rules_findings_used_and_deduplicated():
    def fake(entry):
        return [
            {"severity": "error", "code": "gpu_unsupported", "message": "V100 cannot run CUDA 13.0"},
            ("error", "V100 cannot run CUDA 13.0"),
            ("warning", "bad"),
        ]

    r = rp.build_report([{"name": "a", "status": "ok", "facts": facts("oldtrain")}], compat=fake)
    msgs = [f["message"] for f in r["hosts"][0]["findings"]]
    assert msgs.count("V100 cannot run CUDA 13.0") == 1
    assert "bad" in msgs


def test_compat_check_called_per_toolkit_and_copy():
    calls = []

    def check(**kw):
        calls.append(kw)
        if kw.get("cuda_version") == "13.0":
            return {"errors": ["Tesla V100 (Volta, sm_70) is not supported by CUDA 13.0"], "warnings": []}
        return {"errors": [], "warnings": []}

    r = rp.build_report([{"name": "a", "status": "ok", "facts": facts("oldtrain")}], compat={"check": check})
    codes = [f["code"] for f in r["hosts"][0]["findings"]]
    assert "compat_rules_failed" in codes  # a dict is not the rules (not callable)
    assert "cuda_needs_newer_driver" in codes  # the fallback rule steps in
    r = rp.build_report(
        [{"name": "a", "status": "ok", "facts": facts("oldtrain")}],
        compat=functools.partial(rf.kb_findings, check=check),
    )
    assert {c.get("cuda_version") for c in calls} >= {"12.8", "13.0"}
    assert calls[0]["gpus"][0] == {
        "pci_device_id": "0x1db5",
        "pci_subsystem_id": "0x1249",
        "pci_subsystem_vendor_id": "0x10de",
    }
    assert calls[0]["kernel_module"] == "proprietary"
    assert calls[0]["driver_version"] == "575.57.08"
    assert any(c.get("cudnn_cuda_major") == 13 and c.get("cudnn_version") == "9.14.0" for c in calls)
    (f,) = [f for f in r["hosts"][0]["findings"] if f["code"] == "compat"]
    assert f["severity"] == "error"
    assert "not supported by CUDA 13.0" in f["message"]


def test_compat_exceptions_become_info():
    def boom(entry):
        raise KeyError("architecture")

    out = rf.compat_findings({}, compat=boom)
    assert out == [
        {
            "severity": "info",
            "code": "compat_rules_failed",
            "message": "compatibility rules failed on this host (KeyError: 'architecture')",
        }
    ]
    out = rf.compat_findings({}, compat=types.SimpleNamespace())
    assert out[0]["code"] == "compat_rules_failed"


def test_compat_from_module_utils_never_crashes():
    out = rf.compat_findings(rp.normalize_host("a", "ok", facts("h200")))
    assert all(f["severity"] in rf.SEVERITIES for f in out)


def test_knowledge_base_replaces_the_fallback_rules():
    def fake(entry):
        return [("error", "CUDA 13.0 needs driver >= 580.65.06")]

    r = rp.build_report([{"name": "a", "status": "ok", "facts": facts("oldtrain")}], compat=fake)
    codes = [f["code"] for f in r["hosts"][0]["findings"]]
    assert "compat" in codes
    assert "cuda_needs_newer_driver" not in codes
    assert "cudnn_needs_newer_driver" not in codes


def test_compat_skipped_for_hosts_without_gpu():
    def fake(entry):
        return [("error", "should not be asked")]

    r = rp.build_report([{"name": "a", "status": "ok", "facts": facts("nogpu")}], compat=fake)
    assert [f["code"] for f in r["hosts"][0]["findings"]] == ["owner_unknown", "no_gpu"]


def test_minor_version_compat_warning():
    f = facts("h200")
    f["driver"]["cuda_driver_version"] = "12.4"
    f["cuda"]["toolkits"][0].update(version="12.8.1", major_minor="12.8")
    f["cudnn"] = []
    r = rp.build_report([{"name": "a", "status": "ok", "facts": f}], use_compat=False)
    (w,) = [x for x in r["hosts"][0]["findings"] if x["code"] == "cuda_minor_version_compat"]
    assert w["severity"] == "warning"


def test_gpu_without_driver():
    f = facts("h200")
    f["driver"].update(installed=False, loaded=False, version="unknown", cuda_driver_version="unknown")
    r = rp.build_report([{"name": "a", "status": "ok", "facts": f}], compat=NO_COMPAT)
    assert r["hosts"][0]["findings"][0]["code"] == "gpu_without_driver"


# -- CSV -------------------------------------------------------------------------------------------------
def test_csv_one_row_per_host_and_component(report):
    rows = list(csv.DictReader(io.StringIO(rp.render_csv(report))))
    assert tuple(rows[0]) == rp.CSV_COLUMNS
    by_host = {}
    for r in rows:
        by_host.setdefault(r["host"], []).append((r["component"], r["version"], r["source"], r["active"]))
    assert by_host["gpu01"] == [
        ("gpu", "9.0", "Hopper", ""),
        ("driver", "580.159.04", "host", "loaded"),
        ("cuda", "13.0.2", "deb", "default"),
        ("cudnn", "9.14.0", "deb", "resolved"),
        ("cudnn", "9.19.0", "pip", ""),
    ]
    assert by_host["gpu99"] == [("host", "", "", "")]
    assert [r for r in rows if r["host"] == "gpu99"][0]["status"] == "unreachable"
    assert [r for r in rows if r["host"] == "old01"][0]["status"] == "failed"
    assert ("gpu", "", "", "") in by_host["login01"]
    assert ("driver", "none", "none", "") in by_host["login01"]
    drift_rows = [r for r in rows if rp.drifted(r)]
    assert {(r["host"], r["component"]) for r in drift_rows} == {("gpu10", "driver"), ("gpu10", "cudnn")}
    # login01 has no baseline: nothing was compared, and its rows say so
    assert {r["drift"] for r in rows if r["host"] == "login01" and r["component"] in ("driver", "cuda")} == {
        "no baseline set"
    }
    assert {r["drift"] for r in rows if r["component"] == "host"} == {"unknown"}


def test_csv_missing_component_gets_a_row():
    recs = records()[:1]
    recs[0]["baseline"] = {"cudnn_versions": {12: "9.14"}}
    r = rp.build_report(recs, compat=NO_COMPAT)
    rows = list(csv.DictReader(io.StringIO(rp.render_csv(r))))
    (missing,) = [row for row in rows if row["name"] == "(expected)"]
    assert missing["component"] == "cudnn"
    assert missing["version"] == "missing"
    assert "cuDNN 9.14 for CUDA 12 expected, not installed" in missing["drift"]


# -- Markdown --------------------------------------------------------------------------------------------
def test_markdown(report):
    md = rp.render_markdown(report)
    assert md.startswith("# gpufleet audit\n")
    assert "- hosts: 5 (3 audited, 1 unreachable, 1 failed, 1 without GPU)" in md
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert len(table) == 2 + 5  # header, separator, one per host
    assert "| gpu99 | unreachable |" in md
    assert "| login01 | ok | none | none |" in md
    assert "9.14.0 deb/cu13*, 9.19.0 pip/cu13" in md
    assert "## Drift" in md
    assert "- **gpu10**: driver branch 580 expected, found 575.57.08" in md
    assert "## Findings" in md
    assert "`cudnn_header_library_mismatch`" in md


def test_markdown_escapes_pipes():
    f = facts("h200")
    f["gpus"][0]["name"] = "odd|name"
    md = rp.render_markdown(rp.build_report([{"name": "a", "status": "ok", "facts": f}], compat=NO_COMPAT))
    assert "odd\\|name" in md


# -- Prometheus ------------------------------------------------------------------------------------------
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)')


def parse_exposition(text):
    """A strict little parser of the text exposition format: {family: [(labels, value)]}."""
    assert text.endswith("\n")
    helps, types_, families = {}, {}, {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, doc = line[7:].partition(" ")
            assert name not in helps, f"HELP twice for {name}"
            helps[name] = doc
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert kind in ("gauge", "counter", "untyped", "summary", "histogram")
            assert name not in types_, f"TYPE twice for {name}"
            assert name not in families, f"TYPE after samples for {name}"
            types_[name] = kind
        else:
            assert not line.startswith("#") and line, line
            m = SAMPLE.match(line)
            assert m, f"bad sample line {line!r}"
            name, _, body, value = m.groups()
            assert name in types_ and name in helps, f"{name} without HELP/TYPE"
            labels = {}
            if body:
                pos = 0
                while pos < len(body):
                    lm = LABEL.match(body, pos)
                    assert lm, f"bad labels in {line!r}"
                    assert lm.group(1) not in labels
                    labels[lm.group(1)] = re.sub(
                        r"\\(.)", lambda x: {"n": "\n"}.get(x.group(1), x.group(1)), lm.group(2)
                    )
                    pos = lm.end()
            float(value)
            series = families.setdefault(name, [])
            assert labels not in [s for s, _ in series], f"duplicate series {line!r}"
            series.append((labels, float(value)))
    return families


def test_prometheus_metrics_parse(report):
    fam = parse_exposition(rp.render_prometheus(report, timestamp=1764468000))
    up = {s["host"]: v for s, v in fam["gpufleet_audit_host_up"]}
    assert up == {"gpu01": 1, "gpu10": 1, "gpu99": 0, "login01": 1, "old01": 0}
    cudnn = [s for s, _ in fam["gpufleet_cudnn_info"] if s["host"] == "gpu01"]
    assert {(s["version"], s["cuda_major"], s["source"], s["path"], s["resolved"]) for s in cudnn} == {
        ("9.14.0", "13", "deb", "/usr", "true"),
        ("9.19.0", "13", "pip", "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn", "false"),
    }
    drivers = {s["host"]: s["version"] for s, _ in fam["gpufleet_driver_info"]}
    assert drivers == {"gpu01": "580.159.04", "gpu10": "575.57.08", "login01": "none"}
    drift = {s["host"]: v for s, v in fam["gpufleet_drift"]}
    assert drift == {"gpu01": 0, "gpu10": 2}  # login01: no baseline set, no number of differences
    assert {s["host"]: v for s, v in fam["gpufleet_baseline"]} == {"gpu01": 1, "gpu10": 1, "login01": 0}
    assert len(fam["gpufleet_drift_info"]) == 2
    assert {s["host"]: v for s, v in fam["gpufleet_gpus"]} == {"gpu01": 1, "gpu10": 2, "login01": 0}
    assert fam["gpufleet_audit_timestamp_seconds"] == [({}, 1764468000.0)]


def test_prometheus_escapes_label_values():
    f = facts("h200")
    f["cudnn"][1]["path"] = '/weird "dir"\\with\nnewline'
    text = rp.render_prometheus(
        rp.build_report([{"name": "a", "status": "ok", "facts": f}], compat=NO_COMPAT)
    )
    fam = parse_exposition(text)
    assert '/weird "dir"\\with\nnewline' in {s["path"] for s, _ in fam["gpufleet_cudnn_info"]}


# -- HTML ------------------------------------------------------------------------------------------------
class _Collect(HTMLParser):
    VOID = {"meta", "input", "br", "img", "link", "rect"}

    def __init__(self):
        super().__init__()
        self.stack, self.tables, self.svgs, self.external, self.current = [], {}, 0, [], None
        self.row, self.cell, self.row_class = None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if key in a:
                self.external.append(a[key])
        if tag == "svg":
            self.svgs += 1
        if tag == "table":
            self.current = a.get("id")
            self.tables[self.current] = []
        if tag == "tr":
            self.row, self.row_class = [], a.get("class", "")
        if tag in ("td", "th"):
            self.cell = ""
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}> in {self.stack[-3:]}"
        self.stack.pop()
        if tag in ("td", "th"):
            self.row.append(self.cell)
            self.cell = None
        if tag == "tr":
            self.tables[self.current].append((self.row_class, self.row))

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_html_self_contained_with_rows_and_charts(report):
    page = render_html(report)
    p = _Collect()
    p.feed(page)
    p.close()
    assert p.stack == []
    assert p.external == []  # no external asset
    assert p.svgs == 4
    assert "<script>" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    comp = p.tables["components"]
    assert comp[0][1] == list(rp.CSV_COLUMNS)
    rows = comp[1:]
    assert len(rows) == len(rp.component_rows(report))
    assert rows[4][1][:5] == ["gpu01", "ok", "cudnn", "nvidia-cudnn-cu13", "9.19.0"]
    drift_rows = [(r[0], r[2]) for cls, r in rows if cls == "drift"]
    assert drift_rows == [("gpu10", "driver"), ("gpu10", "cudnn")]
    assert any(cls == "down" and r[0] == "gpu99" for cls, r in rows)
    hosts = p.tables["hosts"][1:]
    assert [r[0] for _, r in hosts] == ["gpu01", "gpu10", "gpu99", "login01", "old01"]
    assert hosts[1][0] == "drift"
    assert 'id="components-filter"' in page and 'id="hosts-filter"' in page
    assert "Intl.Collator" in page  # sortable


def test_html_escapes():
    f = facts("h200")
    f["gpus"][0]["name"] = "<script>alert(1)</script>"
    page = render_html(rp.build_report([{"name": "a&b", "status": "ok", "facts": f}], compat=NO_COMPAT))
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)" in page
    assert "a&amp;b" in page


def test_svg_chart_bars():
    svg = svg_bar_chart("cuDNN", {"9.14.0": 3, "9.19.0": 1}, "c")
    assert svg.count("<rect") == 2
    assert "9.14.0: 3" in svg
    assert "none" in svg_bar_chart("empty", {}, "e")


# -- summary table and files -----------------------------------------------------------------------------
def test_summary_lines(report):
    lines = rp.summary_lines(report)
    assert lines[0].split()[:2] == ["host", "status"]
    assert len(lines) == 2 + 5 + 1
    assert any(line.startswith("gpu99") and "unreachable" in line for line in lines)
    (login,) = [re.split(r"\s{2,}", line) for line in lines if line.startswith("login01")]
    assert login[1:4] == ["ok", "none", "none"]
    assert lines[-1].startswith("5 host(s): 3 audited, 1 unreachable, 1 failed, 1 without GPU")
    assert rp.drift_lines(report)[0].startswith("gpu10: ")


def test_write_reports_atomic(tmp_path, report):
    paths = rp.write_reports(report, str(tmp_path), timestamp=1)
    assert sorted(os.listdir(tmp_path)) == sorted(rp.FILE_NAMES.values())
    assert json.loads(Path(paths["json"]).read_text())["schema_version"] == 1
    assert Path(paths["prom"]).read_text().startswith("# HELP gpufleet_audit_host_up")


def test_write_atomic_leaves_no_temp_on_error(tmp_path):
    class Boom:
        def __str__(self):
            raise RuntimeError("x")

    with pytest.raises(TypeError):
        rp.write_atomic(str(tmp_path / "f"), Boom())
    assert os.listdir(tmp_path) == []


def test_check_report_dir(tmp_path):
    assert rp.check_report_dir(str(tmp_path / "new" / "dir")) is None
    assert (tmp_path / "new" / "dir").is_dir()
    afile = tmp_path / "file"
    afile.write_text("")
    assert "is not a directory" in rp.check_report_dir(str(afile))
    assert "cannot create" in rp.check_report_dir(str(afile / "sub"))
    assert rp.check_report_dir(str(tmp_path / "nope" / "deeper"), create=False) is None
    assert not (tmp_path / "nope").exists()
    assert "is not a directory" in rp.check_report_dir(str(afile / "sub"), create=False)
    assert "empty" in rp.check_report_dir("")


def test_render_unknown_format(report):
    with pytest.raises(ValueError, match="format"):
        rp.render(report, "xml")


def test_several_system_copies_of_one_soname():
    f = facts("oldtrain")
    r = rp.build_report([{"name": "a", "status": "ok", "facts": f}], compat=NO_COMPAT)
    (w,) = [x for x in r["hosts"][0]["findings"] if x["code"] == "cudnn_several_system_copies"]
    assert w["severity"] == "warning"
    assert w["message"].startswith("2 system cuDNN copies provide libcudnn.so.9 ")
    assert "the loader picks cuDNN 9.10.2 (tarball at /usr/local/cuda-12.8)" in w["message"]


def test_real_compat_rules_are_found():
    # plan.compat is imported, not looked up by name: the default rules are its check()
    assert rf.kb_findings.__defaults__ == (rf.plan_compat.check,)
    out = rf.compat_findings(rp.normalize_host("a", "ok", facts("h200")))
    assert not [f for f in out if f["code"].startswith("compat_rules_")], out


@pytest.mark.parametrize(
    ("result", "status", "message"),
    [
        ({"unreachable": True, "msg": "ssh: no route"}, "unreachable", "ssh: no route"),
        ({"failed": True, "msg": "Python too old"}, "failed", "Python too old"),
        (
            {
                "failed": True,
                "msg": "Module result deserialization failed: No start of json char found",
                "module_stderr": "/bin/sh: 1: /usr/bin/python3: not found\n",
            },
            "failed",
            "Module result deserialization failed: No start of json char found; module stderr: /bin/sh: 1: "
            "/usr/bin/python3: not found",
        ),
        ({"failed": True}, "failed", "nvidia_facts failed"),
        ({"changed": False}, "failed", "nvidia_facts returned no ansible_facts.nvidia"),
        (None, "failed", "no audit result (the host left the play before nvidia_facts)"),
        ({"status": "unreachable", "message": "gone"}, "unreachable", "gone"),
    ],
)
def test_record_from_result_not_ok(result, status, message):
    rec = rp.record_from_result("h", result, {"driver_branch": "580"})
    assert (rec["name"], rec["status"], rec["message"], rec["facts"]) == ("h", status, message, None)
    assert rec["baseline"] == {"driver_branch": "580"}


def test_record_from_result_ok():
    rec = rp.record_from_result("h", {"changed": False, "ansible_facts": {"nvidia": facts("h200")}})
    assert rec["status"] == "ok"
    assert rec["facts"]["gpu_count"] == 1
    assert rp.build_report([rec], compat=NO_COMPAT)["hosts"][0]["status"] == "ok"


# -- findings lists: errors, then warnings, then info; each by number of hosts ------------------------------
def fleet_of_findings():
    def fake(entry):
        out = [("warning", "W on every host")]
        if entry["name"] in ("a", "b"):
            out.append(("error", "E on two hosts"))
        if entry["name"] == "a":
            out.append(("error", "E on one host"))
        return out

    return rp.build_report(
        [{"name": n, "status": "ok", "facts": facts("h200")} for n in ("a", "b", "c")], compat=fake
    )


SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def assert_ordered(listed):
    """[(severity, hosts)] in the order shown: by severity, then most hosts first."""
    assert listed == sorted(listed, key=lambda x: (SEVERITY_RANK[x[0]], -x[1])), listed
    assert [SEVERITY_RANK[s] for s, _n in listed] == sorted(SEVERITY_RANK[s] for s, _n in listed)


def test_markdown_findings_by_severity_then_host_count():
    report = fleet_of_findings()
    md = rp.render_markdown(report).split("## Findings", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^- (error|warning|info) `[^`]+` on (\d+) host\(s\) \(([^)]*)\): (.*)$", md, re.M)
    assert_ordered([(sev, int(n)) for sev, n, _hosts, _msg in items])
    messages = [msg for _sev, _n, _hosts, msg in items]
    assert messages.index("E on two hosts") < messages.index("E on one host")
    assert messages.index("E on one host") < messages.index("W on every host")
    assert ("error", "2", "a, b", "E on two hosts") in items  # each finding once, with its hosts


def test_html_findings_by_severity_then_host_count():
    page = render_html(fleet_of_findings())
    ul = page.split('<ul id="findings">', 1)[1].split("</ul>", 1)[0]
    item = r'<li class="(\w+)"><b>(\d+) host\(s\)</b> \w+ <code>[^<]*</code>: ([^<]*) <small>'
    items = re.findall(item, ul)
    assert_ordered([(sev, int(n)) for sev, n, _msg in items])
    messages = [msg for _sev, _n, msg in items]
    assert messages.index("E on two hosts") < messages.index("E on one host")
    assert messages.index("E on one host") < messages.index("W on every host")
    assert {sev for sev, _n, _msg in items} == {"error", "warning", "info"}


# -- no baseline set: said as such, never "drift: none" ----------------------------------------------------
def test_no_baseline_set_is_said_in_every_format():
    recs = [{"name": "gpu01", "status": "ok", "facts": facts("h200")}, records()[3]]
    report = rp.build_report(recs, compat=NO_COMPAT)
    h = host(report, "gpu01")
    assert (h["baseline"], h["drift"], h["drift_status"]) == (None, [], "no_baseline")  # the JSON's words
    assert report["summary"]["no_baseline"] == 1
    overview = "no baseline set on any audited host (gpufleet_baseline): nothing compared"
    md = rp.render_markdown(report)
    assert f"- drift: {overview}" in md
    assert "| gpu01 | ok |" in md and "| no baseline set |" in md
    page = render_html(report)
    drift = page.split("<h2>Drift</h2>", 1)[1].split("</ul>", 1)[0]
    assert overview in drift and "<li>none</li>" not in drift
    p = _Collect()
    p.feed(page)
    assert [r[6] for _cls, r in p.tables["hosts"][1:]] == ["no baseline set", "unknown"]
    assert not [r for cls, r in p.tables["components"][1:] if cls == "drift"]
    rows = list(csv.DictReader(io.StringIO(rp.render_csv(report))))
    assert {r["drift"] for r in rows if r["component"] in ("driver", "cuda", "cudnn")} == {"no baseline set"}
    fam = parse_exposition(rp.render_prometheus(report))
    assert "gpufleet_drift" not in fam  # no number of differences where nothing was compared
    assert fam["gpufleet_baseline"] == [({"host": "gpu01"}, 0.0)]
    lines = rp.summary_lines(report)
    assert "no baseline set" in [line for line in lines if line.startswith("gpu01")][0]
    assert "drift: no baseline set on any audited host" in lines[-1]


def test_the_drift_overview_names_the_hosts_without_a_baseline():
    report = rp.build_report(records(), compat=NO_COMPAT)
    assert rp.drift_overview(report) == (
        "2 item(s) on 1 of the 2 host(s) with a baseline; no baseline set on 1 host(s): login01"
    )
    assert rp.drift_overview(report, names=False).endswith("; no baseline set on 1 host(s)")


# -- a node's own file for node_exporter's textfile collector (gpufleet_audit_prometheus_textfile_dir) -----
def test_a_nodes_textfile_holds_exactly_its_lines_of_the_fleet_file(report):
    fleet_text = rp.render_prometheus(report, timestamp=1764468000)
    fleet = parse_exposition(fleet_text)
    dirs = {
        "gpu01": "/var/lib/prometheus/node-exporter",
        "gpu10": "/srv/textfile",
        "gpu99": "/x",
        "old01": "/x",
    }
    files = rp.host_textfiles(report, dirs, timestamp=1764468000)
    assert sorted(files) == ["gpu01", "gpu10"]  # audited hosts that set it; not login01, gpu99, old01
    for name, file in files.items():
        assert file["directory"] == dirs[name]
        node = parse_exposition(file["content"])
        for family, samples in fleet.items():
            mine = [(labels, v) for labels, v in samples if labels.get("host", name) == name]
            assert node.get(family, []) == mine, (name, family)
        helps = [line for line in file["content"].splitlines() if line.startswith("#")]
        assert set(helps) <= set(fleet_text.splitlines())  # the same HELP and TYPE lines
    assert fleet["gpufleet_audit_timestamp_seconds"] == [({}, 1764468000.0)]
