#!/usr/bin/env python3
"""How this host's NVIDIA GPUs go into a container: the mode and the docker options.

Used by molecule/gpu (create.yml) and scripts/molecule_gpu_or_skip.sh; handy by hand too:

    scripts/gpu_env.py check            # one line; exit 0 usable, 3 no GPU, 2 cannot pass it through
    scripts/gpu_env.py plan --cli       # the `docker run` arguments, shell-quoted
    scripts/gpu_env.py plan --json [--ephemeral-dir DIR]   # options for community.docker.docker_container
    scripts/gpu_env.py observe          # what was seen (JSON)

The mode comes from --mode or GPUFLEET_GPU_MODE (auto|toolkit|cdi|devices; default auto).
The decisions live in lab/gpu_passthrough.py (stdlib only, unit-tested).
"""

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXIT_OK, EXIT_ERROR, EXIT_NO_GPU = 0, 2, 3


def _load_planner():
    path = ROOT / "lab" / "gpu_passthrough.py"
    spec = importlib.util.spec_from_file_location("gpufleet_gpu_passthrough", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gp = _load_planner()


def _run(cmd, timeout=30):
    env = dict(os.environ, LC_ALL="C", LANG="C")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def docker_info_text():
    docker = shutil.which("docker")
    if not docker:
        return None
    return _run([docker, "info", "--format", "{{json .}}"])


def ldconfig_text():
    for candidate in ("/sbin/ldconfig", "/usr/sbin/ldconfig", shutil.which("ldconfig")):
        if candidate and os.path.exists(candidate):
            return _run([candidate, "-p"])
    return None


def gather(root):
    return gp.observe(
        root, docker_info_text() if root == "/" else None, ldconfig_text() if root == "/" else None
    )


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpu_env.py", description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", choices=["check", "plan", "observe"])
    parser.add_argument(
        "--mode", default=os.environ.get(gp.MODE_VARIABLE, "auto"), help="auto|toolkit|cdi|devices"
    )
    parser.add_argument(
        "--root",
        default=os.environ.get("GPUFLEET_GPU_ROOT", "/"),
        help="filesystem to observe (default $GPUFLEET_GPU_ROOT or /; a fake tree rehearses the scenario)",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="plan as JSON (default for plan)")
    out.add_argument("--cli", action="store_true", help="plan as `docker run` arguments")
    parser.add_argument(
        "--ephemeral-dir", help="write the ld.so.conf.d file here and mount it (mode devices)"
    )
    args = parser.parse_args(argv)

    obs = gather(args.root)
    if args.command == "observe":
        print(json.dumps(obs, indent=2, sort_keys=True))
        return EXIT_OK
    conf_path = None
    if args.ephemeral_dir:
        conf_path = os.path.join(os.path.abspath(args.ephemeral_dir), "gpufleet-nvidia-driver.conf")
    try:
        result = gp.plan(obs, args.mode, ld_so_conf_source=conf_path)
    except gp.NoGpuError as exc:
        print(str(exc))
        return EXIT_NO_GPU
    except gp.GpuPassthroughError as exc:
        print(str(exc))
        return EXIT_ERROR
    result["summary"] = gp.summary(result, obs)
    if conf_path and result["files"]:
        os.makedirs(os.path.dirname(conf_path), exist_ok=True)
        tmp = conf_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(result["files"][gp.LD_SO_CONF])
        os.replace(tmp, conf_path)
    if args.command == "check":
        print(result["summary"])
    elif args.cli:
        print(shlex.join(result["cli"]))
    else:
        print(json.dumps(result, indent=2, sort_keys=True))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
