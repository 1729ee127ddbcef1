#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
"""Documentation of the nvidia_fleet_report action (the work runs on the controller: plugins/action)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_fleet_report
short_description: Build and write the fleet audit report (JSON, CSV, Markdown, HTML, Prometheus metrics)
description:
  - Runs on the controller (action plugin). Reads, for every audited host, the registered result of its
    C(gpufleet.nvidia.nvidia_facts) task (host variable O(result_var), with C(ansible_facts.nvidia) when it
    worked, C(unreachable) or C(failed) with a message when not) and its baseline (O(baseline_var)).
  - Builds the fleet report (per host the GPUs, driver, CUDA toolkits and default, every cuDNN copy and
    which one the loader resolves; findings; drift against the baseline), writes each format atomically into
    O(report_dir) and prints a summary table.
  - With O(preflight=true) only checks the playbook's variables (O(variables)), that O(report_dir) can be
    written (creating it) and that every baseline is well formed, so that a bad setting fails the run before
    any host is contacted.
  - The report schema and the exit codes of the audit are documented in docs/audit.md.
version_added: "0.1.0"
author: gpufleet maintainers (!UNKNOWN)
options:
  report_dir:
    description:
      - Directory receiving the reports; created when missing. A relative path is relative to the directory
        C(ansible-playbook) runs in (the controller's current working directory).
      - Default, C(reports/) in the directory C(ansible-playbook) runs in, never a directory of the playbook
        or of the collection (an installed collection's C(playbooks/audit.yml) does not write into the
        collection).
    type: path
  formats:
    description: Formats to write.
    type: list
    elements: str
    choices: [json, csv, md, html, prom]
    default: [json, csv, md, html, prom]
  hosts:
    description:
      - Hosts to report. Default, every inventory host that has O(result_var) set in this run.
      - In preflight mode, the hosts whose baseline is validated.
      - Mutually exclusive with O(host_pattern).
    type: list
    elements: str
  host_pattern:
    description:
      - An inventory host pattern (C(all), C(gpu_nodes:!gpu99)); the hosts are the inventory's hosts it
        matches, as C(query('inventory_hostnames', pattern)) gives them, instead of O(hosts).
      - Expanded by the action after O(variables) were checked, so that a C(gpufleet_audit_hosts) of the
        wrong type is refused naming it (in the task's arguments, the lookup would fail first).
    type: str
  result_var:
    description:
      - Host variable holding the registered result of the host's nvidia_facts task (also accepted, a dict
        C({status, facts, message}) with status C(ok), C(unreachable) or C(failed)).
    type: str
    default: __gpufleet_audit_facts
  baseline_var:
    description: Host variable holding a host's baseline (see docs/audit.md).
    type: str
    default: gpufleet_baseline
  textfile_dir_var:
    description:
      - Host variable holding node_exporter's textfile directory on that host
        (C(--collector.textfile.directory), an absolute path); checked for every host in preflight mode,
        naming the host.
      - For each audited host that sets it, the result's RV(textfiles) holds the directory and the host's own
        series - the same metric names and labels as that host's lines of the fleet's C(gpufleet.prom) - which
        C(playbooks/audit.yml) writes there with C(gpufleet.nvidia.nvidia_textfile).
    type: str
    default: gpufleet_audit_prometheus_textfile_dir
  textfile_dir:
    description:
      - The textfile directory of the hosts that do not set O(textfile_dir_var) themselves (the run's value,
        for example from C(-e) or the play's variables); an absolute path.
    type: raw
  defer_failure:
    description:
      - Do not fail for drift or hosts not audited (O(fail_on_drift), O(fail_on_unreachable),
        O(fail_on_failed)); return the reasons in RV(problems) for a later task to fail with.
      - C(playbooks/audit.yml) fails its last play with them, after the per-host text files are written.
    type: bool
    default: false
  preflight:
    description: Only check O(variables), the report directory and the baselines.
    type: bool
    default: false
  variables:
    description:
      - The audit playbook's own variables as the user set them, by their names (C(gpufleet_audit_hosts),
        C(gpufleet_audit_report_dir), C(gpufleet_audit_report_formats), C(gpufleet_audit_fail_on_drift),
        C(gpufleet_audit_fail_on_unreachable), C(gpufleet_audit_fail_on_failed),
        C(gpufleet_audit_gather_facts), C(gpufleet_audit_strategy),
        C(gpufleet_audit_gather_subset), C(gpufleet_audit_cudnn_search_paths), C(gpufleet_audit_slice),
        C(gpufleet_audit_slices), C(gpufleet_audit_slice_dir), C(gpufleet_audit_prometheus_textfile_dir)) and
        AWX job slicing's
        C(awx_job_slice_number) and C(awx_job_slice_count); a null value means not set. No string in them
        may hold a control character (newline, tab, ...).
      - >-
        Checked first, before the other options, so that a wrong one fails with a message naming that
        variable, its value and what is allowed (and only the wrong ones), for example
        C(gpufleet_audit_fail_on_drift: 'perhaps' is not a boolean; allowed: true or false ...).
      - Booleans and lists are read as Ansible reads module options (V(yes), V("true"), V(json,csv)).
    type: dict
  fail_on_drift:
    description:
      - Fail (after writing the reports) when any host drifts from its baseline; the message lists the drift.
    type: bool
    default: false
  fail_on_unreachable:
    description:
      - Fail (after writing the reports) when any host was not audited, unreachable or failed; the message
        names them with their messages.
    type: bool
    default: false
  fail_on_failed:
    description:
      - Fail (after writing the reports) when the C(nvidia_facts) run failed on any host (it was reached, but
        no facts came back - no Python, a crash), naming each with its cause; unreachable hosts do not fail
        the run this way (O(fail_on_unreachable) covers both).
      - A failed host is always in the reports and in the printed summary, with its cause - the module's
        stderr, exception or stdout besides Ansible's message (trimmed, control characters written as
        escapes such as C(\n)).
    type: bool
    default: false
  print_summary:
    description: Print the summary table on the controller.
    type: bool
    default: true
  generated_at:
    description: Timestamp written in the report (default, now in UTC); for reproducible output.
    type: str
  slice_number:
    description:
      - This run is slice O(slice_number) of O(slice_count) (1 to O(slice_count)) of a sliced audit (AWX job
        slicing, or C(--limit) shards by hand). With O(slice_count) above 1, writes only the slice report
        C(gpufleet-audit.slice-<number>-of-<count>.json) (the report plus C(slice)) into O(report_dir).
      - C(playbooks/audit.yml) passes C(gpufleet_audit_slice), else AWX's C(awx_job_slice_number).
    type: raw
  slice_count:
    description:
      - Number of slices of the sliced audit; 1 or unset, the run writes the fleet report itself.
      - C(playbooks/audit.yml) passes C(gpufleet_audit_slices), else AWX's C(awx_job_slice_count).
    type: raw
  merge:
    description:
      - Merge the slice reports found in O(slice_dir) into one fleet report, written in every format of
        O(formats) into O(report_dir), as a single run over every host would have written it.
      - The fleet is O(hosts) (give the inventory's hosts); a host in no slice is reported as failed, a host
        in several slices is kept once (its audited entry) and named.
      - Refused with one line, no file written, for slices of another schema version or slice count, a slice
        number twice, or a host whose baseline in its slice differs from the one in the inventory.
    type: bool
    default: false
  slice_dir:
    description: Where O(merge=true) reads the slice reports; default O(report_dir).
    type: path
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: All the work is done by the action plugin, on the controller.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Builds the report and prints the summary, writes no file.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - The action runs on the controller; run it in a play on C(localhost).
seealso:
  - module: gpufleet.nvidia.nvidia_facts
"""

EXAMPLES = r"""
- name: Write the fleet report
  gpufleet.nvidia.nvidia_fleet_report:
    report_dir: /var/lib/gpufleet/reports
    fail_on_drift: true

- name: Check the variables, the report directory and the baselines before contacting any host
  gpufleet.nvidia.nvidia_fleet_report:
    report_dir: /var/lib/gpufleet/reports
    host_pattern: gpu_nodes
    preflight: true
    variables:
      gpufleet_audit_fail_on_drift: "{{ gpufleet_audit_fail_on_drift | default(none) }}"
"""

RETURN = r"""
paths:
  description: The files written, by format.
  returned: success, not in check mode
  type: dict
  sample: {"json": "reports/gpufleet-audit.json", "html": "reports/gpufleet-audit.html"}
summary:
  description: The summary table, one line per host and a totals line.
  returned: success
  type: list
  elements: str
not_audited:
  description: One line per host the audit could not read - host, status (unreachable or failed), its message.
  returned: success
  type: list
  elements: str
  sample: ["old01 failed: Module result deserialization failed: No start of json char found; module stderr:
    /bin/sh: 1: /usr/bin/python3: not found"]
drift:
  description: One line per drift item (host, colon, message).
  returned: success
  type: list
  elements: str
  sample: ["gpu03: cuDNN 9.14 for CUDA 13 expected, found 9.19.0 (tarball at /usr/local/cuda-13.0)"]
totals:
  description: Counts (hosts, ok, unreachable, failed, no_gpu, gpus, hosts_with_drift, drift_items, findings).
  returned: success
  type: dict
problems:
  description: Why the run fails (drift, hosts not audited), as the fail_on options ask; empty when not.
  returned: success
  type: list
  elements: str
textfiles:
  description:
    - Per audited host that sets O(textfile_dir_var), C(directory) (that variable) and C(content) (the host's
      own series in Prometheus' text format, with the report's timestamp).
  returned: success, not for O(merge=true)
  type: dict
  sample: {"gpu01": {"directory": "/var/lib/prometheus/node-exporter", "content": "# HELP gpufleet_gpus ..."}}
textfile_dirs:
  description: The hosts that set O(textfile_dir_var), with its value (normalized).
  returned: preflight
  type: dict
hosts:
  description: The hosts whose baselines were validated.
  returned: preflight
  type: list
  elements: str
report_dir:
  description: The report directory checked (O(report_dir) or its default), absolute.
  returned: preflight
  type: str
settings:
  description: The variables of O(variables) that are set, normalized (booleans, lists).
  returned: preflight
  type: dict
  sample: {"gpufleet_audit_fail_on_drift": true, "gpufleet_audit_report_formats": ["json", "html"]}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.options import ARGUMENT_SPEC


def main():
    # The action plugin of the same name does the work on the controller with this same spec; this file
    # documents it and only runs when the action is bypassed.
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(
        msg="nvidia_fleet_report runs on the controller as an action plugin; "
        "call it as gpufleet.nvidia.nvidia_fleet_report in a play on localhost"
    )


if __name__ == "__main__":
    main()
