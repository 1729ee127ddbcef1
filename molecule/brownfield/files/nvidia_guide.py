#!/usr/bin/env python3
"""Set a host up as NVIDIA's installation guide does (network repository, cuda-keyring), against the lab's
NVIDIA-layout apt repository: molecule brownfield, host group nvidia_guide (issue 36).

Runs inside the instance, as root. Stdlib only (Python 3.9+).

  nvidia_guide.py keyring REPO_URL DIST KEY_FILE FINGERPRINT WORK

builds and installs (dpkg -i) a package cuda-keyring 1.1-1 in NVIDIA's layout: its
/etc/apt/sources.list.d/cuda-<DIST>-x86_64.list holds
``deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] REPO_URL/DIST/x86_64/ /`` (a conffile) and
/usr/share/keyrings/cuda-archive-keyring.gpg the repository's key, binary (``gpg --dearmor``'s output), read
from REPO_URL/DIST/x86_64/KEY_FILE (the lab signs its repository with its own key, published under the file
name NVIDIA's repository uses). The key's armor is decoded here, without gpg; its fingerprint must be
FINGERPRINT (the lab's repo-key/fingerprint). Prints {"deb", "list", "keyring"} as JSON.

  nvidia_guide.py update

runs ``apt-get update`` with every source of the host (LC_ALL=C) and prints {"rc", "output"} as JSON (stdout
and stderr together): what an admin sees.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import urllib.request

KEYRING = "/usr/share/keyrings/cuda-archive-keyring.gpg"
CONTROL = """Package: cuda-keyring
Version: 1.1-1
Architecture: all
Maintainer: cudatools <cudatools@nvidia.com>
Section: multiverse/misc
Priority: optional
Description: GPG keyring for the CUDA repository
 The gpufleet lab's stand-in for NVIDIA's cuda-keyring (molecule brownfield): the lab repository's key.
"""


def dearmor(text):
    """The binary key of an ASCII-armored public key block."""
    body = text.split("-----BEGIN PGP PUBLIC KEY BLOCK-----", 1)[1].split("-----END", 1)[0]
    lines = body.strip().split("\n\n", 1)[-1].splitlines()
    data = "".join(line.strip() for line in lines if line.strip() and not line.startswith("="))
    return base64.b64decode(data)


def v4_fingerprint(key):
    """The fingerprint of the first public-key packet (old or new format header), RFC 4880 12.2."""
    tag = key[0]
    if tag & 0x40:
        first = key[1]
        length, start = (first, 2) if first < 192 else (((first - 192) << 8) + key[2] + 192, 3)
    else:
        size = {0: 1, 1: 2, 2: 4}[tag & 0x03]
        length, start = int.from_bytes(key[1 : 1 + size], "big"), 1 + size
    body = key[start : start + length]
    return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()


def main(repo_url, dist, key_file, fingerprint, work):
    url = f"{repo_url.rstrip('/')}/{dist}/x86_64/"
    with urllib.request.urlopen(url + key_file, timeout=60) as src:
        key = dearmor(src.read().decode("ascii"))
    if v4_fingerprint(key) != fingerprint.replace(" ", "").upper():
        sys.exit(f"{url}{key_file}: fingerprint {v4_fingerprint(key)}, the lab's is {fingerprint}")
    tree = os.path.join(work, "cuda-keyring")
    listing = f"/etc/apt/sources.list.d/cuda-{dist}-x86_64.list"
    files = {listing: f"deb [signed-by={KEYRING}] {url} /\n".encode(), KEYRING: key}
    for path, data in files.items():
        os.makedirs(os.path.dirname(tree + path), exist_ok=True)
        with open(tree + path, "wb") as out:
            out.write(data)
        os.chmod(tree + path, 0o644)
    os.makedirs(os.path.join(tree, "DEBIAN"), exist_ok=True)
    for name, text in (("control", CONTROL), ("conffiles", listing + "\n")):
        with open(os.path.join(tree, "DEBIAN", name), "w", encoding="utf-8") as out:
            out.write(text)
    deb = os.path.join(work, "cuda-keyring_1.1-1_all.deb")
    build = ["dpkg-deb", "--root-owner-group", "-Znone", "-b", tree, deb]
    subprocess.run(build, check=True, capture_output=True)
    subprocess.run(["dpkg", "-i", deb], check=True, capture_output=True)
    print(json.dumps({"deb": deb, "list": listing, "keyring": KEYRING}))


def update():
    env = dict(os.environ, LC_ALL="C", LANG="C")
    done = subprocess.run(["apt-get", "update"], capture_output=True, text=True, env=env, check=False)
    print(json.dumps({"rc": done.returncode, "output": done.stdout + done.stderr}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["update"]:
        update()
    elif sys.argv[1:2] == ["keyring"] and len(sys.argv) == 7:
        main(*sys.argv[2:])
    else:
        sys.exit(__doc__)
