"""Lab hosts: systemd containers with sshd on the lab network, and an inventory for them."""

import hashlib
import io
import os
import shutil
import socket
import subprocess
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor

from lab import LABEL, NETWORK, STATE, LabError, engine
from lab.images import SYSTEMD_RUN, resolve
from lab.serve import MIRROR_URL, container_ip, ensure_network

SSH_DIR = STATE / "ssh"
KEY = SSH_DIR / "id_ed25519"
INVENTORY = STATE / "inventory.yml"
DEFAULT_IMAGE = "gpufleet/debian12-systemd"
DEFAULT_PREFIX = "gpufleet-host"
MAX_HOSTS = 200
# every host carries the lab directory that made it: a checkout only sees, reuses and removes its own
LAB_DIR_LABEL = "gpufleet.lab_dir"
HOST_LABEL = "gpufleet.host"
SSH_OPTS = [
    "-o", "StrictHostKeyChecking=no",
    "-o", "UserKnownHostsFile=/dev/null",
    "-o", "LogLevel=ERROR",
    "-o", "BatchMode=yes",
    "-o", "ConnectTimeout=5",
]  # fmt: skip


def validate(count, image, prefix):
    if not isinstance(count, int) or not 1 <= count <= MAX_HOSTS:
        raise LabError(f"--count {count!r}: give a number of hosts from 1 to {MAX_HOSTS}")
    recipe = resolve([image])[0]
    if not recipe.systemd:
        raise LabError(f"--image {image!r} has no systemd/sshd: choose one ending in -systemd")
    if not prefix or not all(c.isalnum() or c == "-" for c in prefix) or not prefix[0].isalpha():
        raise LabError(f"--prefix {prefix!r}: use letters, digits and '-', starting with a letter")
    return recipe


def ensure_key(log=print):
    if KEY.exists() and KEY.with_suffix(".pub").exists():
        return KEY
    if not shutil.which("ssh-keygen"):
        raise LabError("ssh-keygen not found: run `apt-get install openssh-client`, then rerun", 2)
    SSH_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(SSH_DIR, 0o700)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpufleet-lab", "-f", str(KEY)], check=True
    )
    log(f"hosts: lab SSH key {KEY}")
    return KEY


def _authorized_keys_tar(pubkey):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        ti = tarfile.TarInfo(".ssh")
        ti.type, ti.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(ti)
        ti = tarfile.TarInfo(".ssh/authorized_keys")
        ti.mode, ti.size = 0o600, len(pubkey)
        tar.addfile(ti, io.BytesIO(pubkey))
    return buf.getvalue()


def names(prefix, count):
    width = max(2, len(str(count)))
    return [f"{prefix}-{i:0{width}d}" for i in range(1, count + 1)]


def lab_tag(lab_dir=None):
    """8 hex digits naming one lab directory (docker container names are global to the machine)."""
    return hashlib.sha256(str(lab_dir or STATE).encode()).hexdigest()[:8]


def container_name(name, lab_dir=None):
    """The container of inventory host ``name`` of this lab: ``<name>.<lab tag>`` (unique per checkout)."""
    return f"{name}.{lab_tag(lab_dir)}"


def host_name(container):
    """The inventory name of a lab host container (its hostname label; older hosts: the container name)."""
    return container.labels.get(HOST_LABEL) or container.name


def owned(labels, lab_dir=None, prefix=None):
    """True when a container with these labels is a host of the lab at ``lab_dir`` (and of ``prefix``)."""
    if labels.get(LABEL) != "host" or labels.get(LAB_DIR_LABEL) != str(lab_dir or STATE):
        return False
    return not prefix or labels.get("gpufleet.prefix") == prefix


def lab_hosts(client, prefix=None, lab_dir=None):
    """The host containers of this lab (this checkout's ``.lab``), never those of another checkout."""
    lab_dir = lab_dir or STATE
    found = client.containers.list(all=True, filters={"label": f"{LAB_DIR_LABEL}={lab_dir}"})
    return sorted((c for c in found if owned(c.labels, lab_dir, prefix)), key=host_name)


def foreign_hosts(client, lab_dir=None):
    """Lab host containers that belong to another lab directory (or to none: made before the label)."""
    mine = str(lab_dir or STATE)
    found = client.containers.list(all=True, filters={"label": f"{LABEL}=host"})
    return sorted((c for c in found if c.labels.get(LAB_DIR_LABEL) != mine), key=lambda c: c.name)


def up(client, count, image=DEFAULT_IMAGE, prefix=DEFAULT_PREFIX, log=print):
    """Start `count` hosts (keeping running ones), remove extra ones, write the inventory."""
    recipe = validate(count, image, prefix)
    import docker

    try:
        client.images.get(recipe.tag)
    except docker.errors.ImageNotFound as exc:
        raise LabError(f"image {recipe.tag} missing: run `python -m lab images {recipe.name}` first") from exc
    engine.ensure_inotify(log)
    ensure_network(client, log)
    key = ensure_key(log)
    pub = key.with_suffix(".pub").read_bytes()
    wanted = names(prefix, count)
    existing = {host_name(c): c for c in lab_hosts(client, prefix)}
    for name, container in existing.items():
        if name not in wanted or container.labels.get("gpufleet.image") != recipe.tag:
            container.remove(force=True)
    start = time.monotonic()

    def start_one(name):
        current = existing.get(name)
        if current is not None and current.labels.get("gpufleet.image") == recipe.tag:
            current.reload()
            if current.status != "running":
                current.start()
            return name
        container = client.containers.create(
            recipe.tag,
            SYSTEMD_RUN["command"],
            name=container_name(name),
            hostname=name,
            detach=True,
            network=NETWORK,
            tmpfs=SYSTEMD_RUN["tmpfs"],
            volumes=SYSTEMD_RUN["volumes"],
            cgroupns=SYSTEMD_RUN["cgroupns"],
            stop_signal="SIGRTMIN+3",
            labels=host_labels(name, prefix, recipe.tag),
        )
        container.put_archive("/root", _authorized_keys_tar(pub))
        container.start()
        return name

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(start_one, wanted))
    hosts = {host_name(c): c for c in lab_hosts(client, prefix)}
    ips = {}
    for name in wanted:
        hosts[name].reload()
        ips[name] = container_ip(hosts[name])
    # one deadline for all: booting N systemd containers on a small machine takes a while
    budget = 60 + 3 * count
    deadline = time.monotonic() + budget
    with ThreadPoolExecutor(max_workers=8) as pool:
        oks = pool.map(lambda n: wait_ssh(ips[n], key, deadline), wanted)
        bad = [n for n, ok in zip(wanted, oks) if not ok]
    refresh_inventory(client, key)
    if bad:
        raise LabError(
            f"no SSH to {', '.join(bad)} within {budget}s (machine busy?): rerun the same command, "
            f"or see `docker exec {container_name(bad[0])} journalctl -u ssh`"
        )
    log(f"hosts: {count} up and reachable over SSH in {time.monotonic() - start:.0f}s; inventory {INVENTORY}")
    return ips


def host_labels(name, prefix, image, lab_dir=None):
    return {
        LABEL: "host",
        LAB_DIR_LABEL: str(lab_dir or STATE),
        HOST_LABEL: name,
        "gpufleet.prefix": prefix,
        "gpufleet.image": image,
    }


def wait_ssh(ip, key, deadline):
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((ip, 22), timeout=2):
                pass
        except OSError:
            time.sleep(0.5)
            continue
        res = subprocess.run(
            ["ssh", *SSH_OPTS, "-i", str(key), f"root@{ip}", "true"], capture_output=True, check=False
        )
        if res.returncode == 0:
            return True
        time.sleep(0.5)
    return False


def group_name(prefix):
    return prefix.replace("-", "_")


def inventory_text(groups, key):
    """The inventory of this lab's hosts: group lab_hosts, one child group per prefix.

    groups: {prefix: {name: ip}}.
    """
    lines = [
        "# Written by `python -m lab hosts up`: the lab hosts (containers on the internal lab network).",
        "all:",
        "  children:",
        "    lab_hosts:",
        "      children:",
    ]
    for prefix in sorted(groups):
        lines += [f"        {group_name(prefix)}:", "          hosts:"]
        lines += [
            f"            {name}:\n              ansible_host: {ip}"
            for name, ip in sorted(groups[prefix].items())
        ]
    lines += inventory_vars(6, key)
    lines.append(f"        lab_mirror_url: {MIRROR_URL.rstrip('/')}")
    return "\n".join(lines) + "\n"


def inventory_vars(indent, key, ssh_args=()):
    """The group vars of a lab inventory (lab hosts, VM guests): root over SSH with the lab's key, host keys
    unchecked (each rebuild makes new ones); ``ssh_args``: more lines of ansible_ssh_common_args."""
    pad = " " * indent
    return [
        f"{pad}vars:",
        f"{pad}  ansible_user: root",
        f"{pad}  ansible_ssh_private_key_file: {key}",
        f"{pad}  ansible_ssh_common_args: >-",
        f"{pad}    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        *(f"{pad}    {line}" for line in ssh_args),
        f"{pad}  ansible_python_interpreter: /usr/bin/python3",
    ]


def refresh_inventory(client, key=None):
    """Rewrite .lab/inventory.yml from this lab's hosts that exist now (all prefixes, no other lab's)."""
    key = key or KEY
    groups = {}
    for container in lab_hosts(client):
        prefix = container.labels.get("gpufleet.prefix", DEFAULT_PREFIX)
        groups.setdefault(prefix, {})[host_name(container)] = container_ip(container)
    if not groups:
        if INVENTORY.exists():
            INVENTORY.unlink()
        return None
    write_inventory(groups, key)
    return INVENTORY


def write_inventory(groups, key):
    INVENTORY.parent.mkdir(parents=True, exist_ok=True)
    tmp = INVENTORY.with_name(INVENTORY.name + ".part")
    tmp.write_text(inventory_text(groups, key), encoding="utf-8")
    os.replace(tmp, INVENTORY)


def down(client, prefix=None, log=print):
    found = lab_hosts(client, prefix)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda c: c.remove(force=True), found))
    refresh_inventory(client)
    log(f"hosts: removed {len(found)}")
    return len(found)
