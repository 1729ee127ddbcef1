"""scripts/kb_refresh.py, offline: NVIDIA-format saved copies under tests/data/kb/ (see its README.md)."""

import functools
import http.server
import importlib.util
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests/data/kb"
GPUS = DATA / "supported-gpus"


def _load():
    spec = importlib.util.spec_from_file_location("kb_refresh", ROOT / "scripts/kb_refresh.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kb_refresh = _load()


@pytest.fixture
def small_kb(tmp_path):
    """A gpu_ids.py generated from the trimmed R580 copy, and its input (copies: --write may replace them)."""
    gen = kb_refresh._load("gen_gpu_ids", ROOT / "scripts/gen_gpu_ids.py")
    src = tmp_path / "supported-gpus.json"
    shutil.copyfile(GPUS / "supported-gpus-r580-trimmed.json", src)
    out = tmp_path / "gpu_ids.py"
    out.write_text(gen.render(src), encoding="utf-8")
    return out, src


def test_the_kb_agrees_with_its_own_nvidia_inputs(capsys):
    """The full R580 supported-gpus.json (gpu_ids.py's input) and the saved 9.14.0/9.28.0 manifests agree."""
    status = kb_refresh.main(
        ["--supported-gpus", str(ROOT / "tests/data/compat/supported-gpus-r580.json"),
         "--cudnn-redist", str(DATA / "cudnn-redist")]
    )  # fmt: skip
    assert status == 0
    out = capsys.readouterr().out
    assert "gpu_ids: the knowledge base agrees" in out
    assert "cudnn: the knowledge base agrees" in out


def test_supported_gpus_rows_that_changed_are_reported(small_kb, capsys):
    gpu_ids, gpu_json = small_kb
    args = ["--supported-gpus", str(GPUS / "supported-gpus-next.json"), "--gpu-ids", str(gpu_ids)]
    assert kb_refresh.main([*args, "--gpu-json", str(gpu_json)]) == 1
    out = capsys.readouterr().out
    assert "gpu_ids: added 3300: None -> ('NVIDIA Future GPU', '', 'O')" in out
    assert "gpu_ids: removed 1DB5: ('Tesla V100-SXM2-32GB', '580.xx', 'O') -> None" in out
    assert (
        "gpu_ids: changed 2B85: ('NVIDIA GeForce RTX 5090', '', 'O') -> ('NVIDIA GeForce RTX 5090 D'," in out
    )
    assert (
        "gpu_ids: changed 2335:10DE:18BF: ('NVIDIA H200', '', 'E') -> ('NVIDIA H200', '620.xx', 'E')" in out
    )
    assert "ENTRIES_IN_SOURCE: 6 -> 6" not in out


def test_write_regenerates_gpu_ids_and_then_agrees(small_kb, capsys):
    gpu_ids, gpu_json = small_kb
    args = ["--supported-gpus", str(GPUS / "supported-gpus-next.json"), "--gpu-ids", str(gpu_ids)]
    args += ["--gpu-json", str(gpu_json)]
    assert kb_refresh.main([*args, "--write"]) == 1
    assert "NVIDIA Future GPU" in gpu_ids.read_text(encoding="utf-8")
    assert gpu_json.read_bytes() == (GPUS / "supported-gpus-next.json").read_bytes()
    capsys.readouterr()
    assert kb_refresh.main(args) == 0


def test_supported_gpus_from_an_extracted_driver_directory(tmp_path, small_kb):
    gpu_ids, gpu_json = small_kb
    tree = tmp_path / "extracted/NVIDIA-Linux-x86_64-999.1/supported-gpus"
    tree.mkdir(parents=True)
    shutil.copyfile(GPUS / "supported-gpus-r580-trimmed.json", tree / "supported-gpus.json")
    args = [
        "--supported-gpus",
        str(tmp_path / "extracted"),
        "--gpu-ids",
        str(gpu_ids),
        "--gpu-json",
        str(gpu_json),
    ]
    assert kb_refresh.main(args) == 0


def test_a_cudnn_release_without_the_cuda12_build_is_reported(capsys):
    """9.29.0 (edited copy) builds cuda13 only: the cuda12 row ends at 9.28.0, NEWEST_KNOWN moves."""
    assert kb_refresh.main(["--cudnn-redist", str(DATA / "cudnn-redist-next")]) == 1
    out = capsys.readouterr().out
    assert "cudnn: changed VARIANTS cuda12 last: None -> '9.28.0'" in out
    assert "cudnn: changed NEWEST_KNOWN: '9.28.1' -> '9.29.0'" in out
    assert "cuda13" not in out


def test_variants_are_read_from_the_manifest():
    texts = kb_refresh._manifest_texts(DATA / "cudnn-redist-next", "8.9.0")
    assert kb_refresh.cudnn_variants(texts) == {"9.14.0": [12, 13], "9.28.0": [12, 13], "9.29.0": [13]}


@pytest.fixture
def redist_server():
    """NVIDIA's redist layout served from the saved copies on 127.0.0.1 (the online path, offline)."""
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(DATA / "cudnn-redist-next")
    )
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_cudnn_redist_url_index_and_manifests(redist_server, capsys):
    assert kb_refresh.main(["--cudnn-redist", redist_server]) == 1
    assert "VARIANTS cuda12 last: None -> '9.28.0'" in capsys.readouterr().out


def test_unreachable_source_says_so_and_exits_2(capsys):
    assert kb_refresh.main(["--cudnn-redist", "http://127.0.0.1:9/"]) == 2
    assert "cudnn: http://127.0.0.1:9/: not reachable" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"devices": []}', "not NVIDIA's supported-gpus.json format"),
        ("", "not NVIDIA's supported-gpus.json"),
    ],
)
def test_a_file_that_is_not_supported_gpus_json_is_refused(tmp_path, capsys, text, error):
    bad = tmp_path / "supported-gpus.json"
    bad.write_text(text, encoding="utf-8")
    assert kb_refresh.main(["--supported-gpus", str(bad), "--no-network"]) == 2
    assert error in capsys.readouterr().err


def test_nothing_to_read_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(kb_refresh, "INSTALLED_SUPPORTED_GPUS", Path("/nonexistent/supported-gpus.json"))
    assert kb_refresh.main(["--no-network"]) == 2
    assert "no source given or found" in capsys.readouterr().err


def test_the_sbsa_entries_of_the_manifests_are_read_and_a_missing_variant_reported(capsys):
    """linux-sbsa against linux-x86_64 per release (cudnn-redist-sbsa: 9.28.0's sbsa entry without cuda12, an
    edited copy): the gap is reported as a PLATFORM_GAPS row; 9.14.0's full sbsa entry agrees."""
    texts = kb_refresh._manifest_texts(DATA / "cudnn-redist-sbsa", "8.9.0")
    assert kb_refresh.cudnn_platforms(texts) == {
        "9.14.0": {"linux-x86_64": [12, 13], "linux-sbsa": [12, 13]},
        "9.28.0": {"linux-x86_64": [12, 13], "linux-sbsa": [13]},
    }
    assert kb_refresh.main(["--cudnn-redist", str(DATA / "cudnn-redist-sbsa")]) == 1
    out = capsys.readouterr().out
    assert "cudnn: added PLATFORM_GAPS linux-sbsa cuda12: None -> '9.28.0'" in out
    assert "9.14.0" not in out
    known = type("kb", (), {"PLATFORM_GAPS": (("linux-sbsa", 12, "9.28.0", None, "high"),)})
    assert kb_refresh.diff_platforms(kb_refresh.cudnn_platforms(texts), known) == []
    known.PLATFORM_GAPS = (("linux-sbsa", 12, "9.0.0", None, "high"),)  # 9.14.0 has the build
    assert kb_refresh.diff_platforms(kb_refresh.cudnn_platforms(texts), known) == [
        ("removed", "PLATFORM_GAPS linux-sbsa cuda12", "9.14.0", None)
    ]
