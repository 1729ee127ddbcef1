# Copyright: gpufleet contributors
# Apache-2.0
"""The options of ``gpufleet.nvidia.nvidia_fleet_report``: one argument spec for the action plugin, which does
the work on the controller, and for the module file, which documents it (so ``ansible-test sanity``
validate-modules compares the documentation with the spec the action really takes).

Stdlib only, no imports: the module file pulls in nothing else.
"""

from __future__ import annotations

FORMATS = ("json", "csv", "md", "html", "prom")

ARGUMENT_SPEC = {
    "report_dir": {"type": "path"},
    "formats": {"type": "list", "elements": "str", "default": list(FORMATS), "choices": list(FORMATS)},
    "hosts": {"type": "list", "elements": "str"},
    "host_pattern": {"type": "str"},
    "result_var": {"type": "str", "default": "__gpufleet_audit_facts"},
    "baseline_var": {"type": "str", "default": "gpufleet_baseline"},
    "textfile_dir_var": {"type": "str", "default": "gpufleet_audit_prometheus_textfile_dir"},
    "textfile_dir": {"type": "raw"},
    "defer_failure": {"type": "bool", "default": False},
    "preflight": {"type": "bool", "default": False},
    "variables": {"type": "dict"},
    "fail_on_drift": {"type": "bool", "default": False},
    "fail_on_unreachable": {"type": "bool", "default": False},
    "fail_on_failed": {"type": "bool", "default": False},
    "print_summary": {"type": "bool", "default": True},
    "generated_at": {"type": "str"},
    "slice_number": {"type": "raw"},
    "slice_count": {"type": "raw"},
    "merge": {"type": "bool", "default": False},
    "slice_dir": {"type": "path"},
}
