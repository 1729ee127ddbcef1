"""The lab network (docker `internal`: no route out) and the mirror server on it."""

import hashlib
import json
import os
import time
import urllib.request

from lab import LABEL, MIRROR_CONTAINER, NETWORK, LabError
from lab.mirror import mirror_dir

SERVER_IMAGE = "gpufleet/debian12"
MIRROR_URL = f"http://{MIRROR_CONTAINER}/"


def ensure_network(client, log=print):
    import docker

    try:
        net = client.networks.get(NETWORK)
    except docker.errors.NotFound:
        net = client.networks.create(NETWORK, driver="bridge", internal=True, labels={LABEL: "network"})
        log(f"network: created {NETWORK} (internal: no route out)")
        return net
    if not net.attrs.get("Internal"):
        raise LabError(
            f"docker network {NETWORK} exists but is not internal: remove it "
            f"(`docker network rm {NETWORK}` after `python -m lab down`), then rerun"
        )
    return net


def _server_config():
    return {
        "image": SERVER_IMAGE,
        "command": ["python3", "-m", "http.server", "80", "--directory", "/srv/mirror"],
        "volumes": {str(mirror_dir()): {"bind": "/srv/mirror", "mode": "ro"}},
    }


def _config_hash(cfg):
    """What the server runs; a rebuilt base image alone does not restart a running server.

    The mirror directory's identity (device and inode) is part of it: a directory removed and made again
    at the same path (a new clone in the same folder) leaves a running container serving the old, deleted
    one, so the server must be started again.
    """
    ident = {}
    for host_path in cfg["volumes"]:
        st = os.stat(host_path)
        ident[host_path] = [st.st_dev, st.st_ino]
    payload = json.dumps({"cfg": cfg, "ident": ident}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def find(client, name):
    import docker

    try:
        return client.containers.get(name)
    except docker.errors.NotFound:
        return None


def container_ip(container):
    nets = container.attrs.get("NetworkSettings", {}).get("Networks", {})
    return (nets.get(NETWORK) or {}).get("IPAddress", "")


def serve(client, log=print):
    """Run (or keep) the gpufleet-mirror container; returns its IP on the lab network."""
    import docker

    if not (mirror_dir() / "cuda").is_dir() and not (mirror_dir() / "cudnn").is_dir():
        raise LabError("the mirror is not built: run `python -m lab mirror build` first")
    try:
        client.images.get(SERVER_IMAGE)
    except docker.errors.ImageNotFound as exc:
        raise LabError(f"image {SERVER_IMAGE} missing: run `python -m lab images debian12` first") from exc
    ensure_network(client, log)
    cfg = _server_config()
    digest = _config_hash(cfg)
    current = find(client, MIRROR_CONTAINER)
    if current is not None:
        if current.labels.get("gpufleet.config") == digest and current.status == "running":
            log(f"mirror: server {MIRROR_CONTAINER} already running")
            return _wait(current, log)
        current.remove(force=True)
    container = client.containers.run(
        cfg["image"],
        cfg["command"],
        name=MIRROR_CONTAINER,
        hostname=MIRROR_CONTAINER,
        detach=True,
        volumes=cfg["volumes"],
        network=NETWORK,
        restart_policy={"Name": "unless-stopped"},
        labels={LABEL: "mirror", "gpufleet.config": digest},
        read_only=True,
    )
    log(f"mirror: server {MIRROR_CONTAINER} started ({MIRROR_URL} on network {NETWORK})")
    return _wait(container, log)


def _wait(container, log, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        container.reload()
        ip = container_ip(container)
        if ip:
            try:
                with urllib.request.urlopen(f"http://{ip}/", timeout=2) as resp:
                    if resp.status == 200:
                        return ip
            except OSError:
                pass
        time.sleep(0.5)
    raise LabError(f"mirror server did not answer within {timeout}s: see `docker logs {MIRROR_CONTAINER}`")


def stop(client, log=print):
    current = find(client, MIRROR_CONTAINER)
    if current is not None:
        current.remove(force=True)
        log(f"mirror: server {MIRROR_CONTAINER} removed")
