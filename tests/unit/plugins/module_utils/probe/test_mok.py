"""probe_mok: the MOK files nvidia_facts is given (mok_paths -> driver.mok_files): key, certificate."""

import base64
import hashlib

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import common as probe_common
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import facts as probe_facts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import mok as probe_mok
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root

PEM_KEY = b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
PEM_CERT = b"subject=CN=x\n-----BEGIN CERTIFICATE-----\r\nMIIDCzCCAfOgAwIBAgIU\n-----END CERTIFICATE-----\n"
DER = b"\x30\x82\x00\x04" + b"cert"  # a DER SEQUENCE of 4 bytes: what shim's MokListRT hashes
ABSENT = {"exists": False, "private_key": None, "certificate": None, "certificate_sha256": None}


def test_private_key_and_certificate_recognition():
    assert probe_mok.is_private_key(PEM_KEY)
    assert probe_mok.is_private_key(b"-----BEGIN RSA PRIVATE KEY-----\r\nMIIE\n")
    assert probe_mok.is_private_key(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n")
    assert not probe_mok.is_private_key(PEM_CERT)
    assert not probe_mok.is_private_key(b"\x30\x82\x03\x0b")
    assert not probe_mok.is_private_key(b"x" * probe_mok.MOK_READ + PEM_KEY)  # past the first 64 KiB
    assert probe_mok.is_certificate(PEM_CERT)
    assert probe_mok.is_certificate(b"\x30\x82\x03\x0b\x30\x82")
    assert not probe_mok.is_certificate(PEM_KEY)
    assert not probe_mok.is_certificate(b"")


def test_a_pem_certificate_hashes_as_its_der():
    pem = b"-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(DER) + b"-----END CERTIFICATE-----\n"
    digest = probe_mok.certificate_sha256
    assert digest(pem) == digest(DER) == hashlib.sha256(DER).hexdigest()
    assert digest(b"\x30\x82\x03\x0b\x30") is None  # shorter than its own length
    assert digest(b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----") is None


def test_each_path_gets_its_verdicts(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root/MOK.priv").write_bytes(PEM_KEY)
    (tmp_path / "root/MOK.der").write_bytes(DER + b"trailing bytes are not the certificate")
    (tmp_path / "root/dir").mkdir()
    paths = ["/root/MOK.priv", "/root/MOK.der", "/root/MOK.der", "", "/nope.priv", "/root/dir"]
    files, reason = probe_mok.probe(Root(str(tmp_path)), paths)
    assert reason is None
    assert files == {
        "/root/MOK.priv": {
            "exists": True,
            "private_key": True,
            "certificate": False,
            "certificate_sha256": None,
        },
        "/root/MOK.der": {
            "exists": True,
            "private_key": False,
            "certificate": True,
            "certificate_sha256": hashlib.sha256(DER).hexdigest(),
        },
        "/nope.priv": ABSENT,
        "/root/dir": ABSENT,  # not a file: "does not exist" for the plan, as before
    }
    assert probe_mok.probe(Root(str(tmp_path)), []) == ({}, None)


def test_an_unreadable_file_exists_and_is_not_judged(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/MOK.priv").write_bytes(PEM_KEY)

    def denied(path, mode="rb"):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(probe_common, "open_file", denied)
    files, reason = probe_mok.probe(Root(str(tmp_path)), ["/etc/MOK.priv"])
    assert files == {"/etc/MOK.priv": {**ABSENT, "exists": True}}
    assert reason == "cannot read /etc/MOK.priv: Permission denied"


def test_the_driver_subset_reports_the_mok_paths(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/MOK.priv").write_bytes(PEM_KEY)
    facts = probe_facts.gather(str(tmp_path), ["driver"], mok_paths=["/etc/MOK.priv", "/etc/MOK.der"])
    assert facts["driver"]["mok_files"] == {
        "/etc/MOK.priv": {
            "exists": True,
            "private_key": True,
            "certificate": False,
            "certificate_sha256": None,
        },
        "/etc/MOK.der": ABSENT,
    }
    assert "mok_files" not in facts["driver"]["reasons"]
    assert probe_facts.gather(str(tmp_path), ["driver"])["driver"]["mok_files"] == {}
