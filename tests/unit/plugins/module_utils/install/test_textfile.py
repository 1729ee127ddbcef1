"""install/textfile.py: node_exporter's textfile collector reads every *.prom file of its directory at each
scrape, so the audit's per-node file is written beside it under a name the collector ignores, then renamed."""

import os

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import textfile

TEXT = '# HELP gpufleet_gpus GPUs.\n# TYPE gpufleet_gpus gauge\ngpufleet_gpus{host="gpu01"} 1\n'


def test_written_whole_through_a_temporary_name_the_collector_ignores(tmp_path, monkeypatch):
    seen = []
    replace = os.replace

    def spy(src, dst):
        # the moment before the rename: the collector would read only *.prom files, and there is none yet
        seen.append((os.path.basename(src), sorted(p.name for p in tmp_path.glob("*.prom"))))
        return replace(src, dst)

    monkeypatch.setattr(textfile.os, "replace", spy)
    assert textfile.put(str(tmp_path), "gpufleet.prom", TEXT) == (True, str(tmp_path / "gpufleet.prom"))
    ((temp, proms),) = seen
    assert temp.startswith(".gpufleet.prom.") and temp.endswith(".tmp") and proms == []
    assert (tmp_path / "gpufleet.prom").read_text() == TEXT
    assert sorted(os.listdir(tmp_path)) == ["gpufleet.prom"]  # no temporary file left
    assert (tmp_path / "gpufleet.prom").stat().st_mode & 0o777 == 0o644


def test_unchanged_when_it_holds_the_text_and_check_mode_writes_nothing(tmp_path):
    assert textfile.put(str(tmp_path), "gpufleet.prom", TEXT, check_mode=True)[0] is True
    assert os.listdir(tmp_path) == []
    textfile.put(str(tmp_path), "gpufleet.prom", TEXT)
    assert textfile.put(str(tmp_path), "gpufleet.prom", TEXT)[0] is False
    assert textfile.put(str(tmp_path), "gpufleet.prom", TEXT + "x 1\n", check_mode=True)[0] is True
    assert (tmp_path / "gpufleet.prom").read_text() == TEXT


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    (tmp_path / "gpufleet.prom").write_text(TEXT)

    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(textfile.os, "fsync", full)
    with pytest.raises(textfile.TextfileError, match="cannot write .*gpufleet.prom: No space left on device"):
        textfile.put(str(tmp_path), "gpufleet.prom", "new\n")
    assert sorted(os.listdir(tmp_path)) == ["gpufleet.prom"]
    assert (tmp_path / "gpufleet.prom").read_text() == TEXT


@pytest.mark.parametrize(
    ("directory", "name", "message"),
    [
        ("relative/dir", "gpufleet.prom", "'relative/dir' is not an absolute path"),
        ("/nonexistent/gpufleet-textfile", "gpufleet.prom", "is not a directory on this host"),
        (None, "gpufleet.txt", "'gpufleet.txt' is not a file name ending in .prom"),
        (None, ".gpufleet.prom", "is not a file name ending in .prom"),
        (None, "sub/gpufleet.prom", "is not a file name ending in .prom"),
    ],
)
def test_refused_targets(tmp_path, directory, name, message):
    with pytest.raises(textfile.TextfileError, match=message):
        textfile.put(directory or str(tmp_path), name, TEXT)
    assert os.listdir(tmp_path) == []
