"""`python -m lab status`: what the lab has right now."""

import json

from lab import MIRROR_CONTAINER, NETWORK, LabError, repo
from lab.hosts import INVENTORY, foreign_hosts, host_name, lab_hosts
from lab.images import RECIPES, image_recipe_label
from lab.mirror import mirror_dir
from lab.serve import MIRROR_URL, container_ip, find


def show(out=print):
    from lab import engine

    if not engine.docker_answers():
        out("engine:  not running (run `python -m lab docker`)")
        client = None
    else:
        client = engine.client()
        out(f"engine:  docker {client.version().get('Version', '?')}")
    for recipe in RECIPES.values():
        if client is None:
            state = "unknown"
        else:
            label = image_recipe_label(client, recipe.tag)
            state = "missing" if label is None else ("ok" if label == recipe.digest() else "outdated")
            if label is None and recipe.on_demand:
                state = f"not built (on demand: python -m lab images {recipe.name})"
        out(f"image:   {recipe.tag:28s} {state}")
    for manifest in sorted(mirror_dir().glob("*/redist/redistrib_*.json")):
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"))
            comps = [k for k, v in doc.items() if isinstance(v, dict)]
        except ValueError:
            comps = ["unreadable"]
        out(f"mirror:  {manifest.relative_to(mirror_dir())}  ({', '.join(comps)})")
    if not any(mirror_dir().glob("*/redist/redistrib_*.json")):
        out("mirror:  not built (run `python -m lab mirror build`)")
    _repo_line(out)
    if client is not None:
        server = find(client, MIRROR_CONTAINER)
        if server is None:
            out("server:  not running (run `python -m lab mirror serve`)")
        else:
            ip = container_ip(server)
            out(f"server:  {MIRROR_CONTAINER} {server.status}, {MIRROR_URL} on {NETWORK} ({ip})")
        _hosts_lines(client, out)


def _hosts_lines(client, out):
    """This lab's hosts, then how many belong to other checkouts' labs (never listed in this inventory)."""
    found = lab_hosts(client)
    out(f"hosts:   {len(found)}" + (f" (inventory {INVENTORY})" if INVENTORY.exists() else ""))
    for container in found:
        out(
            f"         {host_name(container):24s} {container.status:8s} {container_ip(container):15s} "
            f"(container {container.name})"
        )
    others = foreign_hosts(client)
    if others:
        out(
            f"other:   {len(others)} lab host(s) of other checkouts (not in this inventory, "
            f"not removed by `hosts down` here): {', '.join(c.name for c in others[:5])}"
            + (" ..." if len(others) > 5 else "")
        )


def _repo_line(out):
    count, fingerprint = repo.summary()
    if not count:
        out("repo:    not built (run `python -m lab repo build`)")
        return
    where = f"{repo.repos_dir()}/{{{','.join(repo.REPO_DIRS)}}}/x86_64"
    out(f"repo:    {where}: {count} packages, key {fingerprint}")


__all__ = ["show", "LabError"]
