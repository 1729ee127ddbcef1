# Copyright: gpufleet contributors
# Apache-2.0
"""OpenPGP public keys: ASCII armor, packets and key fingerprints (RFC 4880, RFC 9580). Nothing else.

Stdlib only, Python >= 3.9; reads no file and runs nothing. Shared by the target's two layers:
probe/sources.py (the fingerprints of the keys in a keyring a package source names) and install/repo.py (the
downloaded repository key checked against the pinned fingerprint). A keyring is either ASCII-armored (one or
more ``-----BEGIN PGP PUBLIC KEY BLOCK-----`` blocks, apt's ``.asc``) or binary (``gpg --export``, apt's
``.gpg``); gpg's keybox format (``.kbx``, which apt does not read) is not OpenPGP data.
"""

from __future__ import annotations

import base64
import hashlib

ARMOR_BEGIN = "-----BEGIN PGP"
MAX_PACKETS = 4096  # a keyring of many keys with their signatures; more is not a key file
PUBLIC_KEY, PUBLIC_SUBKEY = 6, 14


class OpenPGPError(ValueError):
    """What is wrong with the data, in one line."""


def _armored_blocks(text):
    """The base64 bodies of every armored block of ``text`` (armor headers and the CRC line dropped)."""
    bodies = []
    for chunk in text.split(ARMOR_BEGIN)[1:]:
        body = chunk.split("\n", 1)[1] if "\n" in chunk else ""
        body = body.split("-----END PGP", 1)[0]
        lines = body.strip().splitlines()
        # skip armor headers (until the first empty line), drop the CRC line
        if any(not line.strip() for line in lines):
            lines = lines[[i for i, line in enumerate(lines) if not line.strip()][0] + 1 :]
        bodies.append("".join(line.strip() for line in lines if line.strip() and not line.startswith("=")))
    return bodies


def dearmor(data):
    """Binary OpenPGP data from ASCII-armored data (every block, in order), or the bytes unchanged if already
    binary."""
    raw = bytes(data) if isinstance(data, (bytes, bytearray)) else str(data).encode("latin-1")
    text = raw.decode("ascii", "replace")
    if ARMOR_BEGIN not in text:
        return raw
    try:
        return b"".join(base64.b64decode(body, validate=False) for body in _armored_blocks(text))
    except (ValueError, TypeError):
        raise OpenPGPError("the key is not valid ASCII-armored OpenPGP data") from None


def _new_length(data, i):
    """(length, header size) of a new-format packet at ``i``."""
    first = data[i + 1]
    if first < 192:
        return first, 2
    if first < 224:
        return ((first - 192) << 8) + data[i + 2] + 192, 3
    if first == 255:
        return int.from_bytes(data[i + 2 : i + 6], "big"), 6
    raise OpenPGPError("partial-length packets are not expected in a key")


def packets(data):
    """(tag, body) of each packet of binary OpenPGP data; OpenPGPError for data that is not OpenPGP."""
    i = count = 0
    while i < len(data):
        count += 1
        if count > MAX_PACKETS:
            raise OpenPGPError(f"more than {MAX_PACKETS} OpenPGP packets: not a key file")
        tag_byte = data[i]
        if not tag_byte & 0x80:
            raise OpenPGPError("the key is not OpenPGP data")
        try:
            if tag_byte & 0x40:  # new format
                tag = tag_byte & 0x3F
                length, hdr = _new_length(data, i)
            else:
                tag = (tag_byte >> 2) & 0x0F
                size = {0: 1, 1: 2, 2: 4}.get(tag_byte & 0x03)
                if size is None:
                    raise OpenPGPError("indeterminate-length packets are not expected in a key")
                length, hdr = int.from_bytes(data[i + 1 : i + 1 + size], "big"), 1 + size
        except IndexError:
            raise OpenPGPError("the key data is truncated") from None
        body = data[i + hdr : i + hdr + length]
        if len(body) != length:
            raise OpenPGPError("the key data is truncated")
        yield tag, body
        i += hdr + length


def fingerprint(body):
    """The fingerprint of a public-key packet body: v4 SHA-1 over 0x99 | len16 | body (40 hex digits), v6
    SHA-256 over 0x9B | len32 | body (RFC 9580, 64 hex digits); None for another version."""
    if body[:1] == b"\x04":
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if body[:1] == b"\x06":
        return hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    return None


def keys(data):
    """[{fingerprint, primary}] of every public key (tag 6) and subkey (tag 14) in armored or binary data,
    in the order they appear; OpenPGPError for data that is not OpenPGP."""
    out = []
    for tag, body in packets(dearmor(data)):
        if tag in (PUBLIC_KEY, PUBLIC_SUBKEY):
            fpr = fingerprint(body)
            if fpr:
                out.append({"fingerprint": fpr, "primary": tag == PUBLIC_KEY})
    return out


def key_fingerprints(data):
    """Fingerprints of the v4 primary keys and subkeys in an OpenPGP key file (the first is the primary
    key's), as the repository key is checked; OpenPGPError when there is none."""
    out = [k["fingerprint"] for k in keys(data) if len(k["fingerprint"]) == 40]
    if not out:
        raise OpenPGPError("no OpenPGP v4 public key found in the key file")
    return out
