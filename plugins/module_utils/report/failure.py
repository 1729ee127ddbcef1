# Copyright: gpufleet contributors
# Apache-2.0
"""Hosts the audit could not read: why, in the module's own words, and whether that fails the run.

Stdlib only, Python >= 3.9, pure.
- ``failure_message(result)``: the message of a failed nvidia_facts result (what ``register:`` holds).
  Ansible's ``msg`` alone often hides the cause ("Module result deserialization failed: No start of json char
  found", "MODULE FAILURE"): the module's stderr, else its exception, else its stdout is added, trimmed to
  its last :data:`CAUSE_CHARS` characters (a traceback ends with the exception), named by where it came from;
- ``unreachable_message(result)``: the connection's message;
- ``visible(text)``: control characters (plan.refusal.control_character's definition) written as escapes
  (``\\n``, ``\\x1b``), so that a message is one line in every report and on the console;
- ``not_audited_lines(report)``: one line per unreachable or failed host with its message (the console);
- ``run_problems(report, drift, ...)``: what fails the run once the reports are written.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import control_character

CAUSE_CHARS = 400  # of the module's stderr / exception / stdout, the end (where a traceback says why)
MESSAGE_CHARS = 1000  # of a whole message
# where the cause may be, in order; Ansible 2.19 puts this text in ``exception`` when it has no traceback
CAUSE_KEYS = (
    ("module_stderr", "module stderr"),
    ("exception", "exception"),
    ("module_stdout", "module stdout"),
)
NO_TRACEBACK = "(traceback unavailable)"
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
SHOWN = 5  # hosts quoted with their message when the run fails for them


def _escape(ch):
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text):
    """``text`` on one line: trailing blanks dropped, each control character written as its escape."""
    text = str(text).rstrip()
    if control_character(text) is None:
        return text
    return "".join(_escape(ch) if control_character(ch) else ch for ch in text)


def _tail(text, limit):
    return text if len(text) <= limit else "..." + text[-limit:]


def _cause(result, msg):
    """(where, text) of the first informative cause in the result that ``msg`` does not already say."""
    for key, where in CAUSE_KEYS:
        value = result.get(key)
        text = str(value).strip() if value is not None else ""
        if text and text != NO_TRACEBACK and text not in msg:
            return where, text
    return None


def failure_message(result):
    """Why nvidia_facts failed on the host: Ansible's ``msg`` and the module's own words, one line."""
    msg = str(result.get("msg") or "nvidia_facts failed").strip()
    cause = _cause(result, msg)
    text = visible(msg) + (f"; {cause[0]}: {visible(_tail(cause[1], CAUSE_CHARS))}" if cause else "")
    return _tail(text, MESSAGE_CHARS)


def unreachable_message(result):
    return _tail(visible(str(result.get("msg") or "unreachable")), MESSAGE_CHARS)


def not_audited_lines(report):
    """``<host> <status>: <message>`` for each host the audit could not read (printed after the summary)."""
    return [
        f"{h['name']} {h['status']}: {visible(h.get('message') or 'no details')}"
        for h in report["hosts"]
        if h["status"] != "ok"
    ]


def _listed(hosts):
    shown = [f"{h['name']} ({visible(h.get('message') or 'no details')})" for h in hosts[:SHOWN]]
    more = f" and {len(hosts) - SHOWN} more" if len(hosts) > SHOWN else ""
    return ", ".join(shown) + more


def run_problems(report, drift, fail_on_drift=False, fail_on_unreachable=False, fail_on_failed=False):
    """What fails the run after the reports are written, when asked: drift, hosts not audited (unreachable
    or failed: ``fail_on_unreachable``), hosts whose module failed (``fail_on_failed``)."""
    problems = []
    if fail_on_drift and drift:
        hosts = report["summary"]["hosts_with_drift"]
        problems.append(f"drift from the baseline on {hosts} host(s): " + "; ".join(drift))
    down = [h for h in report["hosts"] if h["status"] != "ok"]
    failed = [h for h in down if h["status"] == "failed"]
    if fail_on_unreachable and down:
        problems.append(f"{len(down)} host(s) not audited (unreachable or failed): {_listed(down)}")
    elif fail_on_failed and failed:
        problems.append(f"{len(failed)} host(s) failed (nvidia_facts did not run through): {_listed(failed)}")
    return problems
