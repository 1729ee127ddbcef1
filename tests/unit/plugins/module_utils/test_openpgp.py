"""module_utils/openpgp.py: the keys of armored and binary OpenPGP data, the fingerprints gpg reports
(tests/data/keys/README.md); shared by probe/sources.py (keyrings) and install/repo.py (the repository
key)."""

import base64
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils import openpgp

KEYS = Path(__file__).resolve().parents[3] / "data" / "keys"
RSA = (KEYS / "test-signing-key.asc").read_bytes()
RSA_FPR = "C3B19113CF573F8BF336BC36548F7B3414DA5E58"
ED25519 = (KEYS / "test-second-key.asc").read_bytes()
ED25519_FPR = "CF2406E135EA14C3660B3CE6AD0E292DE5243B04"


def binary(armored):
    """What `gpg --dearmor` writes, decoded here without the module's armor reader (an independent path)."""
    lines = armored.decode().split("\n\n", 1)[1].split("-----END", 1)[0].splitlines()
    return base64.b64decode("".join(line for line in lines if not line.startswith("=")))


def test_armored_and_binary_keys_have_the_fingerprints_gpg_reports():
    for data, fpr in ((RSA, RSA_FPR), (ED25519, ED25519_FPR)):
        assert openpgp.keys(data) == [{"fingerprint": fpr, "primary": True}]
        assert openpgp.keys(binary(data)) == [{"fingerprint": fpr, "primary": True}]
        assert openpgp.key_fingerprints(binary(data)) == [fpr]


def test_a_keyring_of_two_keys_lists_both_in_order():
    assert [k["fingerprint"] for k in openpgp.keys(binary(RSA) + binary(ED25519))] == [RSA_FPR, ED25519_FPR]
    # an .asc of two armored blocks, as `cat a.asc b.asc` makes it
    assert [k["fingerprint"] for k in openpgp.keys(ED25519 + b"\n" + RSA)] == [ED25519_FPR, RSA_FPR]


def test_a_subkey_is_reported_as_not_primary():
    key = binary(RSA)
    first_tag, first_body = next(openpgp.packets(key))
    assert first_tag == openpgp.PUBLIC_KEY
    # the primary key's body again as a subkey packet (old format, tag 14, two-byte length)
    subkey = bytes([0x80 | (14 << 2) | 1]) + len(first_body).to_bytes(2, "big") + first_body
    assert openpgp.keys(key + subkey)[1] == {"fingerprint": RSA_FPR, "primary": False}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"<html>404</html>", "not OpenPGP data"),
        (b"\x00\x01garbage", "not OpenPGP data"),
        (binary(RSA)[:100], "truncated"),
        (b"\xc6", "truncated"),  # a new-format header without its length
    ],
)
def test_data_that_is_not_a_key_is_a_one_line_error(data, words):
    with pytest.raises(openpgp.OpenPGPError, match=words):
        openpgp.keys(data)


def test_no_key_is_an_error_for_a_key_file_and_empty_for_a_keyring():
    assert openpgp.keys(b"") == []
    with pytest.raises(openpgp.OpenPGPError, match="no OpenPGP v4 public key"):
        openpgp.key_fingerprints(b"")


def test_a_v6_key_has_a_sha256_fingerprint():
    body = b"\x06" + bytes(41)
    packet = bytes([0xC0 | openpgp.PUBLIC_KEY, len(body)]) + body
    (found,) = openpgp.keys(packet)
    assert len(found["fingerprint"]) == 64 and found["primary"]
    with pytest.raises(openpgp.OpenPGPError, match="no OpenPGP v4"):
        openpgp.key_fingerprints(packet)  # the pinned fingerprints are v4's 40 hex digits
