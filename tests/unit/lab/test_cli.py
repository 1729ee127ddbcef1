"""Bad input to the lab CLI: one line on stderr that says what to do, no traceback."""

import pytest

import lab
from lab import cli, engine, images, mirror, repo, serve


def _run(capsys, argv):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.err.strip()


def test_unknown_image(capsys):
    code, err = _run(capsys, ["images", "centos7"])
    assert code == 1
    assert err.count("\n") == 0
    assert err.startswith("lab: error: unknown image 'centos7': choose from debian12")


def test_bad_cudnn_version(capsys):
    code, err = _run(capsys, ["mirror", "build", "--cudnn", "9.14"])
    assert code == 1
    assert err.count("\n") == 0
    assert "'9.14'" in err


def test_bad_variant(capsys):
    code, err = _run(capsys, ["mirror", "build", "--variants", "11"])
    assert code == 1
    assert "--variants" in err


def test_bad_host_count(capsys):
    code, err = _run(capsys, ["hosts", "up", "--count", "0"])
    assert code == 1
    assert "--count 0" in err


@pytest.mark.parametrize(
    "euid,release,needle",
    [
        (1000, {"ID": "debian"}, "sudo python3 -m lab docker"),
        (1000, {"ID": "ubuntu", "ID_LIKE": "debian"}, "sudo python3 -m lab docker"),
        (0, {"ID": "fedora"}, "install Docker Engine"),
    ],
)
def test_docker_missing_and_not_allowed(capsys, monkeypatch, euid, release, needle):
    monkeypatch.setattr(engine, "docker_answers", lambda: False)
    monkeypatch.setattr(engine.os, "geteuid", lambda: euid)
    monkeypatch.setattr(engine, "os_release", lambda: release)
    code, err = _run(capsys, ["docker"])
    assert code == 2
    assert err.count("\n") == 0
    assert needle in err


def test_root_on_debian_may_install():
    assert engine.what_to_do(0, {"ID": "debian"}) is None
    assert engine.what_to_do(0, {"ID": "linuxmint", "ID_LIKE": "ubuntu debian"}) is None


def test_os_release_parsing(tmp_path):
    path = tmp_path / "os-release"
    path.write_text('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n')
    assert engine.os_release(str(path)) == {
        "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)",
        "ID": "debian",
        "VERSION_ID": "12",
    }
    assert engine.os_release(str(tmp_path / "missing")) == {}


def test_inotify_raised_when_low(tmp_path):
    knob = tmp_path / "max_user_instances"
    knob.write_text("128\n")
    logs = []
    engine.ensure_inotify(logs.append, path=str(knob))
    assert knob.read_text() == str(engine.INOTIFY_MIN)
    assert "128 -> 1024" in logs[0]
    engine.ensure_inotify(logs.append, path=str(knob))
    assert len(logs) == 1


def test_inotify_kept_when_high_enough(tmp_path):
    knob = tmp_path / "max_user_instances"
    knob.write_text("8192\n")
    engine.ensure_inotify(pytest.fail, path=str(knob))
    assert knob.read_text() == "8192\n"


def test_unexpected_error_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(lab, "STATE", tmp_path)  # the lab lock of this test, not the checkout's

    def broken():
        raise OSError("Connection aborted.\nsecond line")

    monkeypatch.setattr(cli, "_client", broken)
    monkeypatch.delenv("LAB_DEBUG", raising=False)
    code, err = _run(capsys, ["mirror", "serve"])
    assert code == 1
    assert err.count("\n") == 0
    assert "mirror failed: OSError: Connection aborted. second line" in err


def test_missing_tool_not_root_is_advice(monkeypatch):
    monkeypatch.setattr(engine.shutil, "which", lambda name: None)
    monkeypatch.setattr(engine.os, "geteuid", lambda: 1000)
    with pytest.raises(lab.LabError) as err:
        engine.ensure_tool("mmdebstrap", ["mmdebstrap", "debian-archive-keyring"])
    assert err.value.code == 2
    assert str(err.value) == (
        "mmdebstrap not found: install mmdebstrap debian-archive-keyring (as root), then rerun"
    )


def test_repo_build_without_a_mirror_says_what_to_do(capsys, monkeypatch, tmp_path):
    for module in (repo, mirror):
        monkeypatch.setattr(module, "STATE", tmp_path)
    monkeypatch.setattr(lab, "STATE", tmp_path)
    code, err = _run(capsys, ["repo", "build"])
    assert code == 1
    assert err.count("\n") == 0
    assert err.endswith("is missing: run `python -m lab mirror build` first")


def test_up_builds_the_repository_after_the_mirror(capsys, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(lab, "STATE", tmp_path)
    monkeypatch.setattr(engine, "ensure", lambda: None)
    monkeypatch.setattr(engine, "ensure_inotify", lambda: None)
    monkeypatch.setattr(engine, "client", lambda: "client")
    monkeypatch.setattr(images, "build", lambda client: calls.append("images"))
    monkeypatch.setattr(mirror, "build", lambda *args: calls.append("mirror"))
    monkeypatch.setattr(repo, "build", lambda: calls.append("repo"))
    monkeypatch.setattr(serve, "serve", lambda client: calls.append("serve") or "172.18.0.2")
    code, _ = _run(capsys, ["up"])
    assert code == 0
    assert calls.index("mirror") < calls.index("repo") < calls.index("serve")
    assert "images" in calls
