# Copyright: gpufleet contributors
# Apache-2.0
"""MOK files: the key pair DKMS signs the nvidia module with under Secure Boot (``nvidia_driver_mok_key``,
``nvidia_driver_mok_cert``), read for the ``mok_paths`` nvidia_facts is given (facts ``driver.mok_files``).

For each path: whether it is a file under the root, whether its first bytes hold a PEM private key and an
X.509 certificate (PEM or DER), and the certificate's sha256 as shim's MokListRT stores it (the DER bytes;
compared with ``driver.mok_enrolled`` of probe/host.py). The private key is PEM (openssl's
"-----BEGIN PRIVATE KEY-----", also RSA/EC/ENCRYPTED), the certificate PEM or DER (an X.509 DER certificate
is an ASN.1 SEQUENCE with a two-byte length: 0x30 0x82); RFC 7468 sections 2, 5 and 10 (PEM labels), X.690
8.1.3 (long-form length), high. Only the first :data:`MOK_READ` bytes are looked at; nothing of a key is
kept or reported but these verdicts.

Stdlib only, Python >= 3.9. Observes and never raises for what it observes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

MOK_READ = 64 * 1024
_PEM_PRIVATE_KEY = re.compile(rb"^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*$", re.MULTILINE)
_PEM_CERTIFICATE = re.compile(rb"^-----BEGIN CERTIFICATE-----\s*$", re.MULTILINE)
_PEM_CERTIFICATE_BODY = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.DOTALL)


def is_private_key(head):
    """The first bytes of a file hold a PEM private key line."""
    return bool(_PEM_PRIVATE_KEY.search(bytes(head or b"")[:MOK_READ]))


def is_certificate(head):
    """The first bytes of a file are a PEM certificate (its BEGIN line) or a DER one (0x30 0x82)."""
    head = bytes(head or b"")[:MOK_READ]
    return head[:2] == b"\x30\x82" or bool(_PEM_CERTIFICATE.search(head))


def certificate_sha256(head):
    """sha256 (hex) of the DER bytes of the certificate at the start of ``head`` (DER, or the first PEM
    CERTIFICATE block), as shim's MokListRT stores it; None when it cannot be told."""
    head = bytes(head or b"")[:MOK_READ]
    if head[:2] == b"\x30\x82":
        length = 4 + int.from_bytes(head[2:4], "big")
        der = head[:length] if len(head) >= length else None
    else:
        found = _PEM_CERTIFICATE_BODY.search(head)
        try:
            der = base64.b64decode(b"".join(found.group(1).split()), validate=True) if found else None
        except (binascii.Error, ValueError):
            der = None
    return hashlib.sha256(der).hexdigest() if der else None


def mok_file(root, path):
    """({exists, private_key, certificate, certificate_sha256}, reason) of one path (inside ``root``).

    ``private_key`` and ``certificate`` are None (with the reason) when the file cannot be read, and for a
    path that is not a file; ``certificate_sha256`` is set only for a certificate whose DER can be told.
    """
    inner = "/" + str(path).lstrip("/")
    entry = {
        "exists": root.isfile(inner),
        "private_key": None,
        "certificate": None,
        "certificate_sha256": None,
    }
    if not entry["exists"]:
        return entry, None
    head, reason = root.read_bytes(inner, limit=MOK_READ)
    if head is None:
        return entry, reason
    entry.update(private_key=is_private_key(head), certificate=is_certificate(head))
    if entry["certificate"]:
        entry["certificate_sha256"] = certificate_sha256(head)
    return entry, None


def probe(root, paths):
    """({path: mok_file entry} for each non-empty path given, reason or None): fact ``driver.mok_files``."""
    files, reasons = {}, []
    for path in paths or ():
        if not path or path in files:
            continue
        files[path], reason = mok_file(root, path)
        if reason:
            reasons.append(reason)
    return files, "; ".join(reasons) or None
