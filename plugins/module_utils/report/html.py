# Copyright: gpufleet contributors
# Apache-2.0
"""The fleet report as one self-contained HTML page (no external asset: inline CSS, SVG, a little JS).

Stdlib only, Python >= 3.9. Reads only the report dict of report.build.build_report; rows and texts
come from report.rows.
- a summary; version-distribution charts (GPU models, drivers, CUDA toolkits, cuDNN copies) as inline SVG;
- the host x component table (id ``components``): click a header to sort, type in the box to filter;
  rows with drift carry class ``drift`` and are highlighted; unreachable/failed hosts class ``down``;
- drift and findings lists.
"""

from __future__ import annotations

from html import escape

from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.rows import (
    CSV_COLUMNS,
    HOST_COLUMNS,
    component_rows,
    drift_text,
    findings_count,
    host_cells,
)

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em;color:#1d1d1f}
h1{margin:0 0 .2em}h2{margin-top:1.6em}small{color:#666}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#eef1f5;cursor:pointer;user-select:none;white-space:nowrap}
th.asc:after{content:" \\25B2"}th.desc:after{content:" \\25BC"}
tr.drift td{background:#fde2e2}tr.drift td.drift{font-weight:bold;color:#a40000}
tr.down td{background:#eee;color:#777}
.cards{display:flex;flex-wrap:wrap;gap:1em}.card{border:1px solid #ccc;border-radius:6px;padding:.5em 1em}
.card b{font-size:1.5em;display:block}.card.bad b{color:#a40000}
.charts{display:flex;flex-wrap:wrap;gap:1.5em}.chart{border:1px solid #ddd;padding:.5em}
#filter{width:24em;padding:4px;margin:.5em 0}
li.error{color:#a40000}li.warning{color:#8a5a00}
"""

_JS = """
(function(){
  var t=document.getElementById('components'),f=document.getElementById('filter');
  f.addEventListener('input',function(){var q=f.value.toLowerCase();
    Array.prototype.forEach.call(t.tBodies[0].rows,function(r){
      r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});
  Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){th.addEventListener('click',function(){
    var asc=!th.classList.contains('asc'),rows=Array.prototype.slice.call(t.tBodies[0].rows);
    Array.prototype.forEach.call(t.tHead.rows[0].cells,function(c){c.classList.remove('asc','desc');});
    th.classList.add(asc?'asc':'desc');
    rows.sort(function(a,b){var x=a.cells[i].textContent,y=b.cells[i].textContent;
      return (asc?1:-1)*x.localeCompare(y,undefined,{numeric:true});});
    rows.forEach(function(r){t.tBodies[0].appendChild(r);});});});
})();
"""

_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7")


def svg_bar_chart(title, counts, chart_id, width=360, bar_height=18):
    """A horizontal bar chart as inline SVG (one bar per key of ``counts``)."""
    items = list(counts.items())
    label_w = 150
    height = 26 + max(len(items), 1) * (bar_height + 6)
    top = max([v for _, v in items] or [1])
    out = [
        f'<svg id="{escape(chart_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="0" y="15" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    if not items:
        out.append('<text x="0" y="38" font-size="12" fill="#777">none</text>')
    for i, (label, value) in enumerate(items):
        y = 24 + i * (bar_height + 6)
        w = max(2, int((width - label_w - 40) * value / top))
        text = label if len(label) <= 24 else label[:23] + "\u2026"
        out.append(
            f'<text x="0" y="{y + bar_height - 5}" font-size="12">{escape(text)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{w}" height="{bar_height}" '
            f'fill="{_COLORS[i % len(_COLORS)]}"><title>{escape(label)}: {value}</title></rect>'
            f'<text x="{label_w + w + 4}" y="{y + bar_height - 5}" font-size="12">{value}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _card(label, value, bad=False):
    return (
        f'<div class="card{" bad" if bad and value else ""}"><b>{escape(str(value))}</b>{escape(label)}</div>'
    )


def _summary_cards(s):
    return [
        '<div class="cards" id="summary">',
        _card("hosts", s["hosts"]),
        _card("audited", s["ok"]),
        _card("unreachable", s["unreachable"], True),
        _card("failed", s["failed"], True),
        _card("without GPU", s["no_gpu"]),
        _card("GPUs", s["gpus"]),
        _card("hosts with drift", s["hosts_with_drift"], True),
        _card("errors", s["findings"]["error"], True),
        _card("warnings", s["findings"]["warning"], True),
        "</div>",
    ]


def _charts(dist):
    return [
        "<h2>Versions</h2>",
        '<div class="charts">',
        svg_bar_chart("GPU models", dist["gpu_model"], "chart-gpu"),
        svg_bar_chart("Drivers", dist["driver"], "chart-driver"),
        svg_bar_chart("CUDA toolkits", dist["cuda"], "chart-cuda"),
        svg_bar_chart("cuDNN copies", dist["cudnn"], "chart-cudnn"),
        "</div>",
    ]


def _hosts_table(report):
    p = [
        "<h2>Hosts</h2>",
        '<table id="hosts"><thead><tr>'
        + "".join(f"<th>{escape(c)}</th>" for c in HOST_COLUMNS)
        + "</tr></thead><tbody>",
    ]
    for h in report["hosts"]:
        cls = "drift" if h["drift"] else ("down" if h["status"] != "ok" else "")
        cells = host_cells(h, drift_text(h), findings_count(h))
        p.append(
            f'<tr class="{cls}" data-host="{escape(h["name"])}">'
            + "".join(f"<td>{escape(str(c))}</td>" for c in cells)
            + "</tr>"
        )
    p.append("</tbody></table>")
    return p


def _components_table(report):
    p = [
        "<h2>Components</h2>",
        '<input id="filter" type="search" placeholder="filter rows (host, version, path...)">',
        '<table id="components"><thead><tr>'
        + "".join(f"<th>{escape(c)}</th>" for c in CSV_COLUMNS)
        + "</tr></thead><tbody>",
    ]
    for r in component_rows(report):
        cls = "drift" if r["drift"] else ("down" if r["component"] == "host" else "")
        p.append(
            f'<tr class="{cls}">'
            + "".join(f'<td class="{c}">{escape(str(r[c]))}</td>' for c in CSV_COLUMNS)
            + "</tr>"
        )
    p.append("</tbody></table>")
    return p


def _lists(report):
    drift_items = [(h, d) for h in report["hosts"] for d in h["drift"]]
    p = ['<h2>Drift</h2><ul id="drift">']
    p += [f"<li><b>{escape(h['name'])}</b>: {escape(d['message'])}</li>" for h, d in drift_items] or [
        "<li>none</li>"
    ]
    p.append('</ul><h2>Findings</h2><ul id="findings">')
    findings = [(h, f) for h in report["hosts"] for f in h["findings"]]
    p += [
        f'<li class="{f["severity"]}"><b>{escape(h["name"])}</b> {f["severity"]} '
        f"<code>{escape(f['code'])}</code>: {escape(f['message'])}</li>"
        for h, f in findings
    ] or ["<li>none</li>"]
    p.append("</ul>")
    return p


def render_html(report):
    s = report["summary"]
    p = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>gpufleet audit</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>gpufleet audit</h1>",
        f"<small>generated {escape(str(report['generated_at']))} by {escape(report['generator'])}, "
        f"schema {escape(report['schema'])} v{report['schema_version']}</small>",
    ]
    p += _summary_cards(s) + _charts(s["distributions"]) + _hosts_table(report) + _components_table(report)
    p += _lists(report)
    p += [f"<script>{_JS}</script>", "</body></html>"]
    return "\n".join(p) + "\n"
