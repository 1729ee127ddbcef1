"""probe_common: isolated calls survive crashes and hangs; chroot-style symlink resolution."""

import os
import time

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import common as probe_common
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root, run_isolated


def _abort():
    os.write(2, b"Invalid handle. Cannot load symbol cudnnGetVersion\n")
    os.abort()


def _hang():
    time.sleep(30)


def _boom():
    raise RuntimeError("no such symbol")


def test_run_isolated_returns_the_value():
    assert run_isolated(lambda a, b: {"sum": a + b}, (2, 3)) == ({"sum": 5}, None)


def test_run_isolated_survives_an_abort_and_keeps_stderr():
    value, reason = run_isolated(_abort)
    assert value is None
    assert reason.startswith("crashed with SIGABRT")
    assert "Cannot load symbol cudnnGetVersion" in reason


def test_run_isolated_kills_a_hang():
    started = time.monotonic()
    value, reason = run_isolated(_hang, timeout=0.5)
    assert value is None
    assert reason == "timed out after 0.5s"
    assert time.monotonic() - started < 10


def test_run_isolated_reports_exceptions():
    assert run_isolated(_boom) == (None, "RuntimeError: no such symbol")


def test_realpath_keeps_absolute_links_inside_the_root(tmp_path):
    (tmp_path / "usr/lib").mkdir(parents=True)
    (tmp_path / "usr/lib/libx.so.1.2").write_text("")
    os.symlink("/usr/lib/libx.so.1.2", tmp_path / "usr/lib/libx.so.1")
    os.symlink("usr/lib", tmp_path / "lib")
    root = Root(str(tmp_path))
    assert root.realpath("/lib/libx.so.1") == ("/usr/lib/libx.so.1.2", None)


def test_realpath_reports_loops_and_broken_links(tmp_path):
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    os.symlink("missing", tmp_path / "c")
    root = Root(str(tmp_path))
    assert "symlink loop" in root.realpath("/a")[1]
    assert root.realpath("/c")[1] == "/missing does not exist"


def test_read_text_reports_unreadable_files(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("x")

    def denied(path, mode="rb"):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(probe_common, "open_file", denied)
    text, reason = Root(str(tmp_path)).read_text("/f")
    assert text is None
    assert reason == "cannot read /f: Permission denied"


def test_run_command_missing_and_failing():
    assert probe_common.run_command(["/nonexistent/cmd"])[0] is None
    rc, _, _, reason = probe_common.run_command(["sh", "-c", "echo bad >&2; exit 3"])
    assert rc == 3
    assert reason == "sh exited 3: bad"
    rc, out, _, _ = probe_common.run_command(["sh", "-c", "echo $LC_ALL"])
    assert out.strip() == "C"
