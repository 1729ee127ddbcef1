"""Version parsing: accepted forms, rejections with a clear message, ordering, and fuzzing."""

import contextlib

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import (
    ACCEPTED_FORMS,
    Version,
    VersionError,
    max_version,
    parse_branch,
    parse_version,
    try_parse_version,
    version_cmp,
    version_compare,
)
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("value", "parts", "text"),
    [
        ("12.8", (12, 8), "12.8"),
        ("12.8.1", (12, 8, 1), "12.8.1"),
        ("12-8", (12, 8), "12.8"),
        ("580", (580,), "580"),
        ("R580", (580,), "580"),
        ("r580", (580,), "580"),
        ("580.95.05", (580, 95, 5), "580.95.05"),
        ("9.14.0.64", (9, 14, 0, 64), "9.14.0.64"),
        (" 13.0 ", (13, 0), "13.0"),
        (580, (580,), "580"),
        (12.8, (12, 8), "12.8"),
        (13, (13,), "13"),
    ],
)
def test_accepted_forms(value, parts, text):
    v = parse_version(value, "p")
    assert v.parts == parts
    assert str(v) == text


@pytest.mark.parametrize(
    "value",
    [
        "",
        " ",
        "twelve",
        "12.x",
        "12.",
        ".12",
        "12..8",
        "12.8-1",
        "1.2.3.4.5",
        "v12.8",
        "RR580",
        "12_8",
        "1234567",
        "١٢",
        "12.8\n1",
        None,
        True,
        False,
        [],
        {},
        float("nan"),
        float("inf"),
        -1.0,
    ],
)
def test_rejected_forms_name_the_parameter(value):
    with pytest.raises(VersionError) as err:
        parse_version(value, "cuda_version")
    msg = str(err.value)
    assert msg.startswith("cuda_version: ")
    assert ACCEPTED_FORMS in msg


def test_version_error_is_value_error():
    assert issubclass(VersionError, ValueError)


def test_part_limits():
    assert parse_version("580", "driver_branch", max_parts=1).major == 580
    with pytest.raises(VersionError, match=r"^driver_branch: '580.95' .*1 numeric component"):
        parse_version("580.95", "driver_branch", max_parts=1)
    with pytest.raises(VersionError, match="2 to 4"):
        parse_version("12", "cuda_version", min_parts=2)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("12.8", "12.8.0", 0),
        ("12.8", "12.9", -1),
        ("12.10", "12.9", 1),
        ("580.95.05", "580.159.04", -1),
        ("580.65.06", "580.65.6", 0),
        ("R580", "580", 0),
        ("9.14.0.64", "9.14.0", 1),
        ("13.0", "12.9.1", 1),
    ],
)
def test_cmp(a, b, expected):
    assert version_cmp(a, b) == expected


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("<", True),
        ("lt", True),
        ("<=", True),
        ("le", True),
        ("==", False),
        ("eq", False),
        ("=", False),
        ("!=", True),
        ("ne", True),
        ("<>", True),
        (">=", False),
        ("ge", False),
        (">", False),
        ("gt", False),
    ],
)
def test_compare_ops(op, expected):
    assert version_compare("12.8", "13.0", op) is expected


def test_compare_bad_operator():
    with pytest.raises(VersionError, match="operator: '~' is not a comparison operator"):
        version_compare("1", "2", "~")


def test_compare_names_the_bad_side():
    with pytest.raises(VersionError, match="^right: 'x'"):
        version_compare("1", "x", "<", "left", "right")


def test_version_object():
    v = parse_version("12.8.1")
    assert (v.major, v.minor, v.patch) == (12, 8, 1)
    assert parse_version("580").minor == 0
    assert parse_version("580").patch == 0
    assert str(v.truncate(2)) == "12.8"
    assert v.startswith("12.8")
    assert not v.startswith("12.9")
    assert v.startswith(parse_version("12"))
    assert v == "12.8.1"
    assert v != "12.8"
    assert v > "12.8"
    assert v >= (12, 8, 1)
    assert v < 13
    assert v <= "12.8.1"
    assert hash(v) == hash(parse_version("12.8.1.0"))
    assert repr(v) == "Version('12.8.1')"
    assert (v == object()) is False
    assert parse_version(v) is v
    assert Version((1, 2)) == Version([1, 2, 0])
    with pytest.raises(VersionError):
        Version(())


def test_helpers():
    assert parse_branch("580.95.05") == 580
    assert parse_branch("R570") == 570
    assert try_parse_version("nope") is None
    assert try_parse_version("1.2") == "1.2"
    assert max_version([parse_version("12.9"), parse_version("13.0"), parse_version("12.10")]) == "13.0"
    assert max_version([]) is None


@given(st.text())
def test_fuzz_text_only_version_error(value):
    try:
        v = parse_version(value, "fuzz")
    except VersionError as err:
        assert str(err).startswith("fuzz: ")
    else:
        assert 1 <= len(v.parts) <= 4
        assert parse_version(str(v)) == v


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.binary(), st.lists(st.integers())))
def test_fuzz_other_types_only_version_error(value):
    with contextlib.suppress(VersionError):
        parse_version(value, "fuzz")


@given(st.from_regex(r"\A[Rr]?[0-9]{1,6}([.][0-9]{1,6}){0,3}\Z"))
def test_fuzz_valid_roundtrip(value):
    v = parse_version(value)
    assert version_cmp(str(v), value) == 0


@pytest.mark.parametrize("value", [10**5000, -1, 10**6], ids=["huge", "negative", "million"])
def test_out_of_range_ints(value):
    with pytest.raises(VersionError):
        parse_version(value, "p")
