"""Baseline validation and drift (module_utils/drift.py)."""

import copy
import json
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.drift import (
    BaselineError,
    compute_drift,
    validate_baseline,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.build import normalize_host

DATA = Path(__file__).resolve().parents[4] / "data" / "audit"


def entry(name):
    return normalize_host(name, "ok", json.loads((DATA / f"{name}.json").read_text()))


H200_BASELINE = {
    "driver_branch": "580",
    "cuda_versions": ["13.0"],
    "cuda_default": "13.0",
    "cudnn_versions": {13: "9.14.0"},
}


def drift_of(name, baseline):
    return compute_drift(entry(name), validate_baseline(baseline))


# -- validation ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("empty", [None, {}, ""])
def test_empty_baseline_is_none(empty):
    assert validate_baseline(empty) is None


def test_normalized_baseline():
    got = validate_baseline(
        {"driver_branch": "R580", "cuda_versions": "13.0", "cudnn_versions": {"13": "9.14"}}
    )
    assert got == {
        "driver_branch": 580,
        "cuda_versions": ["13.0"],
        "cuda_default": None,
        "cudnn_versions": {13: "9.14"},
        "cudnn_scope": "system",
    }


@pytest.mark.parametrize(
    ("baseline", "names"),
    [
        ({"cuda_version": "13.0"}, ["gpufleet_baseline", "'cuda_version'", "allowed keys", "cuda_versions"]),
        ("580", ["gpufleet_baseline", "not a mapping"]),
        ({"driver_branch": "580.95"}, ["gpufleet_baseline.driver_branch", "'580.95'"]),
        ({"driver_branch": "latest"}, ["gpufleet_baseline.driver_branch", "'latest'"]),
        ({"cuda_versions": ["13"]}, ["gpufleet_baseline.cuda_versions[0]", "'13'"]),
        ({"cuda_versions": [12.8]}, ["gpufleet_baseline.cuda_versions[0]", "quote versions"]),
        ({"cuda_versions": {"a": 1}}, ["gpufleet_baseline.cuda_versions", "a list"]),
        ({"cuda_default": "thirteen"}, ["gpufleet_baseline.cuda_default", "'thirteen'"]),
        ({"cudnn_versions": ["9.14"]}, ["gpufleet_baseline.cudnn_versions", "mapping of CUDA major"]),
        ({"cudnn_versions": {"cu13": "9.14"}}, ["gpufleet_baseline.cudnn_versions", "'cu13'", "CUDA majors"]),
        ({"cudnn_versions": {13: "9.x"}}, ["gpufleet_baseline.cudnn_versions.13", "'9.x'"]),
        ({"cudnn_scope": "pip"}, ["gpufleet_baseline.cudnn_scope", "'pip'", "system, all"]),
    ],
)
def test_malformed_baseline_names_the_key(baseline, names):
    with pytest.raises(BaselineError) as exc:
        validate_baseline(baseline)
    for text in names:
        assert text in str(exc.value)


def test_error_names_the_host_variable():
    with pytest.raises(BaselineError, match=r"^gpufleet_baseline \(host gpu01\)\.driver_branch"):
        validate_baseline({"driver_branch": "x"}, name="gpufleet_baseline (host gpu01)")


# -- drift -----------------------------------------------------------------------------------------------
def test_h200_matches_its_baseline():
    assert drift_of("h200", H200_BASELINE) == []


def test_no_baseline_no_drift():
    assert compute_drift(entry("h200"), None) == []


def test_cudnn_prefix_matches_patch_releases():
    assert drift_of("h200", {"cudnn_versions": {13: "9.14"}}) == []
    assert drift_of("h200", {"cudnn_versions": {13: "9"}}) == []


def test_cudnn_version_drift_names_copy():
    (item,) = drift_of("h200", {"cudnn_versions": {13: "9.19.0"}})
    assert item["component"] == "cudnn"
    assert item["key"] == "cudnn_versions.13"
    assert item["expected"] == "9.19.0"
    assert item["actual"] == "9.14.0"
    assert item["path"] == "/usr"
    assert "found 9.14.0 (deb at /usr)" in item["message"]


def test_pip_copies_ignored_by_default_counted_with_scope_all():
    base = {"cudnn_versions": {13: "9.14.0"}}
    assert drift_of("h200", base) == []
    (item,) = drift_of("h200", dict(base, cudnn_scope="all"))
    assert item["actual"] == "9.19.0"
    assert "pip" in item["message"]


def test_missing_cudnn_for_a_major():
    items = drift_of("h200", {"cudnn_versions": {12: "9.14", 13: "9.14"}})
    assert [(i["key"], i["actual"]) for i in items] == [("cudnn_versions.12", "missing")]


def test_unexpected_cudnn_major():
    items = drift_of("oldtrain", {"cudnn_versions": {12: "9.10.2"}})
    assert [(i["key"], i["actual"], i["path"]) for i in items] == [
        ("cudnn_versions", "9.14.0", "/usr/local/cuda-13.0")
    ]


def test_driver_branch_drift():
    (item,) = drift_of("oldtrain", {"driver_branch": 580})
    assert (item["component"], item["expected"], item["actual"]) == ("driver", "580", "575")
    assert "575.57.08" in item["message"]


def test_driver_missing_is_drift():
    (item,) = drift_of("nogpu", {"driver_branch": "580"})
    assert item["actual"] == "none"


def test_driver_unknown_is_drift():
    e = entry("h200")
    e["driver"]["version"] = "unknown"
    e["driver"]["installed"] = None
    (item,) = compute_drift(e, validate_baseline({"driver_branch": "580"}))
    assert item["actual"] == "unknown"


def test_cuda_missing_and_extra_toolkits():
    items = drift_of("oldtrain", {"cuda_versions": ["12.8", "12.9"]})
    assert sorted((i["expected"], i["actual"]) for i in items) == [
        ("12.8, 12.9", "13.0.2"),
        ("12.9", "missing"),
    ]


def test_cuda_exact_version():
    assert drift_of("h200", {"cuda_versions": ["13.0.2"]}) == []
    (item,) = [i for i in drift_of("h200", {"cuda_versions": ["13.0.1"]}) if i["actual"] == "missing"]
    assert item["expected"] == "13.0.1"


def test_cuda_default_drift():
    (item,) = drift_of("oldtrain", {"cuda_default": "12.8"})
    assert (item["key"], item["actual"], item["path"]) == ("cuda_default", "13.0.2", "/usr/local/cuda-13.0")
    e = entry("h200")
    e["cuda"]["default"] = None
    (item,) = compute_drift(e, validate_baseline({"cuda_default": "13.0"}))
    assert item["actual"] == "none"


def test_drift_does_not_modify_the_entry():
    e = entry("oldtrain")
    before = copy.deepcopy(e)
    compute_drift(e, validate_baseline(H200_BASELINE))
    assert e == before


# -- a baseline every host would drift from forever, and text that would forge report lines ---------------
def test_a_default_outside_its_own_cuda_versions_is_refused():
    with pytest.raises(BaselineError) as exc:
        validate_baseline({"cuda_versions": ["13.0"], "cuda_default": "12.8"})
    message = str(exc.value)
    assert message.startswith("gpufleet_baseline.cuda_default: '12.8' is not valid;"), message
    assert "not in gpufleet_baseline.cuda_versions (13.0)" in message
    # a default that one of the versions matches (or that matches one of them) is consistent
    for versions, default in ((["13.0"], "13.0.2"), (["13.0.2", "12.8"], "13.0"), (["12.8", "13.0"], "12.8")):
        assert (
            validate_baseline({"cuda_versions": versions, "cuda_default": default})["cuda_default"] == default
        )
    # either one alone is not compared
    assert validate_baseline({"cuda_default": "12.8"})["cuda_default"] == "12.8"


@pytest.mark.parametrize(
    ("baseline", "where"),
    [
        ({"driver_branch": "580\n"}, "gpufleet_baseline.driver_branch"),
        ({"cuda_versions": ["13.0", "12.8\r"]}, "gpufleet_baseline.cuda_versions[1]"),
        ({"cuda_default": "\t13.0"}, "gpufleet_baseline.cuda_default"),
        ({"cudnn_versions": {"13\n": "9.14"}}, "gpufleet_baseline.cudnn_versions"),
        ({"cudnn_versions": {13: "9.14\n# forged"}}, "gpufleet_baseline.cudnn_versions.13"),
        ({"consumers_cudnn": {"/opt/torch\nx": "9.19"}}, "gpufleet_baseline.consumers_cudnn"),
    ],
)
def test_a_control_character_anywhere_in_a_baseline_is_refused(baseline, where):
    with pytest.raises(BaselineError) as exc:
        validate_baseline(baseline)
    message = str(exc.value)
    assert message.startswith(f"{where}: "), message
    assert "control character" in message, message
