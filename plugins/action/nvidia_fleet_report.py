# Copyright: gpufleet contributors
# Apache-2.0
"""Controller side of the audit: build the fleet report from every host's audit result and write it.

Documentation: plugins/modules/nvidia_fleet_report.py. The work is in module_utils/report/ (pure Python);
this plugin only reads hostvars, calls it, writes the files atomically and prints the summary table.
"""

from __future__ import annotations

import datetime
import os
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader
from ansible.utils.display import Display
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_common import plain
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.facts import SUBSETS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.drift import (
    BaselineError,
    validate_baseline,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.build import (
    build_report,
    check_report_dir,
    drift_lines,
    host_textfiles,
    record_from_result,
    render_json,
    summary_lines,
    write_atomic,
    write_reports,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.failure import (
    not_audited_lines,
    run_problems,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.merge import (
    MergeError,
    check_slice,
    merge_lines,
    merge_reports,
    read_slices,
    slice_file_name,
    slice_report,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.options import ARGUMENT_SPEC as ARGS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.settings import (
    SettingsError,
    report_dir_of,
    validate_host_values,
    validate_settings,
)

display = Display()
HOST_TEXTFILE = "gpufleet_audit_prometheus_textfile_dir"


def validated_variables(raw):
    """The playbook's gpufleet_audit_* variables, normalized; AnsibleActionFail naming each wrong one."""
    try:
        return validate_settings(plain(raw) or {}, SUBSETS)
    except SettingsError as exc:
        raise AnsibleActionFail(str(exc)) from None


def pattern_hosts(pattern, task_vars, loader):
    """The inventory's hosts that the host pattern matches, as ``query('inventory_hostnames', pattern)``.

    Expanded here, after the pattern was checked, not in the task's arguments: a pattern of the wrong type
    (a dict, a list) would break the templating there before the check could name its variable.
    """
    lookup = lookup_loader.get("ansible.builtin.inventory_hostnames", loader=loader)
    return list(lookup.run([pattern], variables=task_vars))


def host_names(args, task_vars, loader=None):
    """The hosts to report: ``hosts``, else those ``host_pattern`` matches, else every inventory host with the
    result variable set."""
    hostvars = task_vars.get("hostvars", {})
    names = args["hosts"]
    if names is None and args["host_pattern"] is not None:
        names = pattern_hosts(args["host_pattern"], task_vars, loader)
    if names is None:
        names = [h for h in task_vars.get("groups", {}).get("all", []) if args["result_var"] in hostvars[h]]
    for name in names:
        if name not in hostvars:
            raise AnsibleActionFail(f"hosts: {name!r} is not in the inventory")
    return names


def baselines(names, hostvars, baseline_var):
    """{host: its baseline as given}; AnsibleActionFail naming the host and the key of a malformed one."""
    out = {}
    for name in names:
        raw = plain(hostvars[name].get(baseline_var))
        try:
            validate_baseline(raw, name=f"{baseline_var} (host {name})")
        except BaselineError as exc:
            raise AnsibleActionFail(str(exc)) from None
        out[name] = raw
    return out


def textfile_dirs(names, hostvars, var, default=None):
    """{host: node_exporter's textfile directory there} of the hosts that set ``var``, else get ``default``
    (the run's value: -e, play variables); an absolute path, else AnsibleActionFail naming the variable,
    the host and the value."""
    values = {}
    for name in names:
        own = plain(hostvars[name].get(var))
        values[name] = plain(default) if own is None else own
    try:
        return validate_host_values(HOST_TEXTFILE, values, shown=var)
    except SettingsError as exc:
        raise AnsibleActionFail(str(exc)) from None


def _now_text(now, given):
    return given or datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def slice_of(args):
    """(number, count) when this run is one slice of several (AWX job slicing, --limit shards), else None."""
    if args["slice_number"] in (None, "") and args["slice_count"] in (None, ""):
        return None
    try:
        return check_slice(args["slice_number"], args["slice_count"])
    except MergeError as exc:
        raise AnsibleActionFail(f"gpufleet_audit_slice / gpufleet_audit_slices: {exc}") from None


def merged_report(args, expected, baselines_given, report_dir, generated_at):
    """The fleet report merged from the slice reports in ``slice_dir`` (default: the report directory).

    ``expected``: the hosts the fleet report must cover (None: whatever the slices hold); their baselines
    as the inventory gives them must be the ones each slice was audited against.
    """
    try:
        slices = read_slices(os.path.abspath(args["slice_dir"]) if args["slice_dir"] else report_dir)
        return merge_reports(slices, expected=expected, baselines=baselines_given, generated_at=generated_at)
    except (MergeError, BaselineError) as exc:
        raise AnsibleActionFail(str(exc)) from None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        # before the argument spec: a wrong variable is named as the user wrote it (gpufleet_audit_*)
        settings = validated_variables(self._task.args.get("variables"))
        _validation, args = self.validate_argument_spec(
            argument_spec=ARGS, mutually_exclusive=[("hosts", "host_pattern")]
        )
        # relative to the directory ansible-playbook runs in (the controller's cwd), default <cwd>/reports;
        # normalized, so every message names one path
        report_dir = report_dir_of(args["report_dir"], os.getcwd())
        names = host_names(args, task_vars, self._loader)
        given = baselines(names, task_vars.get("hostvars", {}), args["baseline_var"])
        textfiles_in = textfile_dirs(
            names, task_vars.get("hostvars", {}), args["textfile_dir_var"], args["textfile_dir"]
        )
        # last: it creates the directory, and a refused input changes nothing
        problem = check_report_dir(report_dir, create=not self._task.check_mode)
        if problem:
            raise AnsibleActionFail(problem)
        if args["preflight"]:
            result.update(
                changed=False,
                report_dir=report_dir,
                hosts=sorted(names),
                settings=settings,
                textfile_dirs=textfiles_in,
                msg=f"report directory {report_dir} is writable; baselines of {len(names)} host(s) valid",
            )
            return result
        now = time.time()
        if args["merge"]:
            # the fleet: the inventory's hosts (given by name or by pattern), else whatever the slices hold
            expected = names if args["hosts"] is not None or args["host_pattern"] is not None else None
            report = merged_report(args, expected, given, report_dir, _now_text(now, args["generated_at"]))
            result.update(self._finish(args, report, report_dir, now, merge_lines(report)))
            return result
        part = slice_of(args)
        hostvars = task_vars.get("hostvars", {})
        records = [
            record_from_result(name, plain(hostvars[name].get(args["result_var"])), given[name])
            for name in names
        ]
        try:
            report = build_report(records, generated_at=_now_text(now, args["generated_at"]))
        except BaselineError as exc:
            raise AnsibleActionFail(str(exc)) from None
        if part:
            result.update(self._finish_slice(args, slice_report(report, *part), report_dir))
        else:
            result.update(self._finish(args, report, report_dir, now))
        # each audited host's own series, for its node_exporter (playbooks/audit.yml writes them there)
        result["textfiles"] = host_textfiles(report, textfiles_in, timestamp=now)
        return result

    def _finish_slice(self, args, report, report_dir):
        """A slice of a sliced run writes its slice report only (the merge writes the fleet's formats)."""
        part = report["slice"]
        path = os.path.join(report_dir, slice_file_name(part["number"], part["count"]))
        if not self._task.check_mode:
            try:
                write_atomic(path, render_json(report))
            except OSError as exc:
                raise AnsibleActionFail(f"gpufleet_audit_report_dir: cannot write {path}: {exc}") from None
        lines = [f"slice {part['number']} of {part['count']}: slice report {path}"]
        return self._outcome(args, report, {"slice": path} if not self._task.check_mode else {}, lines)

    def _finish(self, args, report, report_dir, now, notes=()):
        paths = self._write(report, report_dir, args["formats"], now)
        html = [f"HTML report: {paths['html']}"] if "html" in paths else []
        return self._outcome(args, report, paths, [*notes, *html])

    def _outcome(self, args, report, paths, notes):
        """Print the summary (and ``notes``), then the task result; failed when asked (drift, down hosts)."""
        summary = summary_lines(report)
        down = not_audited_lines(report)
        if args["print_summary"]:
            display.display("\n".join(["", "gpufleet audit", *summary, *down, *notes]))
        drift = drift_lines(report)
        s = report["summary"]
        out = {
            "changed": bool(paths),
            "paths": paths,
            "summary": summary,
            "not_audited": down,
            "drift": drift,
            "totals": plain({k: v for k, v in s.items() if k != "distributions"}),
            "notes": list(notes),
        }
        problems = run_problems(
            report, drift, args["fail_on_drift"], args["fail_on_unreachable"], args["fail_on_failed"]
        )
        out["problems"] = problems
        if problems and not args["defer_failure"]:
            out.update(failed=True, msg=" | ".join(problems))
        elif paths:
            what = f"slice {report['slice']['number']} report" if "slice" in report else "fleet report"
            written_to = os.path.dirname(next(iter(paths.values())))
            out["msg"] = f"{what} for {s['hosts']} host(s) written to {written_to}"
        else:
            out["msg"] = "check mode: reports not written"
        return out

    def _write(self, report, report_dir, formats, now):
        if self._task.check_mode:
            return {}
        try:
            return write_reports(report, report_dir, formats, timestamp=now)
        except OSError as exc:
            raise AnsibleActionFail(
                f"gpufleet_audit_report_dir: cannot write the reports in {report_dir}: {exc}"
            ) from None
