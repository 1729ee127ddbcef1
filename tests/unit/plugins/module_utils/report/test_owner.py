"""The owner of every CUDA toolkit and cuDNN copy in the fleet report, in every format.

Each case is one toolkit or copy of one owner kind, as facts with the ``owner`` key (probe/owners.py) and as
facts written by older probes (no ``owner``: the report falls back to source/package/gpufleet_marker).
"""

import copy
import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build as rp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.html import render_html

DATA = Path(__file__).resolve().parents[4] / "data" / "audit"
OLD_COLUMNS = (
    "host",
    "status",
    "component",
    "name",
    "version",
    "cuda_major",
    "source",
    "path",
    "active",
    "detail",
    "drift",
)
KINDS = {"gpufleet", "package", "runfile", "conda", "pip", "tarball", "unknown"}


def no_compat(entry):
    return []


def toolkit(path, source, package=None, *, marker=False, reason=None, version="13.0.2"):
    return {
        "path": path,
        "version": version,
        "major_minor": ".".join(version.split(".")[:2]),
        "version_from": "version.json",
        "source": source,
        "package": package,
        "nvcc": True,
        "gpufleet_marker": marker,
        "reasons": {"source": reason} if reason else {},
    }


def cudnn_copy(path, source, package=None, *, python_env=None, reason=None, version="9.14.0", cuda_major=13):
    return {
        "path": path,
        "source": source,
        "version": version,
        "major": 9,
        "header": f"{path}/include/cudnn_version.h",
        "header_version": version,
        "library": f"{path}/lib/libcudnn.so.{version}",
        "library_version": version,
        "cuda_major": cuda_major,
        "cuda_major_from": source,
        "package": package,
        "held": False,
        "python_env": python_env,
        "mismatch": False,
        "resolved": False,
        "reasons": {"source": reason} if reason else {},
    }


def deb(name, version, manager="deb"):
    return {"name": name, "version": version, "held": False, "manager": manager}


UNKNOWN_TOOLKIT = "no cuda package for 13.0, no runfile uninstaller, no version.json"
UNKNOWN_COPY = "a lone library not owned by any package, wheel or conda env"
PROBE_UNKNOWN = "unknown (no package, no runfile uninstaller, no gpufleet marker)"
GPUFLEET = {"kind": "gpufleet", "name": None, "version": None, "words": "gpufleet"}

# id: (component, facts item without owner, owner the probe reports, expected: (kind, words) without the
# owner key, (kind, words) with it, name column with it)
CASES = {
    "gpufleet-redist-toolkit": (
        "cuda",
        toolkit("/usr/local/cuda-13.0", "unknown", marker=True, reason=UNKNOWN_TOOLKIT),
        {"kind": "gpufleet", "name": "/usr/local/cuda-13.0", "version": None, "words": "gpufleet"},
        ("gpufleet", "gpufleet"),
        ("gpufleet", "gpufleet"),
        "cuda",
    ),
    "deb-toolkit": (
        "cuda",
        toolkit("/usr/local/cuda-13.0", "deb", deb("cuda-toolkit-13-0-config-common", "13.0.96-1")),
        {
            "kind": "package",
            "name": "cuda-nvcc-13-0",
            "version": "13.0.88-1",
            "words": "package cuda-nvcc-13-0 13.0.88-1",
        },
        ("package", "package cuda-toolkit-13-0-config-common 13.0.96-1"),
        ("package", "package cuda-nvcc-13-0 13.0.88-1"),
        "cuda-nvcc-13-0",
    ),
    "rpm-toolkit": (
        "cuda",
        toolkit("/usr/local/cuda-12.8", "rpm", deb("cuda-toolkit-12-8", "12.8.1-1", "rpm"), version="12.8.1"),
        {"kind": "package", "name": "cuda-nvcc-12-8", "version": "12.8.93-1", "words": None},
        ("package", "package cuda-toolkit-12-8 12.8.1-1"),
        ("package", "package cuda-nvcc-12-8 12.8.93-1"),
        "cuda-nvcc-12-8",
    ),
    "runfile-toolkit": (
        "cuda",
        toolkit("/usr/local/cuda-12.8", "runfile", version="12.8.1"),
        {
            "kind": "runfile",
            "name": "/usr/local/cuda-12.8",
            "version": None,
            "words": "NVIDIA's runfile installer (bin/cuda-uninstaller)",
        },
        ("runfile", "NVIDIA's runfile installer (bin/cuda-uninstaller)"),
        ("runfile", "NVIDIA's runfile installer (bin/cuda-uninstaller)"),
        "cuda",
    ),
    "unknown-toolkit": (
        "cuda",
        toolkit("/opt/nvidia/cuda", "unknown", reason=UNKNOWN_TOOLKIT),
        {"kind": "unknown", "name": None, "version": None, "words": PROBE_UNKNOWN},
        ("unknown", f"unknown ({UNKNOWN_TOOLKIT})"),
        ("unknown", PROBE_UNKNOWN),
        "cuda",
    ),
    "unmarked-redist-toolkit": (
        "cuda",
        toolkit("/usr/local/cuda-12.8", "redist", version="12.8.1"),
        {"kind": "unknown", "name": None, "version": None, "words": PROBE_UNKNOWN},
        ("unknown", "unknown (a version.json, but no package, runfile uninstaller or gpufleet marker)"),
        ("unknown", PROBE_UNKNOWN),
        "cuda",
    ),
    "deb-cudnn": (
        "cudnn",
        cudnn_copy("/usr", "deb", deb("libcudnn9-cuda-13", "9.14.0.64-1")),
        {
            "kind": "package",
            "name": "libcudnn9-cuda-13",
            "version": "9.14.0.64-1",
            "words": "package libcudnn9-cuda-13 9.14.0.64-1",
        },
        ("package", "package libcudnn9-cuda-13 9.14.0.64-1"),
        ("package", "package libcudnn9-cuda-13 9.14.0.64-1"),
        "libcudnn9-cuda-13",
    ),
    "conda-cudnn": (
        "cudnn",
        cudnn_copy(
            "/opt/conda/envs/train",
            "conda",
            {"name": "cudnn", "version": "9.1.0.70", "build": "cuda12_0", "held": False, "manager": "conda"},
            python_env="/opt/conda/envs/train",
            version="9.1.0",
            cuda_major=12,
        ),
        {
            "kind": "conda",
            "name": "cudnn",
            "version": "9.1.0.70",
            "words": "conda cudnn 9.1.0.70 in /opt/conda/envs/train",
        },
        ("conda", "conda cudnn 9.1.0.70 in /opt/conda/envs/train"),
        ("conda", "conda cudnn 9.1.0.70 in /opt/conda/envs/train"),
        "cudnn",
    ),
    "pip-cudnn": (
        "cudnn",
        cudnn_copy(
            "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn",
            "pip",
            deb("nvidia-cudnn-cu13", "9.19.0.56", "pip"),
            python_env="/opt/torch/.venv",
            version="9.19.0",
        ),
        {
            "kind": "pip",
            "name": "nvidia-cudnn-cu13",
            "version": "9.19.0.56",
            "words": "pip nvidia-cudnn-cu13 9.19.0.56 in /opt/torch/.venv",
        },
        ("pip", "pip nvidia-cudnn-cu13 9.19.0.56 in /opt/torch/.venv"),
        ("pip", "pip nvidia-cudnn-cu13 9.19.0.56 in /opt/torch/.venv"),
        "nvidia-cudnn-cu13",
    ),
    "tarball-cudnn": (
        "cudnn",
        cudnn_copy("/usr/local/cuda-12.8", "tarball", version="9.10.2", cuda_major=12),
        {
            "kind": "tarball",
            "name": "/usr/local/cuda-12.8",
            "version": None,
            "words": "a cuDNN tarball unpacked in /usr/local/cuda-12.8 (no owner)",
        },
        ("tarball", "a cuDNN tarball unpacked in /usr/local/cuda-12.8 (no owner)"),
        ("tarball", "a cuDNN tarball unpacked in /usr/local/cuda-12.8 (no owner)"),
        "cudnn",
    ),
    "gpufleet-cudnn": (
        "cudnn",
        cudnn_copy("/opt/nvidia/cudnn/9.28.0.42-cuda13", "tarball", version="9.28.0"),
        dict(GPUFLEET, name="/opt/nvidia/cudnn/9.28.0.42-cuda13"),
        ("tarball", "a cuDNN tarball unpacked in /opt/nvidia/cudnn/9.28.0.42-cuda13 (no owner)"),
        ("gpufleet", "gpufleet"),
        "cudnn",
    ),
    "unknown-cudnn": (
        "cudnn",
        cudnn_copy("/srv/lib", "unknown", reason=UNKNOWN_COPY),
        {"kind": "unknown", "name": None, "version": None, "words": "unknown (a lone library nobody owns)"},
        ("unknown", f"unknown ({UNKNOWN_COPY})"),
        ("unknown", "unknown (a lone library nobody owns)"),
        "cudnn",
    ),
}
WITH_OWNER = (False, True)


def host_facts(toolkits=(), copies=()):
    """The H200's facts with these toolkits and cuDNN copies instead of its own."""
    facts = json.loads((DATA / "h200.json").read_text())
    facts["cuda"]["toolkits"] = [copy.deepcopy(t) for t in toolkits]
    facts["cuda"]["default"] = None
    facts["cudnn"] = [copy.deepcopy(c) for c in copies]
    facts["cudnn_resolved"] = []
    return facts


def case_facts(case, with_owner):
    component, item, owner, *_ = CASES[case]
    item = copy.deepcopy(item)
    item.pop("owner", None)
    if with_owner:
        item["owner"] = copy.deepcopy(owner)
    return host_facts(toolkits=[item]) if component == "cuda" else host_facts(copies=[item])


def expected(case, with_owner):
    component, item, _owner, old, new, name = CASES[case]
    kind, words = new if with_owner else old
    # without the owner key the row's name is the facts' package, as before
    row_name = name if with_owner else ((item.get("package") or {}).get("name") or component)
    return component, item["path"], kind, words, row_name


def report_of(facts):
    return rp.build_report([{"name": "h", "status": "ok", "facts": facts}], compat=no_compat)


def component_row(report, component):
    rows = list(csv.DictReader(io.StringIO(rp.render_csv(report))))
    (row,) = [r for r in rows if r["component"] == component]
    return row


def prom_labels(text, metric):
    out = []
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            body = line[len(metric) + 1 : line.rindex("}")]
            out.append(dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', body)))
    return out


class _Table(HTMLParser):
    """The cells of the HTML components table, by column class."""

    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cls, self.inside = [], None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.inside = a.get("id") == "components"
        if self.inside and tag == "tr":
            self.row = {}
        if self.inside and tag == "td":
            self.cls = a.get("class")
            self.row[self.cls] = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self.cls = None
        if tag == "tr" and self.row:
            self.rows.append(self.row)
            self.row = None
        if tag == "table":
            self.inside = False

    def handle_data(self, data):
        if self.cls:
            self.row[self.cls] += data


# -- every format ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("with_owner", WITH_OWNER, ids=("fallback", "owner"))
@pytest.mark.parametrize("case", CASES)
def test_json_has_the_owner(case, with_owner):
    component, path, kind, words, _name = expected(case, with_owner)
    h = report_of(case_facts(case, with_owner))["hosts"][0]
    (item,) = h["cuda"]["toolkits"] if component == "cuda" else h["cudnn"]
    assert item["path"] == path
    assert item["owner"]["kind"] == kind
    assert item["owner"]["words"] == words
    assert set(item["owner"]) == {"kind", "name", "version", "words"}
    back = json.loads(rp.render_json(report_of(case_facts(case, with_owner))))
    assert back["hosts"][0]["cuda" if component == "cuda" else "cudnn"] is not None


@pytest.mark.parametrize("with_owner", WITH_OWNER, ids=("fallback", "owner"))
@pytest.mark.parametrize("case", CASES)
def test_csv_row_has_owner_and_owner_kind(case, with_owner):
    component, path, kind, words, name = expected(case, with_owner)
    row = component_row(report_of(case_facts(case, with_owner)), component)
    assert (row["path"], row["owner_kind"], row["owner"]) == (path, kind, words)
    assert row["name"] == name
    assert row["source"] == CASES[case][1]["source"]  # the facts' source is kept as it was


@pytest.mark.parametrize("with_owner", WITH_OWNER, ids=("fallback", "owner"))
@pytest.mark.parametrize("case", CASES)
def test_html_components_table_has_the_owner(case, with_owner):
    component, path, kind, words, _name = expected(case, with_owner)
    table = _Table()
    table.feed(render_html(report_of(case_facts(case, with_owner))))
    (row,) = [r for r in table.rows if r.get("component") == component]
    assert (row["path"], row["owner_kind"], row["owner"]) == (path, kind, words)


@pytest.mark.parametrize("with_owner", WITH_OWNER, ids=("fallback", "owner"))
@pytest.mark.parametrize("case", CASES)
def test_markdown_lists_the_owner(case, with_owner):
    component, path, kind, words, _name = expected(case, with_owner)
    md = rp.render_markdown(report_of(case_facts(case, with_owner)))
    what = "CUDA" if component == "cuda" else "cuDNN"
    assert "\n## Owners\n" in md
    version = CASES[case][1]["version"]
    assert f"- **h** {what} {version} at {path}: {words} (owner_kind `{kind}`)" in md


@pytest.mark.parametrize("with_owner", WITH_OWNER, ids=("fallback", "owner"))
@pytest.mark.parametrize("case", CASES)
def test_prometheus_info_metric_has_owner_kind_only(case, with_owner):
    component, path, kind, words, _name = expected(case, with_owner)
    metric = "gpufleet_cuda_toolkit_info" if component == "cuda" else "gpufleet_cudnn_info"
    text = rp.render_prometheus(report_of(case_facts(case, with_owner)))
    (labels,) = prom_labels(text, metric)
    assert labels["path"] == path
    assert labels["owner_kind"] == kind
    # bounded cardinality: the kind is a label, the words (package versions, paths) are not
    assert words not in labels.values() or words == kind
    assert not {k for k in labels if k.startswith("owner")} - {"owner_kind"}


def test_prometheus_owner_kind_values_are_bounded():
    items = [copy.deepcopy(c[1]) for c in CASES.values()]
    for item, case in zip(items, CASES.values()):
        item["owner"] = dict(copy.deepcopy(case[2]), words=f"something new {id(item)}")
    odd = toolkit("/opt/cuda-x", "unknown")
    odd["owner"] = {"kind": "site module tree", "name": "x", "version": "1", "words": "modules"}
    facts = host_facts(
        toolkits=[i for i, c in zip(items, CASES.values()) if c[0] == "cuda"] + [odd],
        copies=[i for i, c in zip(items, CASES.values()) if c[0] == "cudnn"],
    )
    text = rp.render_prometheus(report_of(facts))
    kinds = {
        labels["owner_kind"]
        for metric in ("gpufleet_cuda_toolkit_info", "gpufleet_cudnn_info")
        for labels in prom_labels(text, metric)
    }
    assert kinds <= KINDS
    assert "unknown" in kinds  # the kind the report does not know


def test_columns_are_added_not_renamed():
    assert rp.CSV_COLUMNS[: len(OLD_COLUMNS)] == OLD_COLUMNS
    assert rp.CSV_COLUMNS[len(OLD_COLUMNS) :] == ("owner", "owner_kind")
    facts = host_facts(
        toolkits=[CASES["deb-toolkit"][1]], copies=[CASES["deb-cudnn"][1], CASES["pip-cudnn"][1]]
    )
    rows = list(csv.DictReader(io.StringIO(rp.render_csv(report_of(facts)))))
    other = [r for r in rows if r["component"] in ("gpu", "driver")]
    assert other
    assert all(r["owner"] == "" and r["owner_kind"] == "" for r in other)


# -- the fallback and the facts' owner, one function -----------------------------------------------------
def test_the_facts_owner_wins_over_the_old_fields():
    # the H200: the probe's representative package is cuda-toolkit-13-0-config-common; its owner is nvcc's
    item = copy.deepcopy(CASES["deb-toolkit"][1])
    item["owner"] = copy.deepcopy(CASES["deb-toolkit"][2])
    h = report_of(host_facts(toolkits=[item]))["hosts"][0]
    (t,) = h["cuda"]["toolkits"]
    assert t["owner"]["name"] == "cuda-nvcc-13-0"
    assert t["package"]["name"] == "cuda-toolkit-13-0-config-common"  # the facts' package, unchanged


def test_gpufleet_redist_toolkit_is_not_unknown_any_more():
    # what the issue saw: a tree gpufleet installed from redist was reported with source "unknown"
    h = report_of(case_facts("gpufleet-redist-toolkit", False))["hosts"][0]
    assert h["cuda"]["toolkits"][0]["source"] == "unknown"
    assert h["cuda"]["toolkits"][0]["owner"]["kind"] == "gpufleet"
    assert "owner_unknown" not in [f["code"] for f in h["findings"]]


@pytest.mark.parametrize("bad", ["package", None, [], 3])
def test_an_owner_that_is_not_a_mapping_falls_back(bad):
    item = copy.deepcopy(CASES["runfile-toolkit"][1])
    item["owner"] = bad
    h = report_of(host_facts(toolkits=[item]))["hosts"][0]
    assert h["cuda"]["toolkits"][0]["owner"]["kind"] == "runfile"


def test_an_owner_of_a_kind_the_report_does_not_know_is_unknown_with_its_words():
    item = copy.deepcopy(CASES["runfile-toolkit"][1])
    item["owner"] = {"kind": "absent", "name": None, "version": None, "words": "nothing (absent)"}
    (t,) = report_of(host_facts(toolkits=[item]))["hosts"][0]["cuda"]["toolkits"]
    assert t["owner"] == {"kind": "unknown", "name": None, "version": None, "words": "nothing (absent)"}
    item["owner"] = {"kind": "package", "name": "cuda-nvcc-12-8"}
    (t,) = report_of(host_facts(toolkits=[item]))["hosts"][0]["cuda"]["toolkits"]
    assert t["owner"]["words"] == "package cuda-nvcc-12-8"


def test_a_deb_item_without_its_package_still_says_package():
    item = copy.deepcopy(CASES["deb-cudnn"][1])
    item["package"] = None
    (c,) = report_of(host_facts(copies=[item]))["hosts"][0]["cudnn"]
    assert c["owner"]["kind"] == "package"
    assert c["owner"]["words"] == "a deb package (its name is not in the facts)"


def test_cudnn_copies_under_a_copies_key_are_read_too():
    facts = host_facts()
    facts["cudnn"] = {"copies": [copy.deepcopy(CASES["pip-cudnn"][1])]}
    (c,) = report_of(facts)["hosts"][0]["cudnn"]
    assert c["owner"]["kind"] == "pip"


def test_the_h200_fixture_names_an_owner_for_every_toolkit_and_copy():
    h = report_of(json.loads((DATA / "h200.json").read_text()))["hosts"][0]
    owners = [t["owner"] for t in h["cuda"]["toolkits"]] + [c["owner"] for c in h["cudnn"]]
    assert [o["kind"] for o in owners] == ["package", "package", "pip"]
    assert all(o["words"] for o in owners)


# -- finding owner_unknown -------------------------------------------------------------------------------
@pytest.mark.parametrize("with_owner", WITH_OWNER, ids=("fallback", "owner"))
@pytest.mark.parametrize("case", CASES)
def test_owner_unknown_finding_names_the_path(case, with_owner):
    _component, path, kind, words, _name = expected(case, with_owner)
    h = report_of(case_facts(case, with_owner))["hosts"][0]
    found = [f for f in h["findings"] if f["code"] == "owner_unknown"]
    if kind != "unknown":
        assert found == []
        return
    (f,) = found
    assert f["severity"] == "warning"
    why = words[len("unknown (") : -1]
    assert f" at {path} has no known owner: {why}; find out where it came from" in f["message"]
    assert f["message"].startswith(("CUDA ", "cuDNN "))
    # it says why once: no run of three words comes twice ("no package, runfile ... gpufleet marker")
    words = f["message"].replace(",", "").split()
    runs = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    assert [r for r in set(runs) if runs.count(r) > 1] == [], f["message"]
