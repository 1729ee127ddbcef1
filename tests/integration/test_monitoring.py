"""A real monitoring path and a real browser for the audit report (issue 13).

The H200's real facts (tests/data/audit/h200-broken-venv.json) and one synthetic second host (``gpu02``:
the same facts with two GPUs, system cuDNN 9.13.1 and the copied venv at /srv/jobs/.venv) go through
build_report and write_reports (``gpufleet.prom``, ``gpufleet-audit.html``), as the audit playbook does.

- Debian's prometheus-node-exporter serves the textfile directory (only the textfile collector), with a
  second file of DCGM-style series: ``DCGM_FI_DEV_GPU_UTIL`` with dcgm-exporter's labels (``gpu``, ``UUID``,
  ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``). The real dcgm-exporter needs a GPU and DCGM: it is
  not available here, so the sample file stands in for it. For the H200 its label values come from the real
  ``nvidia-smi --query-gpu`` capture (tests/data/h200-ubuntu2404), except the UUID: both captures replaced it
  with a placeholder, each a different one, so the facts' placeholder is used.
- Debian's prometheus scrapes that node exporter every second; PromQL through the HTTP API joins gpufleet's
  series with the DCGM series on DCGM's labels, as a dashboard would, and the answers are compared with the
  facts (not with the renderer's output).
- headless Chromium renders the HTML page (its script draws the tables from the page's JSON); the
  environments table is read from the dumped DOM and compared with the facts.

A missing tool skips the test, or fails it when CI=true: scripts/install_test_tools.sh installs them.
Run: .venv/bin/pytest tests/integration/test_monitoring.py
"""

from __future__ import annotations

import copy
import csv
import importlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests/data/audit/h200-broken-venv.json"
NVIDIA_SMI_CSV = ROOT / "tests/data/h200-ubuntu2404/nvidia-smi-query-gpu.csv"
INSTALL = "scripts/install_test_tools.sh"
TOOLS = {
    "prometheus": ("prometheus",),
    "node exporter": ("prometheus-node-exporter", "node_exporter"),
    "chromium": ("chromium", "chromium-browser"),
    "promtool": ("promtool",),
}
BASELINE = {"consumers_cudnn": {"/opt/torch/.venv": "9.19"}}
SECOND_VENV = "/srv/jobs/.venv"
SECOND_SYSTEM_CUDNN = "9.13.1"
# GPU utilisation of each DCGM sample series: distinct per GPU, so a wrong join shows in the value
UTIL = {("h200", "0"): 42, ("gpu02", "0"): 17, ("gpu02", "1"): 23}
TIMEOUT_S = 30

# What a dashboard asks: which cuDNN each environment on a GPU host loads, next to the host's GPUs (model,
# busiest GPU). An environment is not tied to one GPU: the join key is DCGM's Hostname, and the DCGM side is
# first reduced to one series per host (group_left needs one match; a host has several GPUs).
ENV_QUERY = (
    "max by (Hostname, environment, version) (gpufleet_consumer_cudnn_info)"
    " * on (Hostname) group_left (modelName)"
    " max by (Hostname, modelName) (DCGM_FI_DEV_GPU_UTIL)"
)
# Per GPU: every label DCGM sets on a GPU's series must match, value formats included (UUID, the NVML
# pci_bus_id 00000000:00:06.0, gpu index, model name).
GPU_QUERY = (
    "DCGM_FI_DEV_GPU_UTIL"
    " * on (Hostname, UUID, gpu, modelName, pci_bus_id) group_left (cudnn_version, driver_version)"
    " gpufleet_gpu_stack_info"
)


def need(tool):
    """The path of one of the tool's executables; skip (or fail with CI=true) when none is on PATH."""
    for name in TOOLS[tool]:
        path = shutil.which(name)
        if path:
            return path
    reason = f"{tool} not found ({' or '.join(TOOLS[tool])} on PATH): run {INSTALL}"
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
    return None


def report_build():
    for p in (ROOT / ".collections", ROOT):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    return importlib.import_module("ansible_collections.gpufleet.nvidia.plugins.module_utils.report.build")


# ---------------------------------------------------------------- the fleet: facts and what they say
def second_host(facts):
    """gpu02: the H200's facts with the copied venv moved, another system cuDNN and two GPUs."""
    (copied,) = [e["path"] for e in facts["consumers"]["environments"] if e["path"].startswith("/tmp/")]
    system = [c for c in facts["cudnn"] if c["resolved"]][0]["version"]
    text = json.dumps(facts).replace(copied, SECOND_VENV).replace(system, SECOND_SYSTEM_CUDNN)
    out = json.loads(text)
    gpus = [copy.deepcopy(out["gpus"][0]) for _ in range(2)]
    for i, g in enumerate(gpus):
        g.update(
            index=i, uuid=f"GPU-2222222{i}-0000-0000-0000-000000000000", pci_bus_id=f"0000:00:0{7 + i}.0"
        )
    out["gpus"], out["gpu_count"] = gpus, len(gpus)
    return out


@pytest.fixture(scope="module")
def fleet():
    h200 = json.loads(FACTS.read_text())
    return {"h200": h200, "gpu02": second_host(h200)}


def loads(fleet):
    """{(host, environment, consumer): (cuDNN version, via, mixed)} from the facts."""
    return {
        (host, env["path"], c["for"]): (c["version"], c["via"], c["mixed"])
        for host, facts in fleet.items()
        for env in facts["consumers"]["environments"]
        for c in env["cudnn"]
    }


def nvml_bus_id(bus_id):
    """NVML's (and DCGM's) form of a PCI address: an 8-digit domain, upper case."""
    domain, rest = bus_id.split(":", 1)
    return f"{int(domain, 16):08X}:{rest.upper()}"


def dcgm_gpus(fleet):
    """[labels] of the DCGM sample series, one per GPU, in dcgm-exporter's label names."""
    with NVIDIA_SMI_CSV.open() as f:
        (smi,) = [{k.strip(): v.strip() for k, v in row.items()} for row in csv.DictReader(f)]
    out = []
    for host, facts in fleet.items():
        for g in facts["gpus"]:
            real = host == "h200"  # the real capture; gpu02 is made up
            out.append(
                {
                    "gpu": smi["index"] if real else str(g["index"]),
                    "UUID": g["uuid"],
                    "pci_bus_id": smi["pci.bus_id"] if real else nvml_bus_id(g["pci_bus_id"]),
                    "device": f"nvidia{g['index']}",
                    "modelName": smi["name"] if real else g["name"],
                    "Hostname": host,
                    "DCGM_FI_DRIVER_VERSION": smi["driver_version"],
                }
            )
    return out


def dcgm_textfile(gpus):
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for g in gpus:
        labels = ",".join(f'{k}="{v}"' for k, v in g.items())
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {UTIL[g['Hostname'], g['gpu']]}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def reports(fleet, tmp_path_factory):
    """The textfile directory: gpufleet.prom, gpufleet-audit.html (as the playbook writes them), dcgm.prom."""
    rp = report_build()
    records = [{"name": n, "status": "ok", "facts": f, "baseline": BASELINE} for n, f in fleet.items()]
    report = rp.build_report(records, generated_at="2026-12-01T15:00:00Z", use_compat=False)
    directory = tmp_path_factory.mktemp("textfile")
    paths = rp.write_reports(report, str(directory), formats=("prom", "html"), timestamp=1764601200)
    (directory / "dcgm.prom").write_text(dcgm_textfile(dcgm_gpus(fleet)))
    return {"dir": directory, "html": Path(paths["html"])}


# ---------------------------------------------------------------- processes
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def http_ok(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status == 200


def poll(check, what, proc, log):
    """Call check() until it returns something true; fail with the process's log after TIMEOUT_S."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what}: the process exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            got = check()
        except OSError:  # connection refused / reset while it starts
            got = None
        if got:
            return got
        time.sleep(0.1)
    pytest.fail(f"{what}: not within {TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
    return None


class Process:
    """A child process in its own session; stop() ends it (SIGTERM, then SIGKILL)."""

    def __init__(self, args, log):
        self.log = log
        with log.open("w") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def servers():
    """Both servers' executables, looked up before either starts."""
    return {"node exporter": need("node exporter"), "prometheus": need("prometheus")}


@pytest.fixture(scope="module")
def node_exporter(servers, reports, tmp_path_factory):
    exe = servers["node exporter"]
    port, log = free_port(), tmp_path_factory.mktemp("node-exporter") / "log"
    args = [
        exe,
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={reports['dir']}",
    ]
    p = Process(args, log)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        poll(lambda: http_ok(url), "node exporter", p.proc, log)
        yield f"127.0.0.1:{port}"
    finally:
        p.stop()


@pytest.fixture(scope="module")
def prometheus(servers, node_exporter, tmp_path_factory):
    exe = servers["prometheus"]
    work = tmp_path_factory.mktemp("prometheus")
    config = work / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: node\n    static_configs: [{{targets: ['{node_exporter}']}}]\n"
    )
    port = free_port()
    args = [
        exe,
        f"--config.file={config}",
        f"--storage.tsdb.path={work / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    p = Process(args, work / "log")
    try:
        api = f"http://127.0.0.1:{port}/api/v1"

        def target_up():
            active = get_json(f"{api}/targets")["data"]["activeTargets"]
            return [t for t in active if t["health"] == "up" and t["labels"]["instance"] == node_exporter]

        poll(target_up, "prometheus: node exporter target up", p.proc, p.log)
        yield api
    finally:
        p.stop()


def query(api, promql):
    """The instant vector of a PromQL query: [(labels without __name__/job/instance, value)]."""
    got = get_json(f"{api}/query?" + urllib.parse.urlencode({"query": promql}))
    assert got["status"] == "success", got
    out = []
    for r in got["data"]["result"]:
        labels = {k: v for k, v in r["metric"].items() if k not in ("__name__", "job", "instance")}
        out.append((labels, float(r["value"][1])))
    return out


# ---------------------------------------------------------------- Prometheus
def test_node_exporter_reads_both_textfiles_without_error(prometheus):
    errors = query(prometheus, "node_textfile_scrape_error")
    assert errors == [({}, 0.0)]
    files = {
        labels["file"].rsplit("/", 1)[-1] for labels, _ in query(prometheus, "node_textfile_mtime_seconds")
    }
    assert files == {"gpufleet.prom", "dcgm.prom"}


def test_cudnn_per_environment_joins_dcgm_on_hostname(prometheus, fleet):
    got = query(prometheus, ENV_QUERY)
    models = {g["Hostname"]: g["modelName"] for g in dcgm_gpus(fleet)}
    busiest = {host: max(v for (h, _), v in UTIL.items() if h == host) for host in fleet}
    expected = {
        (host, env, version, models[host], float(busiest[host]))
        for (host, env, _), (version, _, _) in loads(fleet).items()
    }
    assert {
        (lb["Hostname"], lb["environment"], lb["version"], lb["modelName"], v) for lb, v in got
    } == expected
    # the facts' own words: the H200's venv loads its wheel's 9.19.0, the system the deb's 9.14.0
    pairs = {(lb["Hostname"], lb["environment"], lb["version"]) for lb, _ in got}
    assert {("h200", "/opt/torch/.venv", "9.19.0"), ("h200", "/", "9.14.0")} <= pairs
    assert {("gpu02", SECOND_VENV, "9.19.0"), ("gpu02", "/", SECOND_SYSTEM_CUDNN)} <= pairs


def test_gpu_stack_joins_dcgm_on_every_dcgm_label(prometheus, fleet):
    got = query(prometheus, GPU_QUERY)
    expected = set()
    for g in dcgm_gpus(fleet):
        facts = fleet[g["Hostname"]]
        system = [c for c in facts["cudnn"] if c["resolved"]][0]["version"]
        expected.add(
            (g["Hostname"], g["UUID"], system, facts["driver"]["version"], UTIL[g["Hostname"], g["gpu"]])
        )
    rows = {(lb["Hostname"], lb["UUID"], lb["cudnn_version"], lb["driver_version"], v) for lb, v in got}
    assert rows == expected
    assert len(got) == 3  # every GPU of both hosts, once


# ---------------------------------------------------------------- Chromium
class Tables(HTMLParser):
    """The <tbody> rows of every <table id=...>: {id: [{td class: text}]}; <body>'s attributes."""

    def __init__(self):
        super().__init__()
        self.tables, self.body, self._table, self._row, self._cell = {}, {}, None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("id", ""), [])
        elif tag == "tr" and self._table is not None:
            self._row = {}
        elif tag == "td" and self._row is not None:
            self._cell = a.get("class", "")
            self._row[self._cell] = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._row[self._cell] += data

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row:  # header rows have <th> only
                self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None


def parse(html):
    t = Tables()
    t.feed(html)
    return t


def dump_dom(page, tmp_path):
    exe = need("chromium")
    args = [
        exe,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--dump-dom",
        page.as_uri(),
    ]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return parse(r.stdout)


def assert_environments(dom, fleet):
    """The environments table as the browser shows it holds exactly what the facts say each program loads."""
    assert dom.body.get("data-ready-ms"), "the page's script did not finish"
    rows = dom.tables["environments"]
    shown = {(r["host"], r["environment"], r["consumer"]): r for r in rows if r["cudnn"]}
    facts = loads(fleet)
    assert set(shown) == set(facts)
    for key, (version, via, mixed) in facts.items():
        r = shown[key]
        assert (r["cudnn"], r["via"]) == (version, via), key
        assert ("mixed sub-libraries" in r["state"]) == mixed, (key, r["state"])
    frameworks = {
        (host, env["path"], f["name"])
        for host, facts_ in fleet.items()
        for env in facts_["consumers"]["environments"]
        for f in env["frameworks"]
    }
    assert {
        (r["host"], r["environment"], r["consumer"]) for r in rows if r["framework_version"]
    } == frameworks


def test_chromium_renders_the_environments_table(reports, fleet, tmp_path):
    dom = dump_dom(reports["html"], tmp_path)
    assert_environments(dom, fleet)
    assert shown_mixed(dom) == {("h200", "/tmp/"), ("gpu02", SECOND_VENV)}


def shown_mixed(dom):
    """(host, environment or its /tmp/ prefix) of the rows the page marks as mixed sub-libraries."""
    return {
        (r["host"], "/tmp/" if r["environment"].startswith("/tmp/") else r["environment"])
        for r in dom.tables["environments"]
        if "mixed sub-libraries" in r["state"]
    }


def test_the_script_draws_the_table_from_the_page_json(reports, fleet, tmp_path):
    """With the server-side rows taken out, every row the browser shows comes from the page's script."""
    html = reports["html"].read_text()
    bare, n = re.subn(r'(<table id="environments">.*?<tbody>).*?(</tbody>)', r"\1\2", html, flags=re.S)
    assert n == 1 and parse(bare).tables["environments"] == []
    page = tmp_path / "bare.html"
    page.write_text(bare)
    assert_environments(dump_dom(page, tmp_path), fleet)


# ---------------------------------------------------------------- a node's own file (textfile directory)
# promtool's lint on the DCGM-joinable series: their label names are dcgm-exporter's, on purpose
DCGM_LABELS_LINT = "gpufleet_gpu_stack_info label names should be written in 'snake_case' not 'camelCase'"


def install_textfile():
    report_build()  # the collection on sys.path
    return importlib.import_module(
        "ansible_collections.gpufleet.nvidia.plugins.module_utils.install.textfile"
    )


@pytest.fixture(scope="module")
def node_file(fleet, tmp_path_factory):
    """The H200's own file, written as playbooks/audit.yml writes it on the host (nvidia_textfile's code)."""
    rp = report_build()
    records = [{"name": n, "status": "ok", "facts": f, "baseline": BASELINE} for n, f in fleet.items()]
    report = rp.build_report(records, generated_at="2026-12-01T15:00:00Z", use_compat=False)
    directory = tmp_path_factory.mktemp("node-textfile")
    (entry,) = rp.host_textfiles(report, {"h200": str(directory)}, timestamp=1764601200).values()
    install_textfile().put(entry["directory"], "gpufleet.prom", entry["content"])
    fleet_text = rp.render_prometheus(report, timestamp=1764601200)
    return {"dir": directory, "path": directory / "gpufleet.prom", "fleet": fleet_text}


def test_the_node_file_parses_with_promtool(node_file):
    proc = subprocess.run(
        [need("promtool"), "check", "metrics"],
        input=node_file["path"].read_text(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lint = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode in (0, 3), lint  # 1: a parse error; 3: lint findings only
    assert [line for line in lint if line != DCGM_LABELS_LINT] == []


def test_node_exporter_serves_the_node_file_with_the_fleet_files_lines(servers, node_file, tmp_path):
    port, log = free_port(), tmp_path / "log"
    args = [
        servers["node exporter"],
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={node_file['dir']}",
    ]
    p = Process(args, log)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        poll(lambda: http_ok(url), "node exporter", p.proc, log)
        with urllib.request.urlopen(url, timeout=5) as r:
            served = r.read().decode()
    finally:
        p.stop()
    assert "node_textfile_scrape_error 0" in served
    samples = {line for line in served.splitlines() if line.startswith("gpufleet_")}
    mine = {
        line
        for line in node_file["fleet"].splitlines()
        if line.startswith("gpufleet_") and ('host="h200"' in line or "{" not in line)
    }
    # node_exporter writes labels in name order: compare each sample's name, label set and value
    assert {canonical(line) for line in samples} == {canonical(line) for line in mine}


def canonical(line):
    """(name, sorted label pairs, value) of a sample line."""
    head, _, value = line.rpartition(" ")
    name, _, labels = head.partition("{")
    pairs = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels)
    return name, tuple(sorted(pairs)), float(value)


# ---------------------------------------------------------------- a missing tool
def test_a_missing_tool_fails_under_ci_and_skips_otherwise(monkeypatch):
    monkeypatch.setitem(TOOLS, "chromium", ("gpufleet-no-such-browser",))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=re.escape(INSTALL)):
        need("chromium")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=re.escape(INSTALL)):
        need("chromium")
