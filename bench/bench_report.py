"""Benchmark: the fleet report on the controller for 1,000 and 10,000 synthetic hosts (bench/fleet.py).

Each size runs in a fresh process (so its peak memory is its own) and measures, side by side:
- baseline: ``json.dumps`` of the same host records (what Ansible's own JSON handling of them costs);
- build: ``report.build.build_report`` (normalize, findings with the compatibility rules, drift);
- every render: JSON, CSV, Markdown, Prometheus, HTML (sizes too).
Prints seconds, the ratio (build + all renders) / baseline (goal <= 10 at 10,000 hosts), the peak memory
(ru_maxrss, goal < 1 GB), the HTML size (goal <= 10 MB) and how the time grows from 1,000 to 10,000 hosts
(1.0 = linear). Then merges 10 slices of 1,000 hosts and checks the result equals the 10,000-host report,
and, when Chromium is installed (Debian: ``apt-get install chromium``), loads the 10,000-host page headless
and compares the time with an empty page's (the browser's own start).

Run: .venv/bin/python bench/bench_report.py [--sizes 1000,10000] [--repeat 3] [--no-chromium]
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / ".collections"), str(ROOT / "bench")]

fleet = importlib.import_module("fleet")  # bench/fleet.py, next to this file
rp = importlib.import_module("ansible_collections.gpufleet.nvidia.plugins.module_utils.report.build")
rm = importlib.import_module("ansible_collections.gpufleet.nvidia.plugins.module_utils.report.merge")

STAMP = "2026-12-01T00:00:00Z"
RENDERS = ("json", "csv", "md", "prom", "html")


def timed(func, repeat=1):
    samples, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = func()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), result


def child(count, repeat, out_dir):
    """One size, in this (fresh) process; prints one JSON line."""
    records = fleet.records(count)
    t_json, text = timed(lambda: json.dumps(records), repeat)
    t_build, report = timed(lambda: rp.build_report(records, generated_at=STAMP), repeat)
    renders, sizes = {}, {}
    for fmt in RENDERS:
        renders[fmt], out = timed(lambda f=fmt: rp.render(report, f, timestamp=0), repeat)
        sizes[fmt] = len(out.encode())
        if fmt == "html" and out_dir:
            Path(out_dir, f"fleet-{count}.html").write_text(out, encoding="utf-8")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "hosts": count,
                "json_records": t_json,
                "records_bytes": len(text),
                "build": t_build,
                "renders": renders,
                "sizes": sizes,
                "peak_bytes": peak,
            }
        )
    )


def merge_check(count=10_000, slices=10):
    records = fleet.records(count)
    single = rp.build_report(records, generated_at=STAMP)
    size = count // slices
    parts = [
        (
            rm.slice_file_name(k + 1, slices),
            rm.slice_report(
                rp.build_report(records[k * size : (k + 1) * size], generated_at=STAMP), k + 1, slices
            ),
        )
        for k in range(slices)
    ]
    t_merge, merged = timed(lambda: rm.merge_reports(parts, expected=[r["name"] for r in records]))
    merged.pop("merge")
    merged["generated_at"] = STAMP
    return t_merge, merged == single


def chromium_check(html_path, rounds=2):
    """Headless Chromium on the page and on an empty page (best of ``rounds`` each, after a warm-up):
    (page seconds, empty seconds, ms until the page's script was done, rows in the DOM, paged), or None."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        return None
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--dump-dom"]
    empty = Path(html_path).with_name("empty.html")
    empty.write_text("<!DOCTYPE html><title>empty</title>", encoding="utf-8")
    times, dom = {"empty": [], "page": []}, ""
    for name, page in [("warm-up", empty)] + [("empty", empty), ("page", Path(html_path))] * rounds:
        with tempfile.TemporaryDirectory() as profile:
            cmd = [*flags, f"--user-data-dir={profile}", page.as_uri()]
            started = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
            if name in times:
                times[name].append(time.perf_counter() - started)
            if name == "page":
                dom = proc.stdout
    ready = re.search(r'data-ready-ms="(\d+)"', dom)
    rows = dom.count("<tr class=")
    paged = "rows, page 1 of" in dom
    return min(times["page"]), min(times["empty"]), int(ready.group(1)) if ready else None, rows, paged


def run_size(count, repeat, out_dir):
    cmd = [sys.executable, __file__, "--child", str(count), "--repeat", str(repeat), "--out", out_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report_size(r):
    total = r["build"] + sum(r["renders"].values())
    ratio = total / r["json_records"]
    print(
        f"  {r['hosts']:>6} hosts: json.dumps(records) {r['json_records']:.3f} s "
        f"({r['records_bytes'] / 1e6:.0f} MB) | build {r['build']:.3f} s + renders "
        f"{sum(r['renders'].values()):.3f} s = {total:.3f} s = {ratio:.1f}x json | "
        f"peak {r['peak_bytes'] / 2**20:.0f} MiB | HTML {r['sizes']['html'] / 1e6:.1f} MB"
    )
    print(
        "           renders: "
        + ", ".join(f"{f} {r['renders'][f]:.3f} s ({r['sizes'][f] / 1e6:.1f} MB)" for f in RENDERS)
    )
    return total, ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-chromium", action="store_true")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.repeat, args.out)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-report-") as out_dir:
        print(f"report: synthetic fleets from the H200 facts, median of {args.repeat}, one process per size")
        results = {n: run_size(n, args.repeat, out_dir) for n in sizes}
        totals = {n: report_size(results[n]) for n in sizes}
        big = max(sizes)
        if len(sizes) > 1:
            small = min(sizes)
            growth = (totals[big][0] / totals[small][0]) / (big / small)
            print(
                f"  growth {small} -> {big} hosts: {growth:.2f} "
                f"(time per host at {big} / at {small}; 1.0 = linear)"
            )
        r = results[big]
        goals = (
            f"ratio {totals[big][1]:.1f}x <= 10x: {'met' if totals[big][1] <= 10 else 'NOT met'}; "
            f"peak {r['peak_bytes'] / 2**20:.0f} MiB < 1024: "
            f"{'met' if r['peak_bytes'] < 2**30 else 'NOT met'}; "
            f"HTML {r['sizes']['html'] / 1e6:.1f} MB <= 10: "
            f"{'met' if r['sizes']['html'] <= 10e6 else 'NOT met'}"
        )
        print(f"  goals at {big} hosts: {goals}")
        t_merge, same = merge_check(big, 10)
        print(
            f"  merge of 10 slices of {big // 10} hosts: {t_merge:.3f} s; "
            f"equals the {big}-host report: {same}"
        )
        if not args.no_chromium:
            seen = chromium_check(Path(out_dir) / f"fleet-{big}.html")
            if seen is None:
                print("  chromium: not installed (apt-get install chromium), page load not measured")
            else:
                page, empty, ready, rows, paged = seen
                print(
                    f"  chromium headless, {big}-host page: {page:.2f} s vs empty page {empty:.2f} s "
                    f"(+{page - empty:.2f} s, {page / empty:.2f}x); the page's script done at {ready} ms; "
                    f"rows in the DOM {rows}; paged: {paged}"
                )


if __name__ == "__main__":
    main()
