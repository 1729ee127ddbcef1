"""Sliced audits merged into one fleet report (module_utils/report/merge.py), and the report at fleet scale:
the remembered compatibility answers and the paged HTML page (module_utils/report/html.py)."""

import functools
import json
import re
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import build as rp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import findings as rf
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import html as rh
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import merge as rm

DATA = Path(__file__).resolve().parents[4] / "data" / "audit"
STAMP = "2026-12-01T00:00:00Z"
BASELINE = {"driver_branch": "580", "cuda_versions": ["13.0"], "cudnn_versions": {13: "9.14"}}
OLD_BASELINE = {"driver_branch": "570"}


def fleet(count):
    """``count`` hosts from the real H200's facts and the fixtures: a few stacks, baselines, down hosts."""
    h200 = (DATA / "h200.json").read_text()
    others = [(DATA / f"{n}.json").read_text() for n in ("nogpu", "oldtrain")]
    out = []
    for i in range(count):
        name = f"gpu{i:05d}"
        if i % 97 == 5:
            out.append({"name": name, "status": "unreachable", "message": "ssh: no route to host"})
            continue
        text = others[i % 2] if i % 13 == 0 else h200
        facts = json.loads(text)
        if i % 7 == 0 and facts.get("cudnn"):
            facts["cudnn"] = facts["cudnn"][:1]
        baseline = BASELINE if i % 3 else (OLD_BASELINE if i % 2 else None)
        out.append({"name": name, "status": "ok", "facts": facts, "baseline": baseline})
    return out


def sliced(records, count, **kwargs):
    """Slice reports of ``count`` consecutive shards, as audit.yml writes them per slice."""
    size = -(-len(records) // count)
    return [
        (
            rm.slice_file_name(k + 1, count),
            rm.slice_report(rp.build_report(records[k * size : (k + 1) * size], **kwargs), k + 1, count),
        )
        for k in range(count)
    ]


def inventory(records):
    return [r["name"] for r in records], {r["name"]: r.get("baseline") for r in records}


def test_ten_slices_of_1000_hosts_merge_into_the_10000_host_report():
    records = fleet(10_000)
    single = rp.build_report(records, generated_at=STAMP)
    names, baselines = inventory(records)
    merged = rm.merge_reports(
        sliced(records, 10, generated_at=STAMP), expected=names, baselines=baselines, generated_at=STAMP
    )
    note = merged.pop("merge")
    assert merged == single
    assert [s["hosts"] for s in note["slices"]] == [1000] * 10
    assert note["duplicates"] == {} and note["missing"] == [] and note["missing_slices"] == []
    assert note["not_in_inventory"] == []
    assert single["summary"]["hosts"] == 10_000 and single["summary"]["unreachable"] > 0


def test_merged_outputs_equal_the_single_run_in_every_format():
    records = fleet(240)
    single = rp.build_report(records, generated_at=STAMP)
    merged = rm.merge_reports(sliced(records, 7, generated_at=STAMP), expected=inventory(records)[0])
    merged.pop("merge")
    assert merged["generated_at"] == STAMP  # the newest slice's
    for fmt in rp.FORMATS:
        assert rp.render(merged, fmt, timestamp=0) == rp.render(single, fmt, timestamp=0), fmt


def test_hosts_in_two_slices_or_in_none_are_reported():
    records = fleet(30)
    slices = sliced(records[:20], 2, generated_at=STAMP)
    down = {"name": "gpu00001", "status": "unreachable", "message": "timeout"}
    slices[1][1]["hosts"].append(rp.build_report([down])["hosts"][0])  # gpu00001: ok in slice 1, down in 2
    merged = rm.merge_reports(slices, expected=inventory(records)[0] + ["spare01"])
    by_name = {h["name"]: h for h in merged["hosts"]}
    assert merged["merge"]["duplicates"] == {"gpu00001": [1, 2]}
    assert by_name["gpu00001"]["status"] == "ok"  # the audited entry wins
    assert merged["merge"]["missing"] == [r["name"] for r in records[20:]] + ["spare01"]
    assert by_name["spare01"]["status"] == "failed" and "in no slice report" in by_name["spare01"]["message"]
    assert merged["summary"]["hosts"] == 31 and merged["summary"]["failed"] >= 11
    lines = rm.merge_lines(merged)
    assert any("several slices" in line and "gpu00001 (slices 1, 2)" in line for line in lines)
    assert any(line.startswith("11 host(s) in no slice") for line in lines)


def test_missing_slice_numbers_and_hosts_outside_the_inventory_are_noted():
    records = fleet(30)
    slices = sliced(records, 3, generated_at=STAMP)
    merged = rm.merge_reports([slices[0], slices[2]], expected=[r["name"] for r in records[:10]])
    assert merged["merge"]["missing_slices"] == [2]
    assert merged["merge"]["not_in_inventory"] == [r["name"] for r in records[20:]]
    assert "slices missing: 2" in rm.merge_lines(merged)


def _one(source="a.json", **changes):
    report = rm.slice_report(rp.build_report(fleet(3), generated_at=STAMP), 1, 2)
    report.update(changes)
    return source, report


@pytest.mark.parametrize(
    "changes,needle",
    [
        ({"schema_version": 2}, "schema_version 2, this gpufleet writes and merges 1"),
        ({"schema": "other"}, "not a gpufleet-audit report"),
        ({"slice": None}, "no slice number and count"),
    ],
)
def test_refuses_other_schemas_and_fleet_reports(changes, needle):
    with pytest.raises(rm.MergeError) as err:
        rm.merge_reports([_one(**changes)])
    assert needle in str(err.value) and "a.json" in str(err.value)


def test_refuses_slices_of_different_counts_and_the_same_slice_twice():
    with pytest.raises(rm.MergeError, match="slices of different runs"):
        rm.merge_reports([_one(), _one("b.json", slice={"number": 2, "count": 3})])
    with pytest.raises(rm.MergeError, match="slice 1 again"):
        rm.merge_reports([_one(), _one("b.json")])


def test_refuses_a_slice_made_against_another_baseline():
    records = fleet(20)
    slices = sliced(records, 2, generated_at=STAMP)
    names, baselines = inventory(records)
    changed = dict(baselines, gpu00014={"driver_branch": "590"})
    with pytest.raises(rm.MergeError) as err:
        rm.merge_reports(slices, expected=names, baselines=changed)
    assert "gpu00014 (slice 2:" in str(err.value) and "'driver_branch': 590" in str(err.value)
    assert rm.merge_reports(slices, expected=names, baselines=baselines)["summary"]["hosts"] == 20


def test_slice_numbers_and_file_names():
    assert rm.check_slice(3, 10) == (3, 10)
    assert rm.check_slice("1", "1") is None  # one slice: the fleet report itself
    with pytest.raises(rm.MergeError, match="from 1 to 10"):
        rm.check_slice(11, 10)
    with pytest.raises(rm.MergeError, match="whole numbers"):
        rm.check_slice("x", 10)
    assert rm.slice_file_name(3, 10) == "gpufleet-audit.slice-03-of-10.json"


def test_read_slices_from_a_directory(tmp_path):
    for source, report in sliced(fleet(12), 3, generated_at=STAMP):
        (tmp_path / source).write_text(rp.render_json(report))
    (tmp_path / "gpufleet-audit.json").write_text("{}")  # a fleet report beside them is not read
    read = rm.read_slices(str(tmp_path))
    assert [s for s, _ in read] == [rm.slice_file_name(n, 3) for n in (1, 2, 3)]
    assert rm.merge_reports(read)["summary"]["hosts"] == 12
    with pytest.raises(rm.MergeError, match="no slice reports"):
        rm.read_slices(str(tmp_path / "empty"))
    (tmp_path / rm.slice_file_name(1, 3)).write_text("{not json")
    with pytest.raises(rm.MergeError, match="not a readable slice report"):
        rm.read_slices(str(tmp_path))


# -- fleet scale: each distinct compatibility question asked once; the HTML page paged --------------------
def test_compat_questions_are_asked_once_per_distinct_stack():
    asked = []

    def check(**plan):
        asked.append(plan)
        return {"errors": [], "warnings": [f"seen {plan.get('cuda_version') or plan.get('cudnn_version')}"]}

    remembered = rp.remembered_check(check)
    for _ in range(50):
        assert remembered(gpus=[{"pci_device_id": "0x2335"}], cuda_version="13.0") == check(
            gpus=[{"pci_device_id": "0x2335"}], cuda_version="13.0"
        )
    assert len(asked) == 51  # once remembered, plus the direct calls of the comparison
    assert remembered(gpus=[], cuda_version="12.8")["warnings"] == ["seen 12.8"]


def test_remembered_answers_give_the_same_report():
    records = fleet(60)
    plain = rp.build_report(records, generated_at=STAMP, compat=functools.partial(rf.kb_findings))
    assert plain == rp.build_report(records, generated_at=STAMP)
    assert any(f["code"] == "compat" for h in plain["hosts"] for f in h["findings"])


def test_html_pages_hold_every_row_in_the_data_block():
    report = rp.build_report(fleet(1000), generated_at=STAMP)
    page = rh.render_html(report)
    start = page.index('id="gpufleet-data">') + len('id="gpufleet-data">')
    data = json.loads(page[start : page.index("</script>", start)])
    components = rh.decode_table(data, "components")
    expected = [[str(r[c]) for c in rp.CSV_COLUMNS] for r in rp.component_rows(report)]
    assert [cells for _, cells in components] == expected
    assert [cells[0] for _, cells in rh.decode_table(data, "hosts")] == [h["name"] for h in report["hosts"]]
    assert {cls for cls, _ in components} == {"", "drift", "down"}
    body = page[page.index('<table id="components">') : page.index("</table>", page.index('id="components"'))]
    assert body.count("<tr class=") == rh.PAGE_ROWS  # the first page only, as HTML
    assert f"1-{rh.PAGE_ROWS} of {len(components)} rows" in page
    assert "</" not in page[start : page.index("</script>", start)]
    assert len(page) < 400 * len(report["hosts"])  # a few hundred bytes a host, not a table of MBs


def test_html_groups_drift_and_findings_by_message():
    report = rp.build_report(fleet(300), generated_at=STAMP)
    page = rh.render_html(report)
    drift = page[page.index('<ul id="drift">') : page.index("</ul>", page.index('<ul id="drift">'))]
    counts = [int(n) for n in re.findall(r"<li><b>(\d+) host\(s\)</b>", drift)]
    assert 0 < len(counts) < 10  # a few distinct messages, not one item per host
    assert sum(counts) == report["summary"]["drift_items"]
    assert f"and {counts[0] - rh.GROUP_HOSTS} more</small>" in drift


def test_json_is_the_report_with_one_host_per_line():
    report = rp.build_report(fleet(25), generated_at=STAMP)
    text = rp.render_json(report)
    assert json.loads(text) == json.loads(json.dumps(report))
    host_lines = [line for line in text.splitlines() if line.startswith('    {"name": ')]
    names = [json.loads(line.rstrip(","))["name"] for line in host_lines]
    assert names == [h["name"] for h in report["hosts"]]
