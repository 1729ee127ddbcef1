# Copyright: gpufleet contributors
# Apache-2.0
"""The fleet report as one self-contained HTML page (no external asset: inline CSS, SVG, a little JS).

Stdlib only, Python >= 3.9. Reads only the report dict of report.build.build_report; rows and texts
come from report.rows. Built to stay usable at 10,000 hosts (a few MB, aggregate views first):
- a summary; version-distribution charts (GPU models, drivers, CUDA toolkits, cuDNN copies) as inline SVG;
- drift and findings grouped by message, each with its number of hosts and the first host names (findings
  errors first, then warnings, then info, each by number of hosts: report.rows.finding_groups);
- the hosts table (id ``hosts``) and the host x component table (id ``components``), paged
  (``PAGE_ROWS`` rows a page): the first page is plain HTML, every row is in one JSON block
  (``gpufleet-data``: each distinct text once, rows as indexes into it) that the script pages, sorts
  (click a header) and filters (type in the box above the table) over all rows; rows with drift carry
  class ``drift``, unreachable/failed hosts class ``down``.
"""

from __future__ import annotations

import json
from html import escape

from ansible_collections.gpufleet.nvidia.plugins.module_utils.report import consumers as report_consumers
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.rows import (
    CSV_COLUMNS,
    GROUP_HOSTS,
    HOST_COLUMNS,
    component_rows,
    drift_overview,
    drift_text,
    drifted,
    finding_groups,
    findings_text,
    host_cells,
    hosts_text,
)

PAGE_ROWS = 100  # rows a page of each table (static first page and script)
__all__ = ["GROUP_HOSTS", "PAGE_ROWS", "render_html", "svg_bar_chart", "table_data", "decode_table"]
ROW_CLASSES = ("", "drift", "down")

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
input[type=search]{width:24em;padding:4px;margin:.5em 0}.pager{margin:.4em 0}.pager .info{margin:0 .8em}
li.error{color:#a40000}li.warning{color:#8a5a00}li small{color:#555}
"""

# Pages, sorts and filters every row of each table in gpufleet-data; the first page's markup is the same
# as the server's. Sorting ranks the distinct texts once (numeric collation), then sorts rows by rank.
_JS = """
(function(){
  var D=JSON.parse(document.getElementById('gpufleet-data').textContent),S=D.strings,P=D.page,rank=null;
  var CLS=%(classes)s,E={'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#x27;'};
  function esc(s){return s.replace(/[&<>"']/g,function(c){return E[c];});}
  function ranks(){if(rank)return rank;var c=window.Intl?new Intl.Collator(undefined,{numeric:true}).compare:
    function(x,y){return x.localeCompare(y,undefined,{numeric:true});};
    var ix=S.map(function(_,i){return i;}).sort(function(a,b){return c(S[a],S[b]);});
    rank=new Array(S.length);ix.forEach(function(s,i){rank[s]=i;});return rank;}
  function setup(id){
    var spec=D.tables[id],t=document.getElementById(id),f=document.getElementById(id+'-filter'),
        pg=document.getElementById(id+'-pager'),all=spec.rows,order=all.slice(),view=order,page=0;
    function text(r){if(r.t===undefined){var s='';for(var i=1;i<r.length;i++)s+=S[r[i]]+'\\t';
      r.t=s.toLowerCase();}return r.t;}
    function row(r){var h='<tr class="'+CLS[r[0]]+'"'+(spec.key?' data-host="'+esc(S[r[1]])+'"':'')+'>';
      for(var i=1;i<r.length;i++)
        h+=(spec.cells?'<td class="'+spec.cells[i-1]+'">':'<td>')+esc(S[r[i]])+'</td>';
      return h+'</tr>';}
    function draw(){var n=view.length,pages=Math.max(1,Math.ceil(n/P));if(page>=pages)page=pages-1;
      var a=page*P,b=Math.min(n,a+P),h='';for(var i=a;i<b;i++)h+=row(view[i]);t.tBodies[0].innerHTML=h;
      pg.querySelector('.info').textContent=(n?(a+1)+'-'+b:'0')+' of '+n+' rows'+
        (n<all.length?' (filtered from '+all.length+')':'')+', page '+(page+1)+' of '+pages;
      pg.querySelector('.prev').disabled=page<=0;pg.querySelector('.next').disabled=page>=pages-1;}
    function filter(){var q=f.value.toLowerCase();
      view=q?order.filter(function(r){return text(r).indexOf(q)>=0;}):order;page=0;draw();}
    f.addEventListener('input',filter);
    pg.querySelector('.prev').addEventListener('click',function(){page--;draw();});
    pg.querySelector('.next').addEventListener('click',function(){page++;draw();});
    Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){th.addEventListener('click',function(){
      var asc=!th.classList.contains('asc'),r=ranks();
      Array.prototype.forEach.call(t.tHead.rows[0].cells,function(c){c.classList.remove('asc','desc');});
      th.classList.add(asc?'asc':'desc');
      order=all.slice().sort(function(a,b){return (asc?1:-1)*(r[a[i+1]]-r[b[i+1]]);});filter();});});
    draw();}
  Object.keys(D.tables).forEach(setup);
  document.body.setAttribute('data-ready-ms',String(Math.round(performance.now())));
})();
"""

_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7")


def svg_bar_chart(title, counts, chart_id, width=360, bar_height=18):
    """A horizontal bar chart as inline SVG (one bar per key of ``counts``)."""
    items = list(counts.items())
    label_w = 150
    height = 26 + max(len(items), 1) * (bar_height + 6)
    top = max([v for _label, v in items] or [1])
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
        _card("no baseline set", s["no_baseline"]),
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


def _host_table_rows(report):
    """(row class, cells) of the hosts table: drift, down (unreachable/failed) or plain."""
    out = []
    for h in report["hosts"]:
        cls = "drift" if h["drift"] else ("down" if h["status"] != "ok" else "")
        out.append((cls, [str(c) for c in host_cells(h, drift_text(h), findings_text(h))]))
    return out


def _component_table_rows(report):
    out = []
    for r in component_rows(report):
        cls = "drift" if drifted(r) else ("down" if r["component"] == "host" else "")
        out.append((cls, [str(r[c]) for c in CSV_COLUMNS]))
    return out


def _row_html(cls, cells, cell_classes=None, key=False):
    """One row's markup; the script writes the same for every other page."""
    host = f' data-host="{escape(cells[0])}"' if key else ""
    if cell_classes:
        tds = "".join(f'<td class="{c}">{escape(v)}</td>' for c, v in zip(cell_classes, cells))
    else:
        tds = "".join(f"<td>{escape(v)}</td>" for v in cells)
    return f'<tr class="{cls}"{host}>{tds}</tr>'


def _table(table_id, title, columns, rows, cell_classes=None):
    """A table's heading, filter box, pager and first page (the script holds every row)."""
    shown = min(len(rows), PAGE_ROWS)
    pages = max(1, -(-len(rows) // PAGE_ROWS))
    info = f"{1 if rows else 0}-{shown} of {len(rows)} rows, page 1 of {pages}"
    key = cell_classes is None
    return [
        f"<h2>{escape(title)}</h2>",
        f'<input id="{table_id}-filter" type="search" placeholder="filter rows (host, version, path...)">',
        f'<div class="pager" id="{table_id}-pager"><button class="prev" disabled>&lsaquo; previous</button>'
        f'<span class="info">{info}</span><button class="next"{" disabled" if pages == 1 else ""}>'
        "next &rsaquo;</button></div>",
        f'<table id="{table_id}"><thead><tr>'
        + "".join(f"<th>{escape(c)}</th>" for c in columns)
        + "</tr></thead><tbody>",
        *(_row_html(cls, cells, cell_classes, key) for cls, cells in rows[:PAGE_ROWS]),
        "</tbody></table>",
    ]


def table_data(tables):
    """The rows of every table as compact JSON: each distinct text once, rows as indexes into it.

    ``tables``: {table id: {"rows": [(class, cells)], "cells": cell classes or None, "key": bool}}.
    Texts are numbered most frequent first, so the common ones (versions, paths, statuses) take one or
    two digits; a row is [class index, cell indexes...].
    """
    counts = {}
    for spec in tables.values():
        for _cls, cells in spec["rows"]:
            for c in cells:
                counts[c] = counts.get(c, 0) + 1
    strings = sorted(counts, key=lambda c: -counts[c])
    index = {c: i for i, c in enumerate(strings)}
    classes = {c: i for i, c in enumerate(ROW_CLASSES)}
    out = {"strings": strings, "page": PAGE_ROWS, "tables": {}}
    for table_id, spec in tables.items():
        out["tables"][table_id] = {
            "cells": spec["cells"],
            "key": spec["key"],
            "rows": [[classes[cls]] + [index[c] for c in cells] for cls, cells in spec["rows"]],
        }
    return out


def decode_table(data, table_id):
    """(class, cells) rows of one table back from table_data's JSON (what the script shows)."""
    strings = data["strings"]
    return [(ROW_CLASSES[row[0]], [strings[i] for i in row[1:]]) for row in data["tables"][table_id]["rows"]]


def _script_json(data):
    """JSON safe inside <script>: no '</' (closing tag) and no '<!--' can appear in it."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def _groups(items):
    """{text: [host names]} in the order first seen, largest groups first."""
    groups = {}
    for name, text in items:
        groups.setdefault(text, []).append(name)
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def _hosts_note(names):
    return f"<small>{escape(hosts_text(names))}</small>"


def _lists(report):
    """Drift and findings grouped by message: the number of hosts, the message, the first host names."""
    drift = _groups((h["name"], d["message"]) for h in report["hosts"] for d in h["drift"])
    p = ['<h2>Drift</h2><p id="drift-overview">' + escape(drift_overview(report)) + '</p><ul id="drift">']
    p += [
        f"<li><b>{len(names)} host(s)</b>: {escape(message)} {_hosts_note(names)}</li>"
        for message, names in drift
    ]
    p.append('</ul><h2>Findings</h2><ul id="findings">')
    p += [
        f'<li class="{sev}"><b>{len(names)} host(s)</b> {sev} <code>{escape(code)}</code>: '
        f"{escape(message)} {_hosts_note(names)}</li>"
        for sev, code, message, names in finding_groups(report)
    ] or ["<li>none</li>"]
    p.append("</ul>")
    return p


def render_html(report):
    s = report["summary"]
    hosts, components = _host_table_rows(report), _component_table_rows(report)
    envs, env_cells = report_consumers.html_table_rows(report), list(report_consumers.ENV_COLUMNS)
    data = table_data(
        {
            "hosts": {"rows": hosts, "cells": None, "key": True},
            "components": {"rows": components, "cells": list(CSV_COLUMNS), "key": False},
            "environments": {"rows": envs, "cells": env_cells, "key": False},
        }
    )
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
    p += _summary_cards(s) + _charts(s["distributions"]) + _lists(report)
    p += _table("hosts", "Hosts", HOST_COLUMNS, hosts)
    p += _table("components", "Components", CSV_COLUMNS, components, list(CSV_COLUMNS))
    p += _table("environments", "Environments: what each program loads", env_cells, envs, env_cells)
    p += [
        f'<script type="application/json" id="gpufleet-data">{_script_json(data)}</script>',
        "<script>" + _JS.replace("%(classes)s", json.dumps(list(ROW_CLASSES))) + "</script>",
        "</body></html>",
    ]
    return "\n".join(p) + "\n"
